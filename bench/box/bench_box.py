"""The box's costs by tree size, in one run (as root on Linux): what a contained run costs
beyond an uncontained one, on the overlay and on the copy fallback, beside the bare system
operations of the same tree.

    sudo .venv/bin/python bench/box/bench_box.py [--sizes 1000,20000,100000,300000] [--runs 3]

For each size (files of about 5 KB in directories of 200, committed), the stand-in agent makes
one edit and one new file (``--preset read-only``: it reads one file and lists a directory,
and the Landlock tiers show it the checkout in place):

1. ``run``: ``cursor-agent-action run`` with ``--isolation none``, contained on the overlay,
   contained on the copy (``CURSOR_AGENT_ACTION_BOX_STORAGE=copy``), and the two tiers without
   a box: ``landlock`` (the helper as root without CAP_SYS_ADMIN, through ``capsh``: a container
   job), ``userns`` (the helper as an unprivileged user without sudo, from a venv of the system
   Python as the tests make it: the box in a user namespace, tier 1a) and ``runner`` (the same
   user with user namespaces turned off for the run: Landlock as that user, tier 1b, on a tree
   of the runner's own); the median of ``--runs`` interleaved rounds (1 from 300,000 files:
   the shared machine). The difference to ``none`` is the overhead.
2. ``RAM``: the largest rise of the machine's ``Shmem`` (tmpfs pages) while the run ran.
3. ``helper RSS``: the helper's peak resident set (``VmHWM``), read until it exits.
4. The bare operations: an overlay mount of the tree (no id map) and ``git status`` in it, and
   ``cp -a`` of the tree into a tmpfs.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.support
from tests.support.helper_venv import make_helper_venv
from tests.support.users import NO_USER_NAMESPACES

AGENT = """#!/bin/sh
for arg in "$@"; do [ "$arg" = --help ] && { echo "  --trust"; exit 0; }; done
{work}
echo '{"type":"system","subtype":"init","session_id":"s","model":"m"}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"s"}'
"""
WORK = {"edit": "echo edit >> d000/f0000000.txt; echo new > brand-new.txt",
        "read-only": "cat d000/f0000000.txt > /dev/null; ls d000 > /dev/null"}
"""What the stand-in agent does under each ``--preset``: one edit and one new file, or reads."""
FILE_BYTES = 5000
BENCH_USER = "caa-bench-agent"
RUNNER_USER = "caa-bench-runner"
SYSTEM_PYTHON = "/usr/bin/python3"
CAPSH = shutil.which("capsh") or shutil.which("capsh", path="/usr/sbin:/sbin") or "capsh"
TIERS = {  # name: (isolation, storage, how the helper runs)
    "none": ("none", "auto", "root"), "overlay": ("auto", "auto", "root"),
    "copy": ("auto", "copy", "root"), "landlock": ("auto", "auto", "capsh"),
    "userns": ("auto", "auto", "runner"), "runner": ("auto", "auto", "runner"),
}
NO_USER_NAMESPACES_TIERS = {"runner"}  # user.max_user_namespaces 0 for the run (tier 1b)
MARKS = {"overlay": "The tree: an id-mapped overlay", "copy": "The tree: a copy",
         "landlock": "**Isolation:** landlock (user",
         "runner": "**Isolation:** landlock as the runner's own user",
         "userns": "**Isolation:** contained in a user namespace"}


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


def _as(how: str, argv: list[str], venv: Path) -> list[str]:
    """``argv`` as the tier's helper runs: root, root without CAP_SYS_ADMIN, the runner."""
    if how == "capsh":
        return [CAPSH, "--drop=cap_sys_admin", "--", "-c", shlex.join(argv)]
    if how == "runner":
        user = pwd.getpwnam(RUNNER_USER)
        python = [str(venv / "bin" / "python")] if argv[0] == sys.executable else argv[:1]
        return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                "--clear-groups", *python, *argv[1:]]
    return argv


