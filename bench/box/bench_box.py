"""The box's costs by tree size, in one run (as root on Linux): what a contained run costs
beyond an uncontained one, on the overlay and on the copy fallback, beside the bare system
operations of the same tree.

    sudo .venv/bin/python bench/box/bench_box.py [--sizes 1000,20000,100000,300000] [--runs 3]

For each size (files of about 5 KB in directories of 200, committed), the stand-in agent makes
one edit and one new file:

1. ``run``: ``cursor-agent-action run`` with ``--isolation none``, contained on the overlay,
   and contained on the copy (``CURSOR_AGENT_ACTION_BOX_STORAGE=copy``); the median of
   ``--runs`` each (1 from 100,000 files: the shared machine). The difference to ``none`` is
   the box's overhead.
2. ``RAM``: the largest rise of the machine's ``Shmem`` (tmpfs pages) while the run ran.
3. ``helper RSS``: the helper's peak resident set (``VmHWM``), read until it exits.
4. The bare operations: an overlay mount of the tree (no id map) and ``git status`` in it, and
   ``cp -a`` of the tree into a tmpfs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

AGENT = """#!/bin/sh
for arg in "$@"; do [ "$arg" = --help ] && { echo "  --trust"; exit 0; }; done
echo edit >> d000/f0000000.txt; echo new > brand-new.txt
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s"}'
"""
FILE_BYTES = 5000
BENCH_USER = "caa-bench-agent"


def make_tree(root: Path, files: int) -> None:
    chunk = os.urandom(FILE_BYTES // 2).hex().encode()[:FILE_BYTES]
    for index in range(files):
        directory = root / f"d{index // 200:03d}"
        if index % 200 == 0:
            directory.mkdir()
        (directory / f"f{index:07d}.txt").write_bytes(chunk)
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "bench"], cwd=root, check=True)


def _shmem_kib() -> int:
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("Shmem:"):
                return int(line.split()[1])
    return 0


def run_once(repo: Path, base: Path, isolation: str, storage: str) -> dict[str, float]:
    """One run of the helper; its time, the peak rise of Shmem, the helper's peak RSS."""
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=repo, check=True)
    subprocess.run(["git", "clean", "-qfd"], cwd=repo, check=True)
    env = {**os.environ, "RUNNER_TEMP": str(base / "rt"),
           "CURSOR_AGENT_ACTION_AGENT_USER": BENCH_USER,
           "CURSOR_AGENT_ACTION_BOX_STORAGE": storage}
    (base / "summary.md").unlink(missing_ok=True)  # the helper appends to it
    shmem0 = _shmem_kib()
    peak = {"shmem": 0, "rss": 0}
    started = time.perf_counter()
    helper = subprocess.Popen(
        [sys.executable, "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
         str(base / "agent.sh"), "--working-directory", str(repo), "--prompt", "x",
         "--isolation", isolation, "--preset", "edit", "--output-file", str(base / "out.txt"),
         "--summary-file", str(base / "summary.md")],
        env=env, stdout=(base / "log.txt").open("w"), cwd=base)  # fmt: skip
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak["shmem"] = max(peak["shmem"], _shmem_kib() - shmem0)
            try:
                text = Path(f"/proc/{helper.pid}/status").read_text()
                peak["rss"] = max(peak["rss"], int(text.split("VmHWM:")[1].split()[0]))
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    code = helper.wait(timeout=1800)
    seconds = time.perf_counter() - started
    done.set()
    watcher.join()
    if code != 0:
        raise SystemExit(f"the {isolation}/{storage} run failed ({code})")
    summary = (base / "summary.md").read_text()
    if isolation == "auto" and ("the tree: an id-mapped overlay" in summary) != (
            storage == "auto"):
        warned = [line for line in (base / "log.txt").read_text().splitlines()
                  if line.startswith("::warning")]
        raise SystemExit(f"the {storage} run did not use the storage asked for: {warned}")
    return {"s": seconds, "ram_mib": peak["shmem"] / 1024, "rss_mib": peak["rss"] / 1024}


def bare_overlay_status(repo: Path, base: Path) -> float:
    area = base / "bare"
    shutil.rmtree(area, ignore_errors=True)
    area.mkdir()
    script = (f"mount -t tmpfs tmpfs {area} && mkdir {area}/u {area}/w {area}/m && "
              f"mount -t overlay overlay -o lowerdir={repo},upperdir={area}/u,workdir={area}/w "
              f"{area}/m && git -C {area}/m status --porcelain >/dev/null")
    started = time.perf_counter()
    subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], check=True)
    return time.perf_counter() - started


def cp_a(repo: Path) -> float:
    target = Path(tempfile.mkdtemp(prefix="bench-box-cp-", dir="/dev/shm"))
    try:
        started = time.perf_counter()
        subprocess.run(["cp", "-a", f"{repo}/.", str(target)], check=True)
        return time.perf_counter() - started
    finally:
        shutil.rmtree(target, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000,100000,300000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run it as root: the box needs root")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-box-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        (base / "agent.sh").write_text(AGENT)
        (base / "agent.sh").chmod(0o755)
        for files in (int(size) for size in args.sizes.split(",")):
            repo = base / f"tree-{files}"
            repo.mkdir()
            made = time.perf_counter()
            make_tree(repo, files)
            runs = args.runs if files < 100_000 else 1
            row: dict[str, float] = {"files": files, "made_s": time.perf_counter() - made}
            for name, isolation, storage in (("none", "none", "auto"),
                                             ("overlay", "auto", "auto"),
                                             ("copy", "auto", "copy")):
                found = [run_once(repo, base, isolation, storage) for _ in range(runs)]
                for key in ("s", "ram_mib", "rss_mib"):
                    row[f"{name}_{key}"] = statistics.median(item[key] for item in found)
            row["bare_overlay_status_s"] = bare_overlay_status(repo, base)
            row["cp_a_s"] = cp_a(repo)
            rows.append(row)
            print(json.dumps({key: round(value, 3) for key, value in row.items()}), flush=True)
            shutil.rmtree(repo)
    subprocess.run(["userdel", BENCH_USER], check=False, capture_output=True)
    print("| files | overlay overhead | copy overhead | bare overlay + git status | cp -a | "
          "RAM overlay / copy | helper RSS overlay / copy |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['files']:,} | {row['overlay_s'] - row['none_s']:+.2f} s | "
              f"{row['copy_s'] - row['none_s']:+.2f} s | {row['bare_overlay_status_s']:.2f} s | "
              f"{row['cp_a_s']:.2f} s | {row['overlay_ram_mib']:.0f} / {row['copy_ram_mib']:.0f}"
              f" MiB | {row['overlay_rss_mib']:.0f} / {row['copy_rss_mib']:.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
