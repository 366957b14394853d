"""The box's costs, measured in one run (as root on Linux): the private copy of the working tree
and the whole contained run against an uncontained one.

    sudo .venv/bin/python bench/box/bench_box.py [--files 20000] [--megabytes 200]

1. The copy: ``box.tree.copy_tree`` of a generated work tree (``--files`` files in 200
   directories, ``--megabytes`` in all) into a tmpfs, as the box does, against ``cp -a`` of the
   same tree to the same tmpfs (the bare system copy). Best of 3 each. Target: <= 1 s.
2. The run: ``cursor-agent-action run`` with a stand-in agent that only prints init and result,
   contained (the box, its copy, namespaces, patch) against ``--isolation none``, on a small
   repository and on the generated one. Best of 3 each: the difference is the box's overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from cursor_agent_action.agent.box.tree import copy_tree  # noqa: E402

AGENT = """#!/bin/sh
for arg in "$@"; do [ "$arg" = --help ] && { echo "  --trust"; exit 0; }; done
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s"}'
"""


def best(times: int, action: Callable[[], object], reset: Callable[[], None]) -> float:
    found = []
    for _ in range(times):
        reset()
        started = time.perf_counter()
        action()
        found.append(time.perf_counter() - started)
    return min(found)


def make_tree(root: Path, files: int, total_bytes: int) -> None:
    size = total_bytes // files
    chunk = os.urandom(size)
    for index in range(files):
        directory = root / f"d{index % 200:03d}"
        directory.mkdir(exist_ok=True)
        (directory / f"f{index:05d}.txt").write_bytes(chunk)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], cwd=root, check=True)


def run_once(repo: Path, base: Path, isolation: str) -> float:
    env = {**os.environ, "RUNNER_TEMP": str(base / "rt"),
           "CURSOR_AGENT_ACTION_AGENT_USER": "caa-bench-agent"}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cursor_agent_action", "run", "--agent-bin",
                    str(base / "agent.sh"), "--working-directory", str(repo), "--prompt", "x",
                    "--isolation", isolation, "--output-file", str(base / "out.txt"),
                    "--summary-file", os.devnull], env=env, check=True,
                   stdout=subprocess.DEVNULL, cwd=base)  # fmt: skip
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--megabytes", type=int, default=200)
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run it as root: the box needs root")
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-box-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        big = base / "big"
        big.mkdir()
        make_tree(big, args.files, args.megabytes << 20)
        target = Path(tempfile.mkdtemp(prefix="bench-box-copy-", dir="/dev/shm"))
        try:
            def reset() -> None:
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir()

            figures["copy_tree_s"] = best(3, lambda: copy_tree(
                str(big), str(target), 65534, 65534, max_file_bytes=100 << 20,
                max_total_bytes=8 << 30), reset)
            figures["cp_a_s"] = best(3, lambda: subprocess.run(
                ["cp", "-a", f"{big}/.", str(target)], check=True), reset)
        finally:
            shutil.rmtree(target, ignore_errors=True)
        (base / "agent.sh").write_text(AGENT)
        (base / "agent.sh").chmod(0o755)
        small = base / "small"
        small.mkdir()
        make_tree(small, 20, 20_000)
        for name, repo in (("small", small), ("big", big)):
            for isolation in ("none", "auto"):
                figures[f"run_{name}_{isolation}_s"] = min(
                    run_once(repo, base, isolation) for _ in range(3))
    subprocess.run(["userdel", "caa-bench-agent"], check=False, capture_output=True)
    print(json.dumps({key: round(value, 3) for key, value in figures.items()}, indent=2))
    print(f"copy: {figures['copy_tree_s']:.2f} s for {args.files} files / {args.megabytes} MB "
          f"({figures['copy_tree_s'] / figures['cp_a_s']:.2f}x cp -a); box overhead per run: "
          f"small {figures['run_small_auto_s'] - figures['run_small_none_s']:+.2f} s, big "
          f"{figures['run_big_auto_s'] - figures['run_big_none_s']:+.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