def run_once(repo: Path, base: Path, tier: str, venv: Path, preset: str = "edit"
             ) -> dict[str, float]:
    """One run of the helper; its time, the peak rise of Shmem, the helper's peak RSS."""
    isolation, storage, how = TIERS[tier]
    home = {"HOME": str(base / "runner-home")} if how == "runner" else {}
    for git in (["git", "checkout", "-q", "--", "."], ["git", "clean", "-qfd"]):
        subprocess.run(_as(how, git, venv), cwd=repo, check=True, env={**os.environ, **home})
    env = {**os.environ, "RUNNER_TEMP": str(base / f"rt-{how}"),
           "CURSOR_AGENT_ACTION_AGENT_USER": BENCH_USER,
           "CURSOR_AGENT_ACTION_BOX_STORAGE": storage}
    if how == "runner":
        env = {"PATH": "/usr/bin:/bin", "HOME": str(base / "runner-home"),
               "RUNNER_TEMP": env["RUNNER_TEMP"], "LANG": "C.UTF-8"}
    out = base / f"out-{how}"  # the helper's files, its own
    (out / "summary.md").unlink(missing_ok=True)  # the helper appends to it
    shmem0 = _shmem_kib()
    peak = {"shmem": 0, "rss": 0}
    started = time.perf_counter()
    wrap = ([sys.executable, "-I", "-c", NO_USER_NAMESPACES]
            if tier in NO_USER_NAMESPACES_TIERS else [])
    helper = subprocess.Popen(wrap + _as(how, [
        sys.executable, "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
        str(base / "agent.sh"), "--working-directory", str(repo), "--prompt", "x",
        "--isolation", isolation, "--preset", preset, "--output-file", str(out / "out.txt"),
        "--summary-file", str(out / "summary.md")], venv),
        env=env, stdout=(out / "log.txt").open("w"), cwd=base)  # fmt: skip
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
        raise SystemExit(f"the {tier} run failed ({code}): "
                         f"{(out / 'log.txt').read_text()[-2000:]}")
    summary = (out / "summary.md").read_text()
    if tier in MARKS and MARKS[tier].lower() not in summary.lower():
        warned = [line for line in (out / "log.txt").read_text().splitlines()
                  if line.startswith("::warning")]
        raise SystemExit(f"the {tier} run did not run as asked: {warned}")
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
    parser.add_argument("--tiers", default=",".join(TIERS),
                        help="which of: " + ", ".join(TIERS))
    parser.add_argument("--preset", choices=sorted(WORK), default="edit",
                        help="the runs' permission preset: edit (the agent edits one file and "
                             "makes one) or read-only (it reads; the Landlock tiers then show "
                             "the checkout in place)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        parser.error("run it as root: the box needs root")
    tiers = args.tiers.split(",")
    if unknown := set(tiers) - set(TIERS):
        parser.error(f"unknown tiers: {', '.join(sorted(unknown))}")
    rows: list[dict[str, float]] = []
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", RUNNER_USER], check=False, capture_output=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-box-") as tmp:
            base = Path(tmp)
            base.chmod(0o755)
            (base / "agent.sh").write_text(AGENT.replace("{work}", WORK[args.preset]))
            (base / "agent.sh").chmod(0o755)
            venv = make_helper_venv(base / "helper-venv", SYSTEM_PYTHON)
            for how in ("root", "capsh"):
                (base / f"out-{how}").mkdir()
            rows = _measure(base, [int(size) for size in args.sizes.split(",")], tiers,
                            args.runs, venv, preset=args.preset)
    finally:
        for user in (BENCH_USER, RUNNER_USER):
            subprocess.run(["userdel", user], check=False, capture_output=True)
    print("| files | " + " | ".join(f"{tier} overhead" for tier in tiers if tier != "none")
          + " | bare overlay + git status | cp -a |")
    print("|---|" + "---|" * (len(tiers) + 1))
    for row in rows:
        print(f"| {int(row['files']):,} | " + " | ".join(
            f"{row[f'{tier}_s'] - row.get('none_s', 0):+.2f} s" for tier in tiers
            if tier != "none") + f" | {row['bare_overlay_status_s']:.2f} s | "
            f"{row['cp_a_s']:.2f} s |")
    _beyond_start_up(rows, [tier for tier in tiers if tier != "none"])
    return 0


def _beyond_start_up(rows: list[dict[str, float]], tiers: list[str]) -> None:
    """What each tier costs beyond its run at the smallest size (its start-up), and that as a
    ratio to the box's (``overlay``) where it was run: issue 48's measure for the tiers
    without a box."""
    if len(rows) < 2 or "overlay" not in tiers:
        return
    first = rows[0]
    print("\n| files | " + " | ".join(f"{tier} beyond start-up" for tier in tiers) + " |")
    print("|---|" + "---|" * len(tiers))
    for row in rows[1:]:
        box = row["overlay_s"] - first["overlay_s"]
        cells = []
        for tier in tiers:
            beyond = row[f"{tier}_s"] - first[f"{tier}_s"]
            cells.append(f"{beyond:.2f} s ({beyond / box:.1f}x)" if box > 0 else
                         f"{beyond:.2f} s")
        print(f"| {int(row['files']):,} | " + " | ".join(cells) + " |")


def _trees(base: Path, files: int, tiers: list[str]) -> dict[str, Path]:
    """The tree of ``files`` files each tier runs on: the runner's tiers get one of their own,
    the runner's, as on its machine."""
    repo = base / f"tree-{files}"
    repo.mkdir()
    make_tree(repo, files)
    trees = dict.fromkeys(tiers, repo)
    if any(TIERS[tier][2] == "runner" for tier in tiers):
        user = pwd.getpwnam(RUNNER_USER)
        theirs = base / f"tree-{files}-runner"
        theirs.mkdir()
        make_tree(theirs, files)
        for path in (theirs, base / "runner-home", base / "rt-runner", base / "out-runner"):
            path.mkdir(exist_ok=True)
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(path)],
                           check=True)
        trees.update({tier: theirs for tier in tiers if TIERS[tier][2] == "runner"})
    return trees


def _measure(base: Path, sizes: list[int], tiers: list[str], runs: int, venv: Path, *,
             preset: str) -> list[dict[str, float]]:
    """Every size's trees and bare operations first, then ``runs`` rounds, each running every
    tier at every size once (interleaved: a busy minute of the shared machine falls on every
    size and tier alike; from 300,000 files, the first round only)."""
    trees = {files: _trees(base, files, tiers) for files in sizes}
    rows = {files: {"files": float(files),
                    "bare_overlay_status_s": bare_overlay_status(trees[files][tiers[0]], base),
                    "cp_a_s": cp_a(trees[files][tiers[0]])} for files in sizes}
    found: dict[tuple[int, str], list[dict[str, float]]] = {}
    for round_ in range(runs):
        for files in sizes:
            if round_ and files >= 300_000:
                continue
            for tier in tiers:
                found.setdefault((files, tier), []).append(
                    run_once(trees[files][tier], base, tier, venv, preset))
    for (files, tier), items in found.items():
        for key in ("s", "ram_mib", "rss_mib"):
            rows[files][f"{tier}_{key}"] = statistics.median(item[key] for item in items)
    for files in sizes:
        print(json.dumps({key: round(value, 3) for key, value in rows[files].items()}),
              flush=True)
        for tree in set(trees[files].values()):
            shutil.rmtree(tree)
    return [rows[files] for files in sizes]

if __name__ == "__main__":
    sys.exit(main())
