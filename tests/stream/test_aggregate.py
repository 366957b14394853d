"""aggregate: events -> the stream result (text reconstruction, tool calls, files, its verdict)."""

from __future__ import annotations

import json

import pytest

from cursor_agent_action.stream.aggregate import Aggregator
from cursor_agent_action.stream.events import parse_line
from cursor_agent_action.stream.paths import workspace_relative
from tests.support.stream import FIXTURES, applied_record

_record = applied_record


def _say(text: str, **extra: object) -> bytes:
    return json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}, **extra}
    ).encode()


def _call(
    sub: str, call_id: str, kind: str = "shellToolCall", result: object = None, **args: object
) -> bytes:
    inner: dict[str, object] = {"args": args}
    if result is not None:
        inner["result"] = result
    return json.dumps(
        {"type": "tool_call", "subtype": sub, "call_id": call_id, "tool_call": {kind: inner}}
    ).encode()


def _without_result(path: str) -> tuple[list[bytes], str]:
    lines = (FIXTURES / path).read_bytes().splitlines()
    result = json.loads(lines[-1])
    assert result["type"] == "result"
    return lines[:-1], result["result"]


@pytest.mark.parametrize(
    "fixture", ["corpus-segmented-turn.jsonl", "corpus-parallel-sleep.jsonl", "docs-update.jsonl"]
)
def test_reconstruction_equals_the_clis_own_result_text(fixture: str) -> None:
    """Without the result event, the reconstructed text is exactly what the CLI reported:
    partial-output deltas, their model_call_id repeat and the final repeat never double."""
    lines, expected = _without_result(fixture)
    record = _record(lines)
    assert record.result_text == expected
    assert not record.has_result
    assert not record.succeeded
    assert expected.endswith(record.final_message)


def test_delta_forms_each_segment_once() -> None:
    record = _record(
        [
            _say("Hel", timestamp_ms=1),
            _say("lo.", timestamp_ms=2),
            _say("Hello.", timestamp_ms=3, model_call_id="m1"),
            _say("Whole segment.", timestamp_ms=4, model_call_id="m2"),
            _say("Bye", timestamp_ms=5),
            _say(" now.", timestamp_ms=6),
            _say("Bye now."),
        ]
    )
    assert record.result_text == "Hello.Whole segment.Bye now."
    assert record.final_message == "Bye now."


def test_deltas_cut_off_before_their_repeat_still_count() -> None:
    record = _record(
        [
            _say("Done", timestamp_ms=1),
            _say(" so far", timestamp_ms=2),
            _call("started", "c1", command="ls"),
        ]
    )
    assert record.result_text == "Done so far"
    assert record.final_message == "Done so far"


def test_late_repeat_after_a_tool_call_is_not_doubled() -> None:
    """Deltas flushed by a tool call, then the whole repeat: the segment counts once."""
    record = _record(
        [
            _say("Let me", timestamp_ms=1),
            _say(" look.", timestamp_ms=2),
            _call("started", "c1", command="ls"),
            _say("Let me look.", timestamp_ms=3, model_call_id="m1"),
            _say("Let me look."),  # a genuine second segment with the same words
        ]
    )
    assert record.result_text == "Let me look.Let me look."


def test_result_text_wins_over_reconstruction() -> None:
    result = json.dumps(
        {"type": "result", "subtype": "success", "is_error": False, "result": "from CLI"}
    ).encode()
    record = _record([_say("mine"), result])
    assert (record.result_text, record.final_message) == ("from CLI", "mine")
    assert record.succeeded
    assert record.failure == ""


def test_tool_calls_counted_by_call_id_in_every_order() -> None:
    ok = {"success": {"exitCode": 0}}
    record = _record(
        [
            _call("started", "a\nx|1", command="one"),
            _call("started", "b", command="two"),
            _call("completed", "b", result={"rejected": {"reason": "no"}}, command="two"),
            _call("completed", "c", result=ok, command="three"),  # never started
            _call("completed", "a\nx|1", result=ok, command="one"),
            _call("completed", "a\nx|1", result=ok, command="one"),  # repeated completion
        ]
    )
    assert [c.call_id for c in record.tool_calls] == ["a\nx|1", "b", "c"]
    assert [c.outcome for c in record.tool_calls] == ["success", "rejected", "success"]
    assert [c.target for c in record.grouped().denied] == ["two"]
    assert record.grouped().failed == []  # a refusal is not also a failure
    assert [c.detail for c in record.grouped().denied] == ["no"]


def test_started_but_never_completed_is_pending_not_failed() -> None:
    record = _record([_call("started", "a", command="sleep 99")])
    (call,) = record.tool_calls
    assert call.outcome == "pending"
    assert record.grouped().pending == [call]
    assert record.grouped().failed == []


