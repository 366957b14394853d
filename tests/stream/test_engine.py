"""pipeline: StreamProcessor (live feed) and report (outputs, summary, result file, ::error::)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import tracemalloc
from pathlib import Path

import pytest

from cursor_agent_action.errors import SetupError
from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.runner_io import AGENT_MARK, Runner
from cursor_agent_action.stream import engine as pipeline
from cursor_agent_action.stream import events
from cursor_agent_action.stream.engine import StreamProcessor, load_report, process_stream
from cursor_agent_action.stream.render import livelog as logrender
from cursor_agent_action.stream.render.report import RESULT_OUTPUT_LIMIT, cap_text, report
from tests.support.runner import RUNNER_ENV
from tests.support.stream import FIXTURES, processed_commands

OUTPUT_NAMES = [
    "conclusion", "result", "result-file", "final-message", "session-id", "request-id", "model",
    "duration-ms", "input-tokens", "output-tokens", "cache-read-tokens", "cache-write-tokens",
    "tool-calls", "failed-tool-calls", "permission-denials", "hook-denials", "network-denials",
    "files-changed", "files-changed-truncated", "left-out", "files-changed-file",
]  # fmt: skip
SECRET = "sk-live-0123456789abcdef"


def _runner(tmp_path: Path, *, secrets: tuple[str, ...] = ()) -> tuple[Runner, io.StringIO]:
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, output_file=tmp_path / "out",
                    summary_file=tmp_path / "summary.md", secrets=secrets)  # fmt: skip
    return runner, log


def _lines(*objects: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objects)


def test_report_writes_every_output_and_the_result_file(tmp_path: Path) -> None:
    runner, _ = _runner(tmp_path)
    record = process_stream(io.BytesIO((FIXTURES / "docs-update.jsonl").read_bytes()), runner)
    report(record, runner, result_dir=tmp_path / "r", extra_outputs={"transcript-file": "/t"})
    outputs = parse_output_file((tmp_path / "out").read_text())
    assert list(outputs) == [*OUTPUT_NAMES, "transcript-file"]
    assert outputs["files-changed"] == (
        '["README.md","docs/index.md","docs/upgrading.md","docs/usage.md"]'
    )
    # The one refused call is a denial, not also a failure.
    assert (outputs["tool-calls"], outputs["failed-tool-calls"]) == ("11", "0")
    assert outputs["permission-denials"] == "1"
    result = record.stream.result_text
    assert Path(outputs["result-file"]).read_text() == outputs["result"] == result
    assert outputs["final-message"].startswith("Updated the docs")
    assert outputs["transcript-file"] == "/t"


def test_long_result_is_capped_with_a_marker_and_kept_whole_in_the_file(tmp_path: Path) -> None:
    text = "ü" * 100_000  # 200,000 bytes
    runner, _ = _runner(tmp_path)
    record = process_stream(io.BytesIO(_lines(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": text},
    )), runner)  # fmt: skip
    report(record, runner, result_dir=tmp_path)
    outputs = parse_output_file((tmp_path / "out").read_text())
    for name in ("result", "final-message"):
        assert len(outputs[name].encode()) <= RESULT_OUTPUT_LIMIT
        assert "truncated by cursor-agent-action: 200,000 bytes in total" in outputs[name]
    assert Path(outputs["result-file"]).read_text() == text


def test_cap_text_keeps_short_text_and_whole_characters() -> None:
    assert cap_text("short") == "short"
    capped = cap_text("€" * 200, limit=300)
    assert len(capped.encode()) <= 300
    assert capped.startswith("€")
    assert "600 bytes in total" in capped


def test_secrets_are_redacted_everywhere(tmp_path: Path) -> None:
    """The key never reaches the log, summary, any output or the result file."""
    runner, log = _runner(tmp_path, secrets=(SECRET,))
    say = {"type": "assistant", "message": {"content": [{"type": "text", "text": f"k={SECRET}"}]}}
    shell = {"type": "tool_call", "subtype": "completed", "call_id": SECRET, "tool_call": {
        "shellToolCall": {"args": {"command": f"echo {SECRET}"},
                          "result": {"rejected": {"reason": f"no {SECRET}"}}}}}  # fmt: skip
    result = {"type": "result", "subtype": "weird", "is_error": True, "result": f"r {SECRET}",
              "session_id": SECRET}  # fmt: skip
    record = process_stream(io.BytesIO(_lines(say, shell, result)), runner)
    report(record, runner, result_dir=tmp_path / "r")
    outputs = parse_output_file((tmp_path / "out").read_text())
    shown = log.getvalue().replace(f"::add-mask::{SECRET}\n", "", 1)
    written = [shown, (tmp_path / "summary.md").read_text(), *outputs.values(),
               Path(outputs["result-file"]).read_text()]  # fmt: skip
    assert all(SECRET not in text for text in written)
    assert "***" in outputs["result"]
    assert "***" in log.getvalue()
    assert f"::add-mask::{SECRET}" in log.getvalue()  # masked first, by the runner


def test_failure_prints_one_error_annotation_success_none(tmp_path: Path) -> None:
    runner, log = _runner(tmp_path)
    report(process_stream(io.BytesIO(b""), runner), runner, result_dir=tmp_path)
    errors = [c for c in processed_commands(log.getvalue()) if c[0] == "error"]
    assert len(errors) == 1
    assert "The transcript is empty" in errors[0][2]
    runner, log = _runner(tmp_path)
    ok = process_stream(io.BytesIO((FIXTURES / "corpus-usage.jsonl").read_bytes()), runner)
    report(ok, runner, result_dir=tmp_path)
    assert not [c for c in processed_commands(log.getvalue()) if c[0] == "error"]


def test_byte_by_byte_feed_equals_whole_input(tmp_path: Path) -> None:
    """A live pipe delivering arbitrary fragments gives the same record as a file."""
    data = (FIXTURES / "adversarial-messy.jsonl").read_bytes()
    whole = process_stream(io.BytesIO(data), None)
    processor = StreamProcessor(None)
    for i in range(len(data)):
        processor.feed(data[i : i + 1])
    assert processor.close() == whole.stream


def test_fast_path_reconstructs_the_clis_result_text() -> None:
    """Through the pipeline (raw-delta fast path) a cut-off stream yields the CLI's own text."""
    lines = (FIXTURES / "corpus-segmented-turn.jsonl").read_bytes().splitlines(keepends=True)
    expected = json.loads(lines[-1])["result"]
    record = process_stream(io.BytesIO(b"".join(lines[:-1])), None)
    assert record.stream.result_text == expected
    assert not record.stream.has_result


