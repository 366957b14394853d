"""Generate a large, realistic stream-json transcript for the benchmarks (not committed).

The mix follows long real sessions: mostly thinking and assistant token deltas, a tool call
every few events (shell, read, edit, grep) with file contents and command output in the
completion, parallel calls, and a result event at the end.

    python bench/stream/gen_transcript.py OUT.jsonl [--events 300000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import orjson

SESSION = "0f6fa7cf-4483-4a6d-ab20-21fb703f6e97"
CWD = "/home/runner/work/widgets/widgets"
WORDS = [
    *[
        "the",
        "function",
        "parser",
        "config",
        "request",
        "update",
        "module",
        "test",
        "import",
        "return",
        "value",
        "error",
    ],
    *[
        "file",
        "docs",
        "handler",
        "widget",
        "retry",
        "option",
        "flag",
        "build",
        "cache",
        "server",
        "client",
        "path",
        "line",
    ],
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _code(rng: random.Random, lines: int) -> str:
    return "".join(
        f"    {rng.choice(WORDS)}_{i} = {rng.choice(WORDS)}({rng.randint(0, 999)})"
        f"  # {_text(rng, 4)}\n"
        for i in range(lines)
    )


# Per turn: thinking deltas, assistant deltas, parallel tool calls; lines of command output and
# of file content. "typical" follows the proportions of real captures (tool events ~2-5% of all
# events, thinking deltas the majority); "tool-heavy" has about twice as many tool calls.
MIXES: dict[str, dict[str, tuple[int, ...]]] = {
    "typical": {"thinking": (20, 60), "deltas": (10, 30), "parallel": (1, 1, 1, 2, 3),
                "shell_lines": (20, 100), "read_lines": (280, 660), "edit_lines": (5, 20)},
    "tool-heavy": {"thinking": (10, 40), "deltas": (5, 20), "parallel": (1, 2, 2, 3, 4),
                   "shell_lines": (20, 70), "read_lines": (100, 220), "edit_lines": (5, 20)},
    # One whole assistant segment and one tool call per turn, nothing else: every event is on
    # the slow path (decoded, aggregated, logged). 300,000 events are 100,000 calls.
    "tool-dense": {"thinking": (), "deltas": (0, 0), "parallel": (1,),
                   "shell_lines": (1, 5), "read_lines": (3, 9), "edit_lines": (1, 4)},
}  # fmt: skip


def generate(path: Path, events: int, seed: int, mix_name: str = "typical") -> int:
    rng = random.Random(seed)
    mix = MIXES[mix_name]
    ts = 1_790_000_000_000
    written = 0
    calls = 0
    dumps = orjson.dumps
    segments: list[str] = []
    with path.open("wb") as out:

        def emit(obj: dict[str, object]) -> None:
            nonlocal written
            out.write(dumps(obj) + b"\n")
            written += 1

        emit({"type": "system", "subtype": "init", "apiKeySource": "env", "cwd": CWD,
              "session_id": SESSION, "model": "Auto", "permissionMode": "default"})  # fmt: skip
        emit({"type": "user", "message": {"role": "user", "content": [
            {"type": "text", "text": "Refactor the retry handling and update the docs."}]},
            "session_id": SESSION})  # fmt: skip
        turn = 0
        while written < events - 1:
            turn += 1
            model_call = f"{SESSION[:8]}-{turn}-mc"
            if mix["thinking"]:
                for _ in range(rng.randint(*mix["thinking"])):
                    ts += rng.randint(1, 40)
                    emit({"type": "thinking", "subtype": "delta", "text": " " + _text(rng, 3),
                          "session_id": SESSION, "timestamp_ms": ts})  # fmt: skip
                emit({"type": "thinking", "subtype": "completed", "session_id": SESSION,
                      "timestamp_ms": ts})  # fmt: skip
            deltas = [" " + _text(rng, 2) for _ in range(rng.randint(*mix["deltas"]))]
            whole_only = not deltas
            if whole_only:
                deltas = [_text(rng, rng.randint(8, 30))]
            for delta in [] if whole_only else deltas:
                ts += 3
                emit({"type": "assistant", "message": {"role": "assistant", "content": [
                    {"type": "text", "text": delta}]}, "session_id": SESSION,
                    "timestamp_ms": ts})  # fmt: skip
            segment = "".join(deltas)
            segments.append(segment)
            emit({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": segment}]}, "session_id": SESSION,
                "model_call_id": model_call, "timestamp_ms": ts})  # fmt: skip
            parallel = rng.choice(mix["parallel"])
            started = []
            for _ in range(parallel):
                calls += 1
                call_id = f"call-{calls:08d}-0\nfc_{rng.getrandbits(64):016x}_0"
                kind = rng.choice(("shellToolCall", "readToolCall", "readToolCall",
                                   "editToolCall", "grepToolCall"))  # fmt: skip
                file = f"{CWD}/src/widgets/{rng.choice(WORDS)}_{rng.randint(0, 99)}.py"
                if kind == "shellToolCall":
                    args: dict[str, object] = {
                        "command": f"python -m pytest -q tests/test_{rng.choice(WORDS)}.py",
                        "workingDirectory": "", "timeout": 30000, "toolCallId": call_id,
                        "simpleCommands": ["python"], "hasInputRedirect": False,
                        "hasOutputRedirect": False,
                    }  # fmt: skip
                elif kind == "grepToolCall":
                    args = {"pattern": rng.choice(WORDS), "path": CWD}
                else:
                    args = {"path": file}
                started.append((call_id, kind, args))
                emit({"type": "tool_call", "subtype": "started", "call_id": call_id,
                      "tool_call": {kind: {"args": args}, "toolCallId": call_id,
                                    "startedAtMs": str(ts)},
                      "model_call_id": model_call, "session_id": SESSION,
                      "timestamp_ms": ts})  # fmt: skip
            rng.shuffle(started)
            for call_id, kind, args in started:
                ts += rng.randint(50, 3000)
                if kind == "shellToolCall":
                    output = _code(rng, rng.randint(*mix["shell_lines"]))
                    result: dict[str, object] = {"success": {
                        "command": args["command"], "exitCode": rng.choice((0, 0, 0, 1)),
                        "signal": "", "stdout": output, "stderr": "", "executionTime": 900,
                        "interleavedOutput": output}, "isBackground": False}  # fmt: skip
                elif kind == "readToolCall":
                    content = _code(rng, rng.randint(*mix["read_lines"]))
                    result = {"success": {"content": content, "isEmpty": False,
                              "totalLines": content.count("\n"), "path": args["path"]}}  # fmt: skip
                elif kind == "editToolCall":
                    edit_lines = rng.randint(*mix["edit_lines"])
                    diff = _code(rng, edit_lines)
                    after = diff + _code(rng, 2 * edit_lines)
                    result = {"success": {"path": args["path"], "linesAdded": 3,
                              "linesRemoved": 1, "diffString": diff,
                              "afterFullFileContent": after}}  # fmt: skip
                else:
                    result = {"success": {"pattern": args["pattern"], "matches": [
                        {"file": f"src/{rng.choice(WORDS)}.py", "lineNumber": i,
                         "content": _text(rng, 8)}
                        for i in range(rng.randint(3, 15))]}}  # fmt: skip
                emit({"type": "tool_call", "subtype": "completed", "call_id": call_id,
                      "tool_call": {kind: {"args": args, "result": result},
                                    "toolCallId": call_id, "startedAtMs": str(ts - 500),
                                    "completedAtMs": str(ts)},
                      "model_call_id": model_call, "session_id": SESSION,
                      "timestamp_ms": ts})  # fmt: skip
        emit({"type": "result", "subtype": "success", "duration_ms": ts - 1_790_000_000_000,
              "duration_api_ms": 1, "is_error": False, "result": "".join(segments),
              "session_id": SESSION, "request_id": "bench",
              "usage": {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3,
                        "cacheWriteTokens": 4}})  # fmt: skip
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mix", choices=sorted(MIXES), default="typical")
    args = parser.parse_args()
    count = generate(args.out, args.events, args.seed, args.mix)
    print(f"{count} events, {args.out.stat().st_size / 1e6:.1f} MB -> {args.out}")


if __name__ == "__main__":
    main()
