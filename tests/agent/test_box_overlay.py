"""The box's tree at monorepo scale (issue 34): an id-mapped overlay over the real tree, the
patch made from what the agent wrote, the copy as the fallback; and the overlay's own attacks.

The end-to-end tests run the real helper as root with a shell-script agent (tests.support.box);
the storage tests call the root side's :mod:`storage` in a mount namespace of their own, with
small caps, as the agent's user.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.box.upper import RealTree
from tests.support.box import Box
from tests.support.box import run as _run
from tests.support.boxstore import limits, run_in_store

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="the box runs as root on Linux (CI here is root)",
)

EDITS = ("echo changed >> README.md; echo new > src/new.txt; chmod +x src/app.py; "
         "mkdir -p docs/deep; echo d > docs/deep/d.md; mv src lib; rm -f gone.txt")


def _git(box: Box, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=box.workspace, check=True, capture_output=True,
                          text=True).stdout


def _commit_file(box: Box, name: str, text: str) -> None:
    (box.workspace / name).write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", name], cwd=box.workspace, check=True)
    subprocess.run([*git, "commit", "-qm", name], cwd=box.workspace, check=True)


def _expected_status() -> set[str]:
    return {" M README.md", " D gone.txt", " D src/app.py", "?? docs/", "?? lib/"}


@pytest.mark.parametrize("storage", ["auto", "copy"])
def test_the_agent_s_changes_come_back_from_the_overlay_and_from_the_copy(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, storage: str,
) -> None:
    """Edits, a new file, a mode change, a new directory, a directory renamed (the overlay
    refuses the rename: mv copies and deletes), a deletion: the same patch either way, and the
    summary says which storage held the tree and why."""
    _commit_file(box, "gone.txt", "bye\n")
    monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_STORAGE", storage)  # whatever the suite forces
    out = _run(box, capsys, EDITS, "--preset", "edit")
    assert out["conclusion"] == "success", out["log"] + out["summary"]
    status = set(_git(box, "status", "--porcelain").splitlines())
    assert status == _expected_status()
    assert (box.workspace / "lib" / "app.py").stat().st_mode & 0o111
    assert (box.workspace / "README.md").read_text() == "# demo\nchanged\n"
    assert (box.workspace / "docs" / "deep" / "d.md").read_text() == "d\n"
    if storage == "copy":
        assert "The tree: a copy of the repository" in out["summary"]
        assert "the copy was asked for" in out["summary"]
    else:
        assert "The tree: an id-mapped overlay over the repository" in out["summary"]


# -- the storage on its own: the overlay's attacks, with small caps ------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a file, a directory, a link to a directory outside it."""
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    (path / "README.md").write_text("# demo\n")
    (path / "src" / "app.py").write_text("print('hi')\n")
    (path / "etc").symlink_to("/etc")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    subprocess.run([*git, "add", "."], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=path, check=True)
    return path


def _tree_state(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): (p.read_bytes() if p.is_file() and not p.is_symlink()
                                       else b"")
            for p in sorted(path.rglob("*")) if ".git" not in p.parts}


def test_the_overlay_is_used_and_the_real_tree_is_untouched_until_the_patch(
    repo: Path, tmp_path: Path,
) -> None:
    before = _tree_state(repo)
    ran = run_in_store(repo, tmp_path / "state", "echo more >> README.md; rm src/app.py; "
                       "echo n > new.txt; id -u; stat -c %u README.md")
    assert ran.storage == "overlay", ran.note
    uid, owner = ran.out.split()
    assert uid == owner  # the agent owns what it sees, as in the copy
    assert _tree_state(repo) == before
    assert "+more" in ran.patch
    assert "deleted file mode 100644" in ran.patch
    assert "new.txt" in ran.patch