def test_finished_turns_true_at_the_result_event_and_close_is_idempotent() -> None:
    processor = StreamProcessor(None)
    data = (FIXTURES / "corpus-usage.jsonl").read_bytes()
    body, last = data[: data.rindex(b'{"type":"result"')], data[data.rindex(b'{"type":"result"') :]
    processor.feed(body)
    before = processor.finished
    processor.feed(last)
    assert (before, processor.finished) == (False, True)
    assert processor.close() is processor.close()


def test_log_is_flushed_after_each_fed_chunk(tmp_path: Path) -> None:
    runner, log = _runner(tmp_path)
    processor = StreamProcessor(runner)
    processor.feed(_lines({"type": "assistant", "message": {"content": [
        {"type": "text", "text": "visible now"}]}}))  # fmt: skip
    assert "visible now" in log.getvalue()


def test_verbose_shows_full_tool_output_default_only_failure_tail(tmp_path: Path) -> None:
    output = "".join(f"line {i}\n" for i in range(100))
    shell = {"type": "tool_call", "subtype": "completed", "call_id": "c", "tool_call": {
        "shellToolCall": {"args": {"command": "make"}, "result": {"success": {
            "exitCode": 2, "interleavedOutput": output}}}}}  # fmt: skip
    read = {
        "type": "tool_call",
        "subtype": "completed",
        "call_id": "r",
        "tool_call": {
            "readToolCall": {
                "args": {"path": "a"},
                "result": {"success": {"content": "SECRET-ISH"}},
            }
        },
    }
    default_runner, default_log = _runner(tmp_path)
    process_stream(io.BytesIO(_lines(shell, read)), default_runner)
    verbose_runner, verbose_log = _runner(tmp_path)
    process_stream(io.BytesIO(_lines(shell, read)), verbose_runner, verbose=True)
    assert "line 99" in default_log.getvalue()
    assert "line 79" not in default_log.getvalue()
    assert "SECRET-ISH" not in default_log.getvalue()
    assert "line 0\n" in verbose_log.getvalue()
    assert "SECRET-ISH" in verbose_log.getvalue()
    processed_commands(verbose_log.getvalue())


class _FailingSource(io.RawIOBase):
    def __init__(self, data: bytes) -> None:
        self._data = data

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if not self._data:
            raise OSError(5, "Input/output error")
        chunk, self._data = self._data, b""
        return chunk


def test_read_error_keeps_what_was_read_and_says_so() -> None:
    data = (FIXTURES / "corpus-usage.jsonl").read_bytes()
    record = process_stream(_FailingSource(data), None)  # type: ignore[arg-type]
    assert record.conclusion == "success"
    assert record.notes == (
        "Reading the transcript failed (Input/output error); the report covers only what "
        "was read before.",
    )


