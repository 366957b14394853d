"""The agent's private tree without a box, candidate by candidate, in one run (as root on Linux):
what each costs to make and to walk once, as a ratio to the box's id-less overlay.

    sudo .venv/bin/python bench/box/bench_copy.py [--sizes 20000,100000] [--rounds 2]

For each size (the trees of bench_box.py: files of about 5 KB in directories of 200), each
candidate makes the agent's view of the tree and walks it once (``du -s``: an ``lstat`` of every
entry, as a search by the agent or the patch's scan does), timed in wall-clock and processor
seconds (its own and its children's); the view is removed untimed. Rounds interleave the
candidates (the machine is shared: compare one round's figures with each other):

- ``overlay``: the box's storage, a kernel overlay with the tree as its lower layer (needs
  CAP_SYS_ADMIN or a user namespace: what the tiers without a box lack);
- ``fuse-overlayfs``: the same in user space, where the fuse-overlayfs program and ``/dev/fuse``
  are (mounting still needs CAP_SYS_ADMIN or the set-user-ID fusermount3 with a usable
  ``/dev/fuse``); skipped when it is not installed; its daemon's processor time is not counted;
- ``copy``: :func:`tree.copy_tree` to a directory on the tree's own disk (where the Landlock
  tiers put it);
- ``copy-tmpfs``: :func:`tree.copy_tree` to a tmpfs (the box's copy fallback);
- ``cp -a``: coreutils' copy to the same disk: the floor of any copy;
- ``in place``: a walk alone: what writing in place would cost if it could be made safe (it
  cannot: bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.support, bench
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_box import make_tree

from cursor_agent_action.agent.contain.box import tree

AGENT_UID = AGENT_GID = 64123  # owns the copies (no such user is needed to chown)
FUSE_OVERLAYFS = shutil.which("fuse-overlayfs") or ""
TMPFS = "/dev/shm"  # noqa: S108 - a tmpfs, as the box's copy fallback has


def _walk(view: Path) -> None:
    subprocess.run(["du", "-s", str(view)], check=True, capture_output=True)


def _overlay(repo: Path, area: Path, program: str) -> None:
    for name in ("u", "w", "m"):
        (area / name).mkdir()
    options = f"lowerdir={repo},upperdir={area}/u,workdir={area}/w"
    mount = (f"mount -t overlay overlay -o {options} {area}/m" if program == "kernel" else
             f"{program} -o {options} {area}/m")
    script = f"{mount} && du -s {area}/m >/dev/null; umount {area}/m"
    subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                   check=True)


def _copy(repo: Path, area: Path) -> None:
    (area / "tree").mkdir()
    tree.copy_tree(str(repo), str(area / "tree"), AGENT_UID, AGENT_GID,
                   max_file_bytes=1 << 30, max_total_bytes=1 << 40)
    _walk(area / "tree")


def _cp_a(repo: Path, area: Path) -> None:
    subprocess.run(["cp", "-a", f"{repo}/.", str(area / "tree")], check=True)
    _walk(area / "tree")


CANDIDATES: dict[str, tuple[str, Callable[[Path, Path], None]]] = {  # name: (where, how)
    "overlay": ("disk", lambda repo, area: _overlay(repo, area, "kernel")),
    "fuse-overlayfs": ("disk", lambda repo, area: _overlay(repo, area, FUSE_OVERLAYFS)),
    "copy": ("disk", _copy),
    "copy-tmpfs": ("tmpfs", _copy),
    "cp -a": ("disk", _cp_a),
    "in place": ("disk", lambda repo, area: _walk(repo)),
}


def _once(repo: Path, where: str, how: Callable[[Path, Path], None]) -> tuple[float, float]:
    area = Path(tempfile.mkdtemp(prefix="bench-copy-",
                                 dir=TMPFS if where == "tmpfs" else repo.parent))
    try:
        os.sync()  # what earlier candidates wrote is on disk before the clock starts
        cpu0, wall0 = os.times(), time.perf_counter()
        how(repo, area)
        wall, cpu1 = time.perf_counter() - wall0, os.times()
        cpu = (cpu1.user + cpu1.system + cpu1.children_user + cpu1.children_system
               - cpu0.user - cpu0.system - cpu0.children_user - cpu0.children_system)
        return wall, cpu
    finally:
        shutil.rmtree(area, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", default=tempfile.gettempdir(),
                        help="where the trees and the copies go (a disk)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run it as root: the overlay and the copies' owner need root")
    names = [name for name in CANDIDATES if name != "fuse-overlayfs" or FUSE_OVERLAYFS]
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-copy-", dir=args.dir) as tmp:
        for files in (int(size) for size in args.sizes.split(",")):
            repo = Path(tmp) / f"tree-{files}"
            repo.mkdir()
            make_tree(repo, files)
            found: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
            for _ in range(args.rounds):
                for name in names:
                    where, how = CANDIDATES[name]
                    found[name].append(_once(repo, where, how))
                    print(f"{files} {name}: {found[name][-1][0]:.2f} s wall, "
                          f"{found[name][-1][1]:.2f} s cpu", flush=True)
            walls = {name: statistics.median(w for w, _ in runs) for name, runs in found.items()}
            cpus = {name: statistics.median(c for _, c in runs) for name, runs in found.items()}
            rows.append((files, walls, cpus))
            shutil.rmtree(repo)
    print(f"load average at the end: {os.getloadavg()}")
    print("| files | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for files, walls, cpus in rows:
        base = walls["overlay"] or 1e-9
        print(f"| {files:,} | " + " | ".join(
            f"{walls[name]:.2f} s ({walls[name] / base:.1f}x; cpu {cpus[name]:.2f} s)"
            for name in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
