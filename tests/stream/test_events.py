"""events: one line -> one typed event, never an exception."""

from __future__ import annotations

import json

import pytest

from cursor_agent_action.stream import events
from cursor_agent_action.stream.events import (
    THINKING,
    AssistantEvent,
    InitEvent,
    InteractionEvent,
    MalformedLine,
    ResultEvent,
    SystemEvent,
    UnknownEvent,
    UserEvent,
    delta_text,
    parse_line,
    take_line,
)
from cursor_agent_action.stream.toolcalls import ToolCallEvent


def _line(obj: object) -> bytes:
    return json.dumps(obj).encode()


def _tool(sub: str, tool_call: dict[str, object], call_id: str = "c1") -> ToolCallEvent:
    event = parse_line(
        _line({"type": "tool_call", "subtype": sub, "call_id": call_id, "tool_call": tool_call})
    )
    assert isinstance(event, ToolCallEvent)
    return event


def test_init_and_result_fields() -> None:
    init = parse_line(
        _line(
            {
                "type": "system",
                "subtype": "init",
                "session_id": "s",
                "model": "Auto",
                "cwd": "/w",
                "permissionMode": "default",
            }
        )
    )
    assert init == InitEvent("s", "Auto", "/w", "default")
    result = parse_line(
        _line(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": "done",
                "duration_ms": 12,
                "session_id": "s",
                "request_id": "r",
                "usage": {"inputTokens": 5, "outputTokens": "6", "cacheReadTokens": True},
            }
        )
    )
    assert isinstance(result, ResultEvent)
    assert (result.result, result.duration_ms, result.is_error) == ("done", 12, False)
    assert result.usage == {"input": 5, "output": 6, "cache_read": None, "cache_write": None}


def test_is_error_must_be_literally_true() -> None:
    event = parse_line(_line({"type": "result", "subtype": "success", "is_error": "false"}))
    assert isinstance(event, ResultEvent)
    assert not event.is_error


def test_assistant_forms() -> None:
    def msg(**extra: object) -> AssistantEvent:
        event = parse_line(
            _line(
                {
                    "type": "assistant",
                    "message": {
                        "content": [
                            {"type": "text", "text": "a"},
                            {"type": "image"},
                            {"type": "text", "text": "b"},
                        ]
                    },
                    **extra,
                }
            )
        )
        assert isinstance(event, AssistantEvent)
        return event

    assert msg(timestamp_ms=5).is_delta
    assert not msg(timestamp_ms=5, model_call_id="m").is_delta
    final = msg()
    assert not final.is_delta
    assert final.text == "ab"


def test_thinking_is_skipped_without_decoding_but_same_as_decoded() -> None:
    assert parse_line(b'{"type":"thinking","subtype":"delta","text":"\xff not utf8"}') is THINKING
    assert parse_line(b'{"subtype":"delta","type":"thinking"}') is THINKING
    # A truncated thinking line is not passed off as an event.
    assert isinstance(parse_line(b'{"type":"thinking","subtype":"del'), MalformedLine)


def test_tool_key_is_picked_among_siblings() -> None:
    """The `*ToolCall` key is found whatever its position among toolCallId and friends."""
    event = _tool(
        "completed",
        {
            "hookAdditionalContexts": [],
            "toolCallId": "x",
            "startedAtMs": "100",
            "completedAtMs": 250,
            "shellToolCall": {"args": {"command": "ls"}, "result": {"success": {}}},
        },
    )
    assert (event.kind, event.target, event.outcome) == ("shell", "ls", "success")
    assert (event.started_at_ms, event.completed_at_ms) == (100, 250)


def test_outcome_is_picked_among_siblings_such_as_is_background() -> None:
    event = _tool(
        "completed",
        {
            "shellToolCall": {
                "args": {"command": "false"},
                "result": {"isBackground": False, "success": {"exitCode": 1}},
            }
        },
    )
    assert (event.outcome, event.exit_code, event.detail) == ("success", 1, "")


@pytest.mark.parametrize(
    ("result", "outcome", "detail"),
    [
        ({"error": {"errorMessage": "boom"}}, "error", "boom"),
        ({"rejected": {"command": "rm", "reason": "not allowed"}}, "rejected", "not allowed"),
        ({"permissionDenied": {"error": "blocked"}}, "permissionDenied", "blocked"),
        ({"spawnError": {"error": {"message": "ENOENT"}}}, "spawnError", "ENOENT"),
        ({"timeout": {}}, "timeout", ""),
        ({"brandNew": {"message": "hm"}}, "brandNew", "hm"),
        ({}, "unknown", ""),
    ],
)
def test_outcomes_and_details(result: dict[str, object], outcome: str, detail: str) -> None:
    event = _tool("completed", {"readToolCall": {"args": {"path": "a"}, "result": result}})
    assert (event.outcome, event.detail) == (outcome, detail)


def test_targets_per_kind() -> None:
    grep = _tool("started", {"grepToolCall": {"args": {"path": "src", "pattern": "TODO"}}})
    mcp = _tool("started", {"mcpToolCall": {"args": {"providerIdentifier": "gh", "toolName": "t"}}})
    unknown = _tool("started", {"fooToolCall": {"args": {"n": 1, "url": "https://x"}}})
    func = _tool(
        "completed",
        {"function": {"name": "f", "arguments": '{"command": "c"}'}, "result": {"success": {}}},
    )
    assert (grep.kind, grep.target) == ("grep", "TODO")
    assert (mcp.kind, mcp.target) == ("mcp", "gh:t")
    assert (unknown.kind, unknown.target) == ("foo", "https://x")
    assert (func.kind, func.target, func.outcome) == ("function", "f", "success")