def test_hand_made_whiteouts_and_opaque_marks_are_refused_or_never_read(
    repo: Path, tmp_path: Path,
) -> None:
    """The agent cannot make the kernel's marks (a character device 0/0, trusted.overlay.*
    xattrs); user.overlay.* xattrs it can set are not the overlay's (no userxattr) and root
    never reads them as marks: nothing is deleted. (Proved failing with the opaque mark read
    from user.overlay.opaque.)"""
    body = ("mknod README.md c 0 0 2>/dev/null; echo mknod=$?; "
            "python3 -c \"import os; os.setxattr('src', 'trusted.overlay.opaque', b'y')\" "
            "2>/dev/null; echo trusted=$?; "
            "python3 -c \"import os; os.setxattr('src', 'user.overlay.opaque', b'y'); "
            "os.setxattr('README.md', 'user.overlay.whiteout', b'y')\"; echo user=$?; "
            "touch src/other.txt")
    ran = run_in_store(repo, tmp_path / "state", body)
    assert "mknod=1" in ran.out
    assert "trusted=1" in ran.out
    assert "deleted" not in ran.patch, ran.patch
    assert "src/other.txt" in ran.patch


def test_a_linked_directory_the_agent_replaces_is_never_read_through_its_link(
    repo: Path, tmp_path: Path,
) -> None:
    """The real tree has ``etc -> /etc``; the agent deletes the link and makes ``etc/passwd``:
    root must not take /etc/passwd as the file's old content (it would be in the patch). The
    look-up itself is tested below (git's ignore check also refuses such a path)."""
    ran = run_in_store(repo, tmp_path / "state", "rm etc; mkdir etc; echo mine > etc/passwd")
    assert "root:" not in ran.patch
    # git's ignore check refuses a path beyond what HEAD has as a link: the patch fails closed
    # (as with the copy); were it made, etc/passwd would be a new file.
    assert ran.status["patch_error"] or "new file mode 100644" in ran.patch


def test_hard_links_across_layers_and_out_of_the_tree(repo: Path, tmp_path: Path) -> None:
    """A hard link to a file of the lower layer copies it up first (both names are the
    agent's); one to a file outside the tree fails."""
    body = ("ln README.md src/hard && echo more >> src/hard; "
            "ln /etc/hostname host 2>/dev/null; echo outside=$?")
    ran = run_in_store(repo, tmp_path / "state", body)
    assert "outside=1" in ran.out
    assert ran.patch.count("+more") == 2
    assert (repo / "README.md").read_text() == "# demo\n"


def test_writes_through_git_paths_fail(repo: Path, tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in (repo / ".git").rglob("*") if p.is_file()}
    body = ("echo x > .git/hooks/pre-commit; echo a=$?; echo x >> .git/config; echo b=$?; "
            "rm -rf .git 2>/dev/null; echo c=$?; mv .git moved 2>/dev/null; echo d=$?")
    ran = run_in_store(repo, tmp_path / "state", body)
    assert all(f"{step}=0" not in ran.out for step in "abcd"), ran.out
    assert ran.status["changed"] == 0
    assert {p: p.read_bytes() for p in (repo / ".git").rglob("*") if p.is_file()} == before


def test_fifos_and_devices_are_never_opened(repo: Path, tmp_path: Path) -> None:
    """A fifo of the real tree is not in the box (as in the copy); the agent cannot make a
    device; a fifo it makes is skipped, never opened (the finish would hang on it)."""
    os.mkfifo(repo / "runner-fifo")
    body = ("[ -e runner-fifo ] && echo fifo-seen; mknod dev c 1 3 2>/dev/null; echo dev=$?; "
            "mkfifo mine")
    ran = run_in_store(repo, tmp_path / "state", body)
    assert "fifo-seen" not in ran.out
    assert "dev=1" in ran.out
    assert "mine" in str(ran.status["special"])
    assert "runner-fifo" not in ran.patch


