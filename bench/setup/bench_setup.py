"""Set-up time of the helper, as a fresh GitHub-hosted runner sees it (figures in bench/README.md).

    python bench/setup/bench_setup.py [--runs 3]

For each set (`run`: the action's own steps; `gh`: the publish, comment and ci-context
sub-actions) it runs scripts/setup-helper.sh exactly as action.yml's `helper` step does:
- cold: an empty tool cache and an empty pip cache (a new directory each run), the package index
  reachable (this machine's pip configuration);
- warm: the tool cache from the cold run (the manifest check, then reuse).
It prints the best and the median wall time of each, and the venv's size on disk.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "setup-helper.sh"
PYTHON = str(getattr(sys, "_base_executable", sys.executable))


def _setup(set_name: str, work: Path, cache: Path) -> float:
    env = {
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HTTP", "HTTPS", "NO_"))},
        "PATH": os.environ["PATH"], "HOME": str(work / "home"), "RUNNER_OS": "Linux",
        "RUNNER_TOOL_CACHE": str(work / "tool_cache"), "RUNNER_TEMP": str(work / "temp"),
        "GITHUB_OUTPUT": str(work / "output"), "CURSOR_AGENT_ACTION_PYTHON": PYTHON,
        "PIP_CACHE_DIR": str(cache),
    }  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(["bash", str(SCRIPT), set_name], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"setup failed:\n{done.stdout}{done.stderr}")
    return elapsed


def _size(path: Path) -> tuple[float, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6, len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for set_name in ("run", "gh"):
        cold: list[float] = []
        warm: list[float] = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                (work / "home").mkdir()
                cold.append(_setup(set_name, work, work / f"pip-cache-{len(cold)}"))
                for _ in range(3):
                    warm.append(_setup(set_name, work, work / "pip-cache-warm"))
                venvs = list((work / "tool_cache" / "cursor-agent-action" / "helper").iterdir())
                size, files = _size(venvs[0])
                shutil.rmtree(work / "tool_cache")
        print(f"[{set_name}] cold: best {min(cold):.2f} s, median {statistics.median(cold):.2f} s;"
              f" warm: best {min(warm):.2f} s, median {statistics.median(warm):.2f} s;"
              f" venv {size:.1f} MB in {files} files")  # fmt: skip


if __name__ == "__main__":
    main()