def test_other_events() -> None:
    assert parse_line(_line({"type": "user", "message": {"content": "hi"}})) == UserEvent("hi")
    assert parse_line(_line({"type": "system", "subtype": "x"})) == SystemEvent("x")
    assert parse_line(
        _line({"type": "interaction_query", "subtype": "request", "query_type": "q"})
    ) == InteractionEvent("request", "q")
    assert parse_line(_line({"type": "new", "subtype": 3})) == UnknownEvent("new", "")


@pytest.mark.parametrize(
    "line",
    [
        b"Press any key",
        b"[1,2]",
        b"42",
        b"null",
        b'"s"',
        b'{"type":',
        b"{}}",
        b"\xff\xfe",
        b'{"type":"tool_call","tool_call":[1]}x',
    ],
)
def test_not_an_object_is_malformed_with_reason_and_preview(line: bytes) -> None:
    event = parse_line(line)
    assert isinstance(event, MalformedLine)
    assert event.reason
    assert len(event.preview) <= 1024


def test_wrong_field_types_never_raise() -> None:
    weird = {
        "type": "tool_call",
        "subtype": "completed",
        "call_id": 7,
        "tool_call": {"shellToolCall": {"args": [1], "result": {"success": "yes"}}},
    }
    event = parse_line(_line(weird))
    assert isinstance(event, ToolCallEvent)
    assert (event.call_id, event.target, event.outcome, event.exit_code) == (
        "",
        "",
        "success",
        None,
    )


def test_invalid_utf8_is_replaced_not_dropped() -> None:
    event = parse_line(b'{"type":"user","message":{"content":"caf\xc3\xa9 \xff!"}}')
    assert event == UserEvent("café \ufffd!")


def test_invalid_escape_is_repaired() -> None:
    """A stray backslash (real captures contain "C:\\ws") keeps the rest of the event."""
    event = parse_line(b'{"type":"user","message":{"content":"C:\\ws \\\\ok \\n"}}')
    assert event == UserEvent("C:\\ws \\ok \n")


def test_bom_inside_stream_is_tolerated() -> None:
    assert parse_line(b'\xef\xbb\xbf{"type":"user","message":{"content":"x"}}') == UserEvent("x")


def test_invalid_utf8_and_invalid_escape_together_are_both_repaired() -> None:
    event = parse_line(b'\xef\xbb\xbf{"type":"user","message":{"content":"\xff C:\\ws"}}')
    assert event == UserEvent("\ufffd C:\\ws")


@pytest.mark.parametrize(
    "line",
    [
        _line({"type": "assistant",
               "message": {"content": [{"type": "text", "text": "a\nb é 🙂" * 50}]}}),
        _line({"type": "result", "subtype": "success", "result": "x" * 300, "duration_ms": 5}),
        b'{"type":"user","message":{"content":"caf\xc3\xa9 \xff! ' + b"y" * 300 + b'"}}',
        b'{"type":"user","message":{"content":"lone \\ud800 surrogate' + b"y" * 300 + b'"}}',
        b'{"type":"result","duration_ms":NaN,"result":"' + b"y" * 300 + b'"}',
        b'{"type":"user","message":{"content":"C:\\ws ' + b"y" * 300 + b'"}}',
        b'\xef\xbb\xbf{"type":"user","message":{"content":"' + b"y" * 300 + b'"}}',
        b"[" + b"1," * 200 + b"1]",
    ],
)
def test_take_line_of_a_long_line_matches_parse_line(
    line: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long line decoded by the stdlib (bytes freed first) gives exactly the event orjson
    gives: same text, same repairs, same refusals (lone surrogates, NaN, non-objects)."""
    monkeypatch.setattr(events, "HUGE_LINE_BYTES", 100)
    holder: list[object] = [b"before", bytearray(line)]
    assert take_line(holder, 1) == parse_line(line)
    assert holder == [b"before", b""]  # the list no longer holds the line


def test_delta_text_takes_the_raw_line() -> None:
    holder: list[object] = [_line({"type": "assistant", "message": {"content": "hi"},
                                   "timestamp_ms": 1})]  # fmt: skip
    assert delta_text(holder, 0) == "hi"
    assert holder == [b""]


@pytest.mark.parametrize("line", [b'{"a":"x\\', b'{"a":1', b"hello", b'{"a":1} x', b'{"a":"C:\\ws"',
                                  b"[1]", b'{"a":"\xff', b"\xef\xbb\xbf{"])  # fmt: skip
@pytest.mark.parametrize("end", [b"\n", b"\r\n"])
def test_a_bad_line_reads_the_same_with_the_newline_the_framing_keeps(
    line: bytes, end: bytes
) -> None:
    """A complete line comes with its newline, the stream's last one without: a bad line is
    reported (reason and preview) the same either way, even one cut after a backslash."""
    assert parse_line(line + end) == parse_line(line + end[:-1])
