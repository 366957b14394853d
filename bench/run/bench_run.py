"""Benchmarks of `cursor-agent-action run` with real processes (figures in bench/README.md).

    python bench/run/bench_run.py [latency] [throughput] [memory]   (default: all three)

- latency: a quiet agent prints one line every 300 ms; each line carries the time it was
  written (CLOCK_MONOTONIC is system-wide) and the bench timestamps it when the helper's log
  line arrives on the bench's pipe. Target: <= 50 ms.
- throughput: an agent that `cat`s a large generated transcript as fast as the pipe allows,
  `run` vs `summarize` on the same file (wall time, MB/s).
- memory: peak RSS of the helper process for transcripts of growing length, `run` next to
  `summarize` (wait4 rusage of that process; run's agent is `cat`, a few MB).
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELPER = [sys.executable, "-m", "cursor_agent_action"]
GEN = ROOT / "bench" / "stream" / "gen_transcript.py"
BENCH_AGENT_USER = "caa-bench-agent"  # created by a contained run as root, removed at the end
# The contained agent's user cannot reach a Python under /root: use the system one for it.
AGENT_PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable

_QUIET_AGENT = """\
import json, sys, time
if "--help" in sys.argv:
    sys.exit(0)
session = "bench"
def emit(event):
    sys.stdout.write(json.dumps(event) + "\\n")
    sys.stdout.flush()
emit({"type": "system", "subtype": "init", "cwd": ".", "session_id": session, "model": "Auto"})
for i in range(LINES):
    time.sleep(0.3)
    text = f"LATENCY {time.monotonic():.6f}"
    emit({"type": "assistant", "session_id": session,
          "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
emit({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
      "session_id": session, "request_id": "r", "duration_ms": 1})
"""


def _wrapper(directory: Path, body: str) -> Path:
    path = directory / "cursor-agent"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _run_args(agent: Path, workspace: Path, temp: Path, isolation: str = "none") -> list[str]:
    # The edit preset: the generated transcripts edit files, which a read-only run reports as
    # a failure (exit 1) after the stream; the bench measures the stream, not the policy.
    return [*HELPER, "run", "--prompt", "bench", "--preset", "edit", "--agent-bin", str(agent),
            "--working-directory", str(workspace), "--transcript", str(temp / "t.jsonl"),
            "--output-file", os.devnull, "--summary-file", os.devnull,
            "--isolation", isolation, "--agent-user", BENCH_AGENT_USER]


def _workspace(temp: Path) -> Path:
    """An empty workspace beside the transcript: `run` snapshots the workspace's files before
    and after the agent, which must not include the bench's own 150 MB transcript."""
    workspace = temp / "ws"
    workspace.mkdir(exist_ok=True)
    return workspace


def _env(temp: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(temp), "RUNNER_TEMP": str(temp)}


def latency(lines: int = 40) -> None:
    isolations = ["none", "user"] if os.geteuid() == 0 and sys.platform == "linux" else ["none"]
    for isolation in isolations:
        delays_ms = _latency(lines, isolation)
        p95 = delays_ms[int(len(delays_ms) * 0.95) - 1]
        print(f"latency ({'contained' if isolation == 'user' else 'uncontained'}) over "
              f"{len(delays_ms)} lines: median {statistics.median(delays_ms):.1f} ms, "
              f"p95 {p95:.1f} ms, max {delays_ms[-1]:.1f} ms (target <= 50 ms)")
    if "user" in isolations:
        subprocess.run(["userdel", BENCH_AGENT_USER], check=False, capture_output=True)


def _latency(lines: int, isolation: str) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        temp = Path(tmp)
        script = temp / "quiet_agent.py"
        script.write_text(_QUIET_AGENT.replace("LINES", str(lines)))
        script.chmod(0o644)
        agent = _wrapper(temp, f"exec {shlex.quote(AGENT_PYTHON)} {shlex.quote(str(script))}")
        delays: list[float] = []
        helper = subprocess.Popen(_run_args(agent, temp, temp, isolation), env=_env(temp),
                                  stdout=subprocess.PIPE)
        assert helper.stdout is not None

        def read() -> None:
            assert helper.stdout is not None
            for raw in helper.stdout:
                arrived = time.monotonic()
                line = raw.decode()
                if line.startswith("LATENCY "):
                    delays.append(arrived - float(line.split()[1]))

        reader = threading.Thread(target=read)
        reader.start()
        helper.wait(timeout=lines * 0.3 + 60)
        reader.join(timeout=10)
    return sorted(d * 1000 for d in delays)


def _generate(path: Path, events: int) -> float:
    subprocess.run([sys.executable, str(GEN), str(path), "--events", str(events)], check=True,
                   stdout=subprocess.DEVNULL)
    return path.stat().st_size / 1e6


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one helper process (wait4: that process only)."""
    started = time.monotonic()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{args[3]} failed with exit code {proc.returncode}")
    return time.monotonic() - started, usage.ru_maxrss


def throughput(events: int = 300_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        temp = Path(tmp)
        transcript = temp / "big.jsonl"
        size = _generate(transcript, events)
        agent = _wrapper(temp, f'case "$*" in *--help*) echo "  --trust"; exit 0;; esac\n'
                               f"exec cat {shlex.quote(str(transcript))}")
        summarize = [*HELPER, "summarize", str(transcript), "--output-file", os.devnull,
                     "--summary-file", os.devnull]
        # Best of three, alternating, so page cache and CPU frequency treat both alike.
        run_s = sum_s = float("inf")
        for _ in range(3):
            run_s = min(run_s, _timed(_run_args(agent, _workspace(temp), temp), _env(temp))[0])
            sum_s = min(sum_s, _timed(summarize, _env(temp))[0])
    print(f"throughput on {events:,} events ({size:.0f} MB): run {run_s:.2f} s "
          f"({size / run_s:.0f} MB/s), summarize {sum_s:.2f} s ({size / sum_s:.0f} MB/s), "
          f"run/summarize {run_s / sum_s:.2f}x")


def memory(sizes: tuple[int, ...] = (20_000, 100_000, 400_000)) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        temp = Path(tmp)
        for events in sizes:
            transcript = temp / f"t{events}.jsonl"
            size = _generate(transcript, events)
            agent = _wrapper(temp, f'case "$*" in *--help*) echo "  --trust"; exit 0;; esac\n'
                                   f"exec cat {shlex.quote(str(transcript))}")
            _, rss = _timed(_run_args(agent, _workspace(temp), temp), _env(temp))
            _, summarize_rss = _timed([*HELPER, "summarize", str(transcript), "--output-file",
                                       os.devnull, "--summary-file", os.devnull], _env(temp))
            print(f"memory: {events:>7,} events ({size:5.0f} MB): peak RSS run "
                  f"{rss / 1024:.0f} MiB, summarize {summarize_rss / 1024:.0f} MiB")
            transcript.unlink()


def main() -> None:
    benches: dict[str, Callable[[], None]] = {
        "latency": latency, "throughput": throughput, "memory": memory,
    }
    for name in sys.argv[1:] or list(benches):
        benches[name]()


if __name__ == "__main__":
    main()