def test_very_many_small_files_stop_at_the_box_s_file_cap(repo: Path, tmp_path: Path) -> None:
    body = ("i=0; while [ $i -lt 3000 ]; do true > f$i 2>/dev/null || break; i=$((i+1)); "
            "done; echo $i")
    ran = run_in_store(repo, tmp_path / "state", body, caps=limits(max_files=1000))
    assert int(ran.out.strip()) < 1000
    assert ran.status["patch_error"] == "", ran.status


def test_a_file_grown_past_the_tmpfs_fails_with_no_space(repo: Path, tmp_path: Path) -> None:
    body = "head -c 20000000 /dev/zero > big 2>/dev/null; echo wrote=$?; ls -s big"
    ran = run_in_store(repo, tmp_path / "state", body, caps=limits(write_bytes=8 << 20))
    assert "wrote=0" not in ran.out
    assert ran.status["patch_error"] == "", ran.status
    assert not (repo / "big").exists()


@pytest.mark.parametrize("storage", ["auto", "copy"])
def test_a_tree_over_the_cap_is_refused_at_once_naming_the_cap(
    repo: Path, tmp_path: Path, storage: str,
) -> None:
    for index in range(30):
        (repo / "many" / str(index)).mkdir(parents=True)
        for name in range(100):
            (repo / "many" / str(index) / str(name)).write_text("x")
    ran = run_in_store(repo, tmp_path / "state", "true", storage=storage,
                       caps=limits(max_files=2000))
    assert "more than 2,000 files and directories" in ran.refused
    assert ran.seconds < 1


def test_the_copy_s_byte_cap_is_checked_before_anything_is_copied(
    repo: Path, tmp_path: Path,
) -> None:
    for index in range(8):
        (repo / f"blob{index}").write_bytes(b"x" * (1 << 20))
    ran = run_in_store(repo, tmp_path / "state", "true", storage="copy",
                       caps=limits(max_total_bytes=4 << 20, max_file_bytes=2 << 20))
    assert "more than 4 MiB of files" in ran.refused
    assert ran.seconds < 1


def test_root_finds_real_entries_without_following_a_link_of_the_real_tree(repo: Path) -> None:
    """Root's look-up of the real entry at a path the agent wrote: ``etc`` is a link to /etc
    in the real tree, so the real tree has no ``etc/passwd`` (a plain lstat would have found
    root's /etc/passwd, as its old content in the patch: proved failing without the check)."""
    real = RealTree(repo)
    assert real.lstat("etc/passwd") is None
    assert real.lstat("etc/missing/deeper") is None
    info = real.lstat("etc")
    assert info is not None
    assert stat.S_ISLNK(info.st_mode)
    assert real.lstat("src/app.py") is not None
    assert real.files_below("src") == ["src/app.py"]


@pytest.mark.parametrize("storage", ["auto", "copy"])
def test_a_contained_run_hashes_nothing_of_the_tree_in_the_helper(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, storage: str,
) -> None:
    """The helper neither hashes the whole tree before a contained run nor walks it after: the
    box's patch is made against the tree as it stands, and the run's changes are the paths the
    box's patches touched, from their state before (a change made before the run stays the
    base, never the agent's). Failed before: the helper's baseline hashed every file."""
    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("the helper read the whole tree")

    monkeypatch.setattr("cursor_agent_action.changeset.baseline", refused)
    monkeypatch.setattr("cursor_agent_action.changeset.compute", refused)
    monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_STORAGE", storage)
    (box.workspace / "README.md").write_text("# demo\nbefore the run\n")
    (box.workspace / "notes.txt").write_text("untracked, before the run\n")
    out = _run(box, capsys, "echo by the agent >> README.md; echo n > src/new.txt",
               "--preset", "edit")
    assert out["conclusion"] == "success", out["log"] + out["summary"]
    assert json.loads(out["files-changed"]) == ["README.md", "src/new.txt"]
    patch = Path(out["patch-file"]).read_text()
    assert "+by the agent" in patch
    assert "+before the run" not in patch
    assert "notes.txt" not in patch
    assert (box.workspace / "README.md").read_text() == "# demo\nbefore the run\nby the agent\n"
