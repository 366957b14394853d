"""Set-up time of the helper, as a fresh GitHub-hosted runner sees it, against the bare minimum
measured in the same minutes (figures in bench/README.md).

    python bench/setup/bench_setup.py [--runs 3]

Each round measures, with an empty tool cache and an empty pip cache (a new directory each
time) and this machine's package index:
- baseline: the bare minimum, `venv --without-pip` and pip installing one wheel (orjson, by its
  hash from requirements/run.txt) with the flags setup-helper.sh uses;
- run: scripts/setup-helper.sh exactly as action.yml's `helper` step runs it for a run without
  output-schema or mcp-config; run+schema: with one of them (jsonschema and PyYAML as well);
- gh: the publish, comment, ci-context and gate sub-actions' set;
then each set warm: three more set-ups on the tool cache its cold one left (the manifest
check, then reuse). The network moves absolute times from one minute to the next; the ratio
of the medians, measured in one run, does not move with it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "setup-helper.sh"
PYTHON = str(getattr(sys, "_base_executable", sys.executable))
SETS = {"run": ("run", "false"), "run+schema": ("run", "true"), "gh": ("gh", "false")}
TARGETS = {"run": 2.0, "gh": 3.0}
WARM_TARGET_S = 0.3


def _env(work: Path, cache: Path) -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP", "HTTPS", "NO_"))},
        "PATH": os.environ["PATH"], "HOME": str(work / "home"), "RUNNER_OS": "Linux",
        "RUNNER_TOOL_CACHE": str(work / "tool_cache"), "RUNNER_TEMP": str(work / "temp"),
        "GITHUB_OUTPUT": str(work / "output"), "CURSOR_AGENT_ACTION_PYTHON": PYTHON,
        "PIP_CACHE_DIR": str(cache),
    }  # fmt: skip


def _timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed:\n{done.stdout}{done.stderr}")
    return elapsed


def _baseline(work: Path) -> float:
    """venv --without-pip, then the base pip installs orjson alone, hash-pinned."""
    entry = re.search(r"^orjson==.*?(?=^\S)", (ROOT / "requirements" / "run.txt").read_text(),
                      re.M | re.S)  # fmt: skip
    assert entry, "orjson is not in requirements/run.txt"
    lock = work / "orjson.txt"
    lock.write_text(entry.group(0))
    env = _env(work, work / "pip-cache-baseline")
    started = time.perf_counter()
    _timed([PYTHON, "-I", "-m", "venv", "--without-pip", str(work / "bare")], env)
    _timed([PYTHON, "-I", "-m", "pip", "--python", str(work / "bare" / "bin" / "python"),
            "install", "--disable-pip-version-check", "--no-input", "--no-deps",
            "--require-hashes", "--only-binary", ":all:", "-r", str(lock)], env)  # fmt: skip
    return time.perf_counter() - started


def _setup(name: str, work: Path, cache: Path) -> float:
    set_name, schema = SETS[name]
    env = {**_env(work, cache), "CURSOR_AGENT_ACTION_HELPER_SCHEMA": schema}
    return _timed(["bash", str(SCRIPT), set_name], env)


def _size(path: Path) -> tuple[float, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6, len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cold: dict[str, list[float]] = {name: [] for name in ("baseline", *SETS)}
    warm: dict[str, list[float]] = {name: [] for name in SETS}
    sizes: dict[str, tuple[float, int]] = {}
    for round_ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "home").mkdir()
            cold["baseline"].append(_baseline(Path(tmp)))
        for name in SETS:
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                (work / "home").mkdir()
                cold[name].append(_setup(name, work, work / f"pip-cache-{round_}"))
                warm[name] += [_setup(name, work, work / "pip-cache-warm") for _ in range(3)]
                (venv,) = (work / "tool_cache" / "cursor-agent-action" / "helper").iterdir()
                sizes[name] = _size(venv)
                shutil.rmtree(work / "tool_cache")
    base = statistics.median(cold["baseline"])
    print(f"baseline (venv --without-pip + pip installing orjson alone): median {base:.2f} s "
          f"(runs: {', '.join(f'{t:.2f}' for t in cold['baseline'])})")  # fmt: skip
    for name in SETS:
        median = statistics.median(cold[name])
        target = TARGETS.get(name)
        verdict = f", target <= {target:.1f}x" if target else ""
        warm_median = statistics.median(warm[name])
        size, files = sizes[name]
        print(f"[{name}] cold: median {median:.2f} s = {median / base:.2f}x baseline{verdict} "
              f"(runs: {', '.join(f'{t:.2f}' for t in cold[name])}); warm: median "
              f"{warm_median:.2f} s, worst {max(warm[name]):.2f} s (target <= {WARM_TARGET_S} s); "
              f"venv {size:.1f} MB in {files} files")  # fmt: skip


if __name__ == "__main__":
    main()