def test_duration_from_timestamps_then_execution_time() -> None:
    timed = json.dumps(
        {
            "type": "tool_call",
            "subtype": "completed",
            "call_id": "t",
            "tool_call": {
                "readToolCall": {"args": {}, "result": {"success": {}}},
                "startedAtMs": "1000",
                "completedAtMs": "1250",
            },
        }
    ).encode()
    record = _record([timed, _call("completed", "e", result={"success": {"executionTime": 77}})])
    assert [c.duration_ms for c in record.tool_calls] == [250, 77]


def _init(cwd: str) -> bytes:
    return json.dumps({"type": "system", "subtype": "init", "cwd": cwd}).encode()


def test_files_changed_only_for_successful_writes_relative_to_workspace() -> None:
    ok: dict[str, object] = {"success": {}}
    record = _record(
        [
            _init("/private/tmp/ws"),
            _call("completed", "1", "editToolCall", ok, path="/tmp/ws/b.md"),
            _call("completed", "2", "writeToolCall", ok, path="a/../a.md"),
            _call("completed", "3", "deleteToolCall", ok, path="/private/tmp/ws/old/c.md"),
            _call("completed", "4", "writeToolCall", {"error": {}}, path="/tmp/ws/failed.md"),
            _call("completed", "5", "readToolCall", ok, path="/tmp/ws/read.md"),
            _call("completed", "6", "editToolCall", ok, path="/tmp/ws/b.md"),
        ]
    )
    assert record.files_changed == ("a.md", "b.md", "old/c.md")


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("/w/repo/x.py", "/w/repo", "x.py"),
        ("/w/repo/", "/w/repo", "."),
        ("./x/./y", "/w/repo", "x/y"),
        ("/w/repository/x", "/w/repo", "/w/repository/x"),  # a prefix is not a parent
        ("/etc/passwd", "/w/repo", "/etc/passwd"),
        ("/tmp/a/b", "/private/tmp/a", "b"),
        ("/private/var/x/y", "/var/x", "y"),
        ("C:\\ws\\README.md", "C:\\ws", "README.md"),
        ("c:/WS/docs/a.md", "C:\\ws", "docs/a.md"),
        ("x.py", "", "x.py"),
    ],
)
def test_workspace_relative(path: str, cwd: str, expected: str) -> None:
    assert workspace_relative(path, cwd) == expected


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ([], "The transcript is empty"),
        ([b"banner", b"[1]"], "No stream-json event found: none of the 2 non-blank lines"),
        ([_say("hi")], "The stream ended without a result event after 1 events"),
        (
            [
                json.dumps(
                    {"type": "result", "subtype": "error_max_turns", "result": "too long"}
                ).encode()
            ],
            "cursor-agent reported an error (result subtype 'error_max_turns'): too",
        ),
        (
            [json.dumps({"type": "result", "subtype": "success", "is_error": True}).encode()],
            "is_error true",
        ),
    ],
)
def test_failure_reasons(lines: list[bytes], reason: str) -> None:
    record = _record(lines)
    assert not record.succeeded
    assert reason in record.failure


def test_thousands_of_calls_keep_bounded_text() -> None:
    lines = [
        _call(
            "completed",
            f"id{i}",
            result={"error": {"errorMessage": "e" * 10_000}},
            command="c" * 5000,
        )
        for i in range(3000)
    ]
    record = _record(lines)
    assert len(record.tool_calls) == 3000 == len(record.grouped().failed)
    assert max(len(c.target) for c in record.tool_calls) <= 1000
    assert max(len(c.detail) for c in record.tool_calls) <= 4000


def test_the_result_separates_segments_the_cli_ran_together() -> None:
    """The CLI's result is every segment joined with nothing between ("…then reply.done"):
    when every segment is kept and they make exactly that text, a blank line separates them."""
    def say(text: str) -> bytes:
        return json.dumps({"type": "assistant", "session_id": "s", "model_call_id": "m",
                           "message": {"role": "assistant",
                                       "content": [{"type": "text", "text": text}]}}).encode()

    def result(text: str) -> bytes:
        return json.dumps({"type": "result", "subtype": "success", "is_error": False,
                           "result": text, "session_id": "s"}).encode()

    aggregator = Aggregator()
    first = "I'll run it, then reply."
    for line in (say(first), say("done"), result(first + "done")):
        aggregator.apply(parse_line(line))
    assert aggregator.finish().result_text == "I'll run it, then reply.\n\ndone"
    other = Aggregator()  # a result that is not the segments joined is kept as the CLI sent it
    for line in (say("one"), say("two"), result("something else")):
        other.apply(parse_line(line))
    assert other.finish().result_text == "something else"