def test_unwritable_result_dir_is_a_note_not_a_crash(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    runner, _ = _runner(tmp_path)
    record = process_stream(io.BytesIO((FIXTURES / "corpus-usage.jsonl").read_bytes()), runner)
    report(record, runner, result_dir=blocker / "sub")
    outputs = parse_output_file((tmp_path / "out").read_text())
    assert outputs["result-file"] == ""
    assert outputs["result"] == "ok"
    assert "could not be written" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("calls", [3000])
def test_thousands_of_calls_stay_within_the_summary_limit(tmp_path: Path, calls: int) -> None:
    events = []
    for i in range(calls):
        call = {"shellToolCall": {"args": {"command": f"echo {i} " + "|" * 300},
                                  "result": {"success": {"exitCode": 0}}}}  # fmt: skip
        events.append({"type": "tool_call", "subtype": "completed", "call_id": f"c{i}\n|",
                       "tool_call": call})  # fmt: skip
    runner, log = _runner(tmp_path)
    record = process_stream(io.BytesIO(_lines(*events)), runner)
    report(record, runner, result_dir=tmp_path)
    summary = (tmp_path / "summary.md").read_bytes()
    assert len(summary) <= 1024 * 1024
    assert b"more tool calls not shown" in summary
    assert parse_output_file((tmp_path / "out").read_text())["tool-calls"] == str(calls)
    assert log.getvalue().count("::group::") == calls


def test_huge_tool_result_and_agent_text_are_read_whole() -> None:
    """A 12 MiB tool result and a 12 MiB assistant segment (the run's result) on one line
    each: the call is recorded, the text kept whole."""
    big = 12 * 1024 * 1024
    tool = (
        b'{"type":"tool_call","subtype":"completed","call_id":"c","tool_call":{"readToolCall":'
        b'{"args":{"path":"/w/big.txt"},"result":{"success":{"content":"' + b"x" * big + b'"}}}}}'
    )
    text = "y" * big
    say = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    )
    record = process_stream(io.BytesIO(tool + b"\n" + say.encode()), None)
    (call,) = record.stream.tool_calls
    assert (call.kind, call.target, call.outcome) == ("read", "/w/big.txt", "success")
    assert record.stream.result_text == text


def test_unwritable_summary_warns_and_unwritable_outputs_fail_clearly(tmp_path: Path) -> None:
    """Everything that can still be written is; then a SetupError names the file."""
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, output_file=tmp_path / "no" / "out",
                    summary_file=tmp_path)  # fmt: skip
    record = process_stream(io.BytesIO(b""), runner)
    with pytest.raises(SetupError, match="step outputs could not be written"):
        report(record, runner, result_dir=tmp_path / "r")
    commands = processed_commands(log.getvalue())
    assert [c[0] for c in commands] == ["warning", "error"]
    assert "job summary could not be written" in commands[0][2]


@pytest.mark.parametrize("offset", [0, 110, 150, 190, 290, 990, 65_530])
def test_no_piece_of_a_secret_survives_a_cut(tmp_path: Path, offset: int) -> None:
    """Text is redacted before anything is cut for display or output, wherever the secret
    falls relative to the cut (1,000-character targets, 64 KiB outputs, 120-character
    previews, the stderr tail)."""
    filler = "a" * offset + SECRET + "b" * 70_000
    runner, log = _runner(tmp_path, secrets=(SECRET,))
    say = {"type": "assistant", "message": {"content": [{"type": "text", "text": filler}]}}
    shell = {"type": "tool_call", "subtype": "completed", "call_id": "c", "tool_call": {
        "shellToolCall": {"args": {"command": filler[:1010]},
                          "result": {"error": {"errorMessage": filler[:5000]}}}}}  # fmt: skip
    junk = ("x" * min(offset, 100) + SECRET + " not json").encode()
    record = process_stream(io.BytesIO(_lines(say, shell) + junk + b"\n"), runner)
    record = dataclasses.replace(record, stderr="e" * offset + SECRET + "f" * 9000,
                                 notes=(*record.notes, filler[:1200]))
    report(record, runner, result_dir=tmp_path / "r")
    outputs = parse_output_file((tmp_path / "out").read_text())
    shown = log.getvalue().replace(f"::add-mask::{SECRET}\n", "", 1)
    written = [shown, (tmp_path / "summary.md").read_text(), *outputs.values(),
               Path(outputs["result-file"]).read_text()]  # fmt: skip
    piece = SECRET[:6]
    assert [text.count(piece) for text in written] == [0] * len(written)


def test_load_report_redacts_before_cutting() -> None:
    record = load_report(FIXTURES / "docs-update.jsonl", redact=lambda text: text.replace(
        "acme_widgets", "***"))  # fmt: skip
    assert all("acme_widgets" not in call.target for call in record.stream.tool_calls)
    assert any("***" in call.target for call in record.stream.tool_calls)


