"""Property tests: any byte stream gives a parseable report, safe log, bounded summary."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.engine import StreamProcessor
from cursor_agent_action.stream.record import RunReport
from cursor_agent_action.stream.render.report import report
from tests.stream.test_engine import OUTPUT_NAMES
from tests.support.runner import RUNNER_ENV
from tests.support.stream import processed_commands

# Text that tries every trick: workflow commands, output delimiters, Markdown, HTML, ids.
NASTY = st.lists(
    st.sampled_from(
        [":", "::", "\n", "\r", "|", "`", "<", ">", "#", "[", "]", "(", ")", "!", "-", "%", " ",
         "ghadelimiter_", "<<", "=", "é", "\u2028", "\x00", "a", "set-output", "error", "\\"]
    ),
    max_size=40,
).map("".join)  # fmt: skip
CALL_IDS = st.sampled_from(["a", "b\nfc|1", "c|`x`", "", "::error::id"])
KINDS = st.sampled_from(["shellToolCall", "readToolCall", "editToolCall", "writeToolCall",
                         "deleteToolCall", "mcpToolCall", "newToolCall", "function"])  # fmt: skip
OUTCOMES = st.sampled_from(["success", "error", "rejected", "permissionDenied", "timeout", "odd"])


@st.composite
def events(draw: st.DrawFn) -> dict[str, object]:
    kind = draw(st.sampled_from(["init", "assistant", "delta", "thinking", "started",
                                 "completed", "result", "unknown"]))  # fmt: skip
    text = draw(NASTY)
    if kind == "init":
        return {"type": "system", "subtype": "init", "cwd": draw(st.sampled_from(["/w", text])),
                "model": text, "session_id": text}  # fmt: skip
    if kind in ("assistant", "delta"):
        extra = {"timestamp_ms": 1} if kind == "delta" else draw(
            st.sampled_from([{}, {"model_call_id": "m", "timestamp_ms": 2}]))  # fmt: skip
        return {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]},
                **extra}  # fmt: skip
    if kind == "thinking":
        return {"type": "thinking", "subtype": "delta", "text": text}
    if kind in ("started", "completed"):
        inner: dict[str, object] = {"args": {"command": text, "path": text}}
        if kind == "completed":
            inner["result"] = {draw(OUTCOMES): {"reason": text, "exitCode": 1}}
        return {"type": "tool_call", "subtype": kind, "call_id": draw(CALL_IDS),
                "tool_call": {draw(KINDS): inner, "toolCallId": "x"}}  # fmt: skip
    if kind == "result":
        return {"type": "result", "subtype": draw(st.sampled_from(["success", text])),
                "is_error": draw(st.booleans()), "result": text}  # fmt: skip
    return {"type": text, "subtype": text}


def _check_report(tmp_path: Path, data: bytes, cuts: list[int], budget_used: int) -> None:
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    for path in (out, summary):
        path.unlink(missing_ok=True)
    summary.write_bytes(b"x" * budget_used)  # an earlier step's summary shares the limit
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, output_file=out, summary_file=summary,
                    secrets=["ghadelimiter_"])  # fmt: skip
    processor = StreamProcessor(runner)
    start = 0
    for cut in sorted(cuts):
        processor.feed(data[start:cut])
        start = cut
    processor.feed(data[start:])
    report(RunReport.of_stream(processor.close()), runner, result_dir=tmp_path / "results")
    outputs = parse_output_file(out.read_text("utf-8"))
    assert list(outputs) == OUTPUT_NAMES
    assert outputs["conclusion"] in ("success", "failure")
    files = json.loads(outputs["files-changed"])
    assert files == sorted(files)
    # Each call is counted at most once: refused, failed, or neither.
    parts = [int(outputs[n]) for n in ("permission-denials", "hook-denials", "failed-tool-calls")]
    assert sum(parts) <= int(outputs["tool-calls"])
    added = summary.stat().st_size - budget_used
    assert added <= max(0, 1024 * 1024 - budget_used)  # the step's share of GitHub's 1 MiB
    processed_commands(log.getvalue())


@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=5),
       budget_used=st.sampled_from([0, 1024 * 1024 - 9000, 2 * 1024 * 1024]))  # fmt: skip
def test_any_bytes_give_a_parseable_report(data: bytes, cuts: list[int], budget_used: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check_report(Path(tmp), data, cuts, budget_used)


def _write(call_id: str, path: str) -> dict[str, object]:
    inner = {"args": {"path": path}, "result": {"success": {}}}
    return {"type": "tool_call", "subtype": "completed", "call_id": call_id,
            "tool_call": {"editToolCall": inner}}  # fmt: skip


# A changed file whose name holds a secret: files-changed is still sorted once redacted.
@example(stream=[_write("a", ":"), _write("b", "ghadelimiter_")], junk=[], cuts=[])
@given(stream=st.lists(events(), max_size=25), junk=st.lists(st.binary(max_size=30), max_size=3),
       cuts=st.lists(st.integers(0, 4000), max_size=4))  # fmt: skip
def test_adversarial_event_streams_give_a_safe_report(
    stream: list[dict[str, object]], junk: list[bytes], cuts: list[int]
) -> None:
    lines = [json.dumps(e, ensure_ascii=bool(i % 2)).encode() for i, e in enumerate(stream)]
    data = b"\n".join(lines + junk) + b"\n"
    with tempfile.TemporaryDirectory() as tmp:
        _check_report(Path(tmp), data, cuts, 0)


@st.composite
def segmented_streams(draw: st.DrawFn) -> tuple[list[bytes], str]:
    """Segments in every form the CLI uses (whole with model_call_id; deltas then a repeat
    with model_call_id; final deltas then a repeat with neither field), tool calls between."""
    segments = draw(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6))
    lines: list[bytes] = []

    def say(text: str, **extra: object) -> None:
        message = {"content": [{"type": "text", "text": text}]}
        lines.append(json.dumps({"type": "assistant", "message": message, **extra}).encode())

    for number, segment in enumerate(segments):
        last = number == len(segments) - 1
        if draw(st.booleans()):  # --stream-partial-output: deltas first
            cuts = sorted(draw(st.lists(st.integers(0, len(segment)), max_size=4)))
            for start, end in zip([0, *cuts], [*cuts, len(segment)], strict=True):
                say(segment[start:end], timestamp_ms=number)
        if last:
            say(segment)
        else:
            say(segment, model_call_id=f"m{number}", timestamp_ms=number)
            call = {"type": "tool_call", "subtype": "started", "call_id": f"c{number}",
                    "tool_call": {"shellToolCall": {"args": {"command": "ls"}}}}  # fmt: skip
            lines.append(json.dumps(call).encode())
    return lines, "".join(segments)


@given(stream=segmented_streams(), cut=st.integers(0, 4000))
def test_reconstructed_text_has_each_segment_once(
    stream: tuple[list[bytes], str], cut: int
) -> None:
    """Without a result event, `result` is the segments joined, each exactly once, whichever
    form each segment took and however the bytes were chunked."""
    lines, expected = stream
    data = b"\n".join(lines) + b"\n"
    processor = StreamProcessor(None)
    processor.feed(data[:cut])
    processor.feed(data[cut:])
    record = processor.close()
    assert record.result_text == expected
