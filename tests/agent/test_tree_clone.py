"""The private copy of the tree (Landlock tiers, the box's copy fallback) clones files where the
file system shares blocks copy-on-write (``FICLONE``) and copies their data elsewhere; either
way the copy is the agent's own: a write to it never reaches the original.

The clone case runs on a btrfs image mounted in a mount namespace of the test's own (the loop
device is released when it exits); it needs root, ``unshare`` and ``mkfs.btrfs``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.box import tree

MKFS = shutil.which("mkfs.btrfs") or shutil.which("mkfs.btrfs", path="/usr/sbin:/sbin") or ""


def _tree(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("print('a')\n" * 100)
    (root / "README.md").write_text("# readme\n")
    (root / "empty").write_bytes(b"")


def _copy_and_write(source: Path, target: Path) -> dict[str, object]:
    target.mkdir()
    made = tree.copy_tree(str(source), str(target), os.getuid(), os.getgid(),
                          max_file_bytes=1 << 20, max_total_bytes=1 << 30)
    same = all((target / rel).read_bytes() == (source / rel).read_bytes()
               for rel in ("src/a.py", "README.md", "empty"))
    with (target / "src" / "a.py").open("r+b") as handle:  # in place, as an editor may
        handle.write(b"changed")
    return {"cloned": made.cloned, "files": made.files, "same": same,
            "original": (source / "src" / "a.py").read_text()[:10]}


def test_on_a_file_system_without_clones_the_data_is_copied(tmp_path: Path) -> None:
    _tree(tmp_path / "real")
    seen = _copy_and_write(tmp_path / "real", tmp_path / "copy")
    assert seen["files"] == 3
    assert seen["same"] is True
    assert seen["original"] == "print('a')"
    if subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True,
                      text=True, check=False).stdout.strip() in ("ext2/ext3", "tmpfs"):
        assert seen["cloned"] == 0


_IN_NAMESPACE = """
import json, sys
from pathlib import Path
sys.path[:0] = sys.argv[2:]
from tests.agent.test_tree_clone import _copy_and_write, _tree
where = Path(sys.argv[1])
_tree(where / "real")
print(json.dumps(_copy_and_write(where / "real", where / "copy")))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not MKFS or not shutil.which("unshare"),
                    reason="needs root, unshare and mkfs.btrfs (btrfs-progs)")
def test_on_btrfs_files_are_cloned_and_a_write_stays_in_the_copy(tmp_path: Path) -> None:
    image = tmp_path / "btrfs.img"
    with image.open("wb") as handle:
        handle.truncate(128 << 20)
    subprocess.run([MKFS, "-q", str(image)], check=True, capture_output=True, timeout=60)
    mounted = tmp_path / "mnt"
    mounted.mkdir()
    root = str(Path(__file__).resolve().parents[2])
    script = (f"mount -o loop {image} {mounted} && "
              f"{sys.executable} -I -c '{_IN_NAMESPACE}' {mounted} {root} "
              f"{os.path.dirname(tree.__file__).rsplit('/cursor_agent_action', 1)[0]}")
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"cloned": 2, "files": 3, "same": True, "original": "print('a')"}