def _agent_text(log: str) -> str:
    """The text inside the log's stop-commands blocks, as the log viewer shows it, without the
    mark that starts each agent line."""
    blocks = re.finditer(r"::stop-commands::(\w+)\n(.*?)::\1::\n", log, re.DOTALL)
    text = "".join(block.group(2) for block in blocks)
    assert all(line.startswith(AGENT_MARK) for line in text.splitlines())
    return re.sub(f"(?m)^{AGENT_MARK}", "", text)


def test_long_lines_are_freed_early_and_report_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the long-line paths taken (thresholds lowered): a long segment, token deltas and
    result are decoded from text, logged in pieces, written to the result file in pieces, and
    the outputs, summary and log text are exactly those of the ordinary path."""
    segment = ("line é 🙂 `x`\n" * 300) + "no newline " * 300
    stream = _lines(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": segment}]}},
        {"type": "assistant", "message": {"content": "delta " * 200}, "timestamp_ms": 1},
        {"type": "assistant", "message": {"content": "and more " * 200}, "timestamp_ms": 2},
        {"type": "result", "subtype": "error", "is_error": True, "result": segment},
    )

    def run(where: Path) -> tuple[dict[str, str], str, str, str]:
        where.mkdir()
        runner, log = _runner(where)
        record = process_stream(io.BytesIO(stream), runner)
        report(record, runner, result_dir=where)
        outputs = parse_output_file((where / "out").read_text())
        result = Path(outputs.pop("result-file")).read_text()
        outputs.pop("files-changed-file")
        return outputs, (where / "summary.md").read_text(), _agent_text(log.getvalue()), result

    ordinary = run(tmp_path / "ordinary")
    monkeypatch.setattr(events, "HUGE_LINE_BYTES", 1000)
    monkeypatch.setattr(pipeline, "RELEASE_LINE_BYTES", 1000)
    monkeypatch.setattr(pipeline, "WRITE_PIECE_CHARS", 777)
    monkeypatch.setattr(logrender, "LOG_PIECE_CHARS", 500)
    long_paths = run(tmp_path / "long")
    assert long_paths[:2] == ordinary[:2]
    assert long_paths[2].replace("\n", "") == ordinary[2].replace("\n", "")  # cut mid-line
    assert segment + "\n" + "delta " * 200 + "and more " * 200 == ordinary[2].rstrip("\n")
    assert long_paths[3] == ordinary[3] == segment
    assert "> cursor-agent reported an error (result subtype 'error', is\\_error true): line é" in (
        ordinary[1]
    )  # the reason quotes the start of a result that is far longer


def test_log_pieces_cut_after_newlines_and_lose_nothing() -> None:
    text = "ab\n" * 10 + "c" * 12
    pieces = list(logrender.log_pieces(text, 7))
    assert "".join(pieces) == text
    assert all(len(piece) <= 7 for piece in pieces)
    assert pieces[:3] == ["ab\nab\n"] * 3
    assert pieces[-2:] == ["ccccccc", "ccccc"]  # no newline in reach: cut at the size
    assert list(logrender.log_pieces("short", 7)) == ["short"]


@pytest.mark.parametrize("kind", ["assistant", "result", "delta", "tool"])
def test_a_long_text_line_is_processed_holding_about_twice_its_size(
    tmp_path: Path, kind: str
) -> None:
    """12 MiB of agent text on one line (over HUGE_LINE_BYTES): the whole run, log and report
    included, never holds more than the line plus its decoded text (and small change)."""
    text = "The agent explains what it changed and why.\n" * (12 * 2**20 // 44)
    event: object = {
        "assistant": {"type": "assistant",
                      "message": {"content": [{"type": "text", "text": text}]}},
        "result": {"type": "result", "subtype": "success", "is_error": False, "result": text},
        "delta": {"type": "assistant", "message": {"content": text}, "timestamp_ms": 1},
        "tool": {"type": "tool_call", "subtype": "completed", "call_id": "c", "tool_call": {
            "shellToolCall": {"args": {"command": "make"}, "result": {"success": {
                "exitCode": 2, "stdout": text}}}}},
    }[kind]
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(json.dumps(event).encode() + b"\n")
    size = transcript.stat().st_size
    with open(os.devnull, "w") as null:
        runner = Runner(stdout=null, env=RUNNER_ENV, output_file=tmp_path / "out",
                        summary_file=tmp_path / "summary.md")  # fmt: skip
        tracemalloc.start()
        try:
            with transcript.open("rb") as source:
                record = process_stream(source, runner)
            report(record, runner, result_dir=tmp_path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    if kind != "tool":
        outputs = parse_output_file((tmp_path / "out").read_text())
        assert Path(outputs["result-file"]).read_text() == text
    assert peak < 2.3 * size, f"peak {peak / size:.2f}x the line"
