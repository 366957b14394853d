"""Stream-engine benchmarks; figures go in bench/README.md.

    python bench/stream/bench_stream.py [--events 300000] [--jq-lines 1000] [--workdir DIR]

1. ``summarize`` (the whole command, log to /dev/null) vs a bare ``orjson.loads`` loop over the
   same lines, each in a fresh process, same run: best wall time of 3. Done for the "typical"
   event mix, a "tool-heavy" one and a "tool-dense" one (100,000 calls in 300,000 events, every
   line on the slow path; see gen_transcript.MIXES).
2. Peak RSS of ``summarize`` on that transcript, on a single 50 MiB line (a tool result, an
   assistant text, a result text) and on an empty transcript (the baseline).
3. Start-up: ``cursor-agent-action --help`` vs ``python -c pass`` (median of 15).
4. The vendor-documented progress loop (bash ``while read line`` + jq per field) on the first
   ``--jq-lines`` lines, extrapolated to the whole transcript.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen_transcript import generate  # noqa: E402

BIN = Path(sys.executable).parent
CLI = shutil.which("cursor-agent-action", path=str(BIN)) or "cursor-agent-action"
ORJSON_LOOP = """import sys, orjson
with open(sys.argv[1], "rb") as f:
    for line in f:
        orjson.loads(line)
"""
# The loop the vendor's docs suggest for tracking progress of stream-json output.
JQ_LOOP = r"""
while IFS= read -r line; do
  type=$(printf '%s' "$line" | jq -r '.type // empty' 2>/dev/null)
  subtype=$(printf '%s' "$line" | jq -r '.subtype // empty' 2>/dev/null)
  case "$type" in
    assistant) printf '%s' "$line" | jq -r '.message.content[0].text // empty' >/dev/null 2>&1 ;;
    tool_call) printf '%s' "$line" | jq -r '.tool_call | keys[0]' >/dev/null 2>&1 ;;
  esac
done < "$1"
"""


# One 50 MiB line of each kind that can carry that much text (text with escaped newlines).
HUGE_TEXT = b"The agent explains what it changed and why, in plain words.\\n"
HUGE_LINES = {
    "tool result": (
        b'{"type":"tool_call","subtype":"completed","call_id":"c1","tool_call":'
        b'{"readToolCall":{"args":{"path":"big.txt"},"result":{"success":{"content":"',
        b'"}}}}}',
    ),
    "assistant text": (
        b'{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"',
        b'"}]},"session_id":"s1"}',
    ),
    "result text": (
        b'{"type":"result","subtype":"success","is_error":false,"duration_ms":5,"result":"',
        b'","session_id":"s1","request_id":"r1"}',
    ),
}


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run of ``cmd`` (stdout discarded)."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=False)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1])


def best(cmd: list[str], runs: int = 3, fresh: Path | None = None) -> tuple[float, int]:
    """Best time and worst RSS of ``runs``; ``fresh``: a directory whose output and summary
    files are removed before each run (each run gets the whole 1 MiB summary budget)."""
    results = []
    for _ in range(runs):
        for name in ("out", "summary.md"):
            if fresh is not None:
                (fresh / name).unlink(missing_ok=True)
        results.append(timed(cmd))
    return min(r[0] for r in results), max(r[1] for r in results)


def summarize_cmd(transcript: Path, work: Path) -> list[str]:
    return [CLI, "summarize", str(transcript), "--output-file", str(work / "out"),
            "--summary-file", str(work / "summary.md"), "--result-dir", str(work)]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--jq-lines", type=int, default=1000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    # Byte-compiled first, as pip does at install: a stale .pyc (PYTHONDONTWRITEBYTECODE in a
    # dev shell) would add ~10 ms of compiling to every start-up measured below.
    package = Path(__file__).resolve().parents[2] / "src" / "cursor_agent_action"
    # Not data/: the demo workspace ships as plain files.
    compile_cmd = [sys.executable, "-m", "compileall", "-q", "-x", "/data/", str(package)]
    subprocess.run(compile_cmd, check=True)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-stream-"))
    work.mkdir(parents=True, exist_ok=True)
    transcript = work / "transcript.jsonl"
    mixes = ("tool-dense", "tool-heavy", "typical")  # the typical one is kept for the jq slice
    for mix in mixes:
        count = generate(transcript, args.events, seed=1, mix_name=mix)
        size = transcript.stat().st_size
        print(f"[{mix}] transcript: {count:,} events, {size / 1e6:.1f} MB")
        loop_s, loop_rss = best([sys.executable, "-c", ORJSON_LOOP, str(transcript)])
        ours_s, ours_rss = best(summarize_cmd(transcript, work), fresh=work)
        print(f"[{mix}] orjson.loads loop: {loop_s:.2f} s, peak RSS {loop_rss / 1024:.0f} MiB")
        print(f"[{mix}] summarize:         {ours_s:.2f} s, peak RSS {ours_rss / 1024:.0f} MiB "
              f"-> {ours_s / loop_s:.2f}x the bare loop")  # fmt: skip

    for name, (prefix, suffix) in HUGE_LINES.items():
        huge = work / f"huge-{name}.jsonl"
        with huge.open("wb") as handle:
            handle.write(prefix + HUGE_TEXT * (50 * 2**20 // len(HUGE_TEXT)) + suffix + b"\n")
        huge_s, huge_rss = best(summarize_cmd(huge, work), runs=1, fresh=work)
        print(f"one 50 MiB line ({name}): {huge_s:.2f} s, peak RSS {huge_rss / 1024:.0f} MiB")
    empty = work / "empty.jsonl"
    empty.write_bytes(b"")
    empty_rss = best(summarize_cmd(empty, work), runs=1)[1]
    print(f"baseline (empty transcript): peak RSS {empty_rss / 1024:.0f} MiB")

    def median_wall(cmd: list[str], runs: int = 15) -> float:
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    bare = median_wall([sys.executable, "-c", "pass"])
    helper = median_wall([CLI, "--help"])
    print(f"start-up: python -c pass {bare * 1000:.0f} ms, cursor-agent-action --help "
          f"{helper * 1000:.0f} ms (+{(helper - bare) * 1000:.0f} ms)")  # fmt: skip

    if shutil.which("jq") and shutil.which("bash"):
        head = work / "slice.jsonl"
        with transcript.open("rb") as src, head.open("wb") as dst:
            for _, line in zip(range(args.jq_lines), src, strict=False):
                dst.write(line)
        start = time.perf_counter()
        subprocess.run(["bash", "-c", JQ_LOOP, "bash", str(head)], check=False)
        jq_s = time.perf_counter() - start
        whole = jq_s * count / args.jq_lines
        print(f"bash+jq loop: {jq_s:.1f} s for {args.jq_lines:,} lines -> ~{whole / 60:.0f} min "
              f"for the whole transcript ({whole / ours_s:.0f}x summarize)")  # fmt: skip
    else:
        print("bash+jq loop: skipped (jq or bash not installed)")
    if args.workdir is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    os.environ.pop("GITHUB_OUTPUT", None)
    main()
