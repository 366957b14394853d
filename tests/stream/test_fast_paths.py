"""Every shortcut of the stream's hot path gives exactly what its careful counterpart gives.

The engine keeps pace with tool-heavy runs through fast paths (bench/README.md): tool calls and
segments read with plain lookups, typed entry points instead of ``Aggregator.apply``, hints
searched in reversed text (short) or on the UTF-8 bytes behind memchr anchors (long), secrets
and control characters found on the UTF-8 bytes, a log flush that searches only its entries'
contents, tool-call titles built in one piece. Each is checked here against the slow, obvious
version on generated input, so a fast path can never report, redact or print something else.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cursor_agent_action import runner_io
from cursor_agent_action.logsafe import neutral
from cursor_agent_action.markdown import escape_invisible
from cursor_agent_action.redact import (
    _HINT_SHORT,
    _PATTERN_HINTS,
    Redactor,
    has_hint,
    has_hint_utf8,
)
from cursor_agent_action.runner_io import _CONTROL, Runner, _visible, has_control, one_line
from cursor_agent_action.stream import toolcalls
from cursor_agent_action.stream.aggregate import SEGMENTS_KEPT_CHARS, Aggregator
from cursor_agent_action.stream.engine import load_report
from cursor_agent_action.stream.events import AssistantEvent, _assistant, _message_text, parse_line
from cursor_agent_action.stream.record import StreamResult, ToolCallRecord
from cursor_agent_action.stream.render.livelog import LogRenderer, describe_outcome, format_duration
from cursor_agent_action.stream.toolcalls import (
    ToolCallEvent,
    json_int,
    parse_any_tool_call,
    parse_tool_call,
)
from tests.stream.test_hypothesis import events
from tests.support.stream import applied_record

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Any JSON value, small: what a field of the wrong type can hold.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**14) | st.floats(allow_nan=False)
    | st.sampled_from(["", "x", "12", "\uff11\uff12", "+12", "1_0", " 7", "-3", "success"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=6,
)  # fmt: skip
KEYS = st.sampled_from([*toolcalls._KIND_NAMES, "mcpToolCall", "getMcpToolsToolCall",
                        "function", "newToolCall", "ToolCall", "x"])  # fmt: skip
TEXT = st.one_of(st.sampled_from(["ls -la", "/w/src/a.py", "src/a.py", "", "pat"]), JSON_VALUES)


def _maybe(draw: st.DrawFn, value: object) -> object:
    """The value as the CLI sends it, or (rarely) anything else, or nothing."""
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return draw(JSON_VALUES)
    if choice == 1:
        return _MISSING
    return value


_MISSING = object()


def _dict(**fields: object) -> dict[str, object]:
    return {key: value for key, value in fields.items() if value is not _MISSING}


@st.composite
def tool_call_objects(draw: st.DrawFn) -> dict[str, object]:
    """A tool_call event: mostly the shape every capture has, any field possibly odd."""
    names = st.sampled_from(["command", "path", "pattern", "globPattern", "query", "name",
                             "toolName", "providerIdentifier", "arguments"])  # fmt: skip
    args = _maybe(draw, draw(st.dictionaries(names, TEXT, max_size=3)))
    payload = _maybe(draw, draw(st.dictionaries(
        st.sampled_from(["exitCode", "totalLines", "content", "path", "linesAdded"]),
        JSON_VALUES, max_size=3)))  # fmt: skip
    outcome = draw(st.sampled_from(["success", "success", "error", "rejected", "weird"]))
    result = _maybe(draw, {outcome: payload, "isBackground": False})
    inner = _maybe(draw, _dict(args=args, result=result))
    started = _maybe(draw, str(draw(st.integers(0, 10**13))))
    completed = _maybe(draw, str(draw(st.integers(0, 10**13))))
    key = draw(KEYS)
    calls = {key: inner, "toolCallId": draw(st.sampled_from(["t1", "", 3])),
             "startedAtMs": started, "completedAtMs": completed}
    if draw(st.booleans()):  # another key first
        calls = {"hookAdditionalContexts": {}, **calls}
    tool_call = _maybe(draw, _dict(**calls))
    subtype = draw(st.sampled_from(["started", "completed", "x"]))
    call_id = _maybe(draw, draw(st.sampled_from(["c1", "c\n2", ""])))
    timestamp_ms = _maybe(draw, draw(st.integers(0, 10**13)))
    return _dict(type="tool_call", subtype=subtype, call_id=call_id, tool_call=tool_call,
                 timestamp_ms=timestamp_ms)  # fmt: skip


def _usual(subtype: str, started: object = "1") -> dict[str, Any]:
    args = {"command": "pytest -q", "toolCallId": "c1"}
    inner: dict[str, Any] = {"args": args}
    if subtype == "completed":
        inner["result"] = {"success": {"exitCode": 0, "stdout": "ok"}, "isBackground": False}
    return {"type": "tool_call", "subtype": subtype, "call_id": "c1", "timestamp_ms": 5,
            "tool_call": {"shellToolCall": inner, "toolCallId": "c1", "startedAtMs": started,
                          "completedAtMs": "9"}}  # fmt: skip


@example(obj=_usual("started"))
@example(obj=_usual("completed"))
# Times int() reads but the careful parser does not (or reads otherwise): the shortcut must not.
@example(obj=_usual("completed", "\uff11\uff12"))
@example(obj=_usual("completed", "+12"))
@example(obj=_usual("completed", "1_0"))
@example(obj=_usual("completed", " 7"))
@example(obj=_usual("completed", 7))
# The two clocks are checked as one string: one empty, or both of a type that adds up.
@example(obj=_usual("completed", ""))
@example(obj={**_usual("completed"), "tool_call": {
    **_usual("completed")["tool_call"], "startedAtMs": ["1"], "completedAtMs": ["2"]}})
@example(obj={**_usual("completed"), "tool_call": {
    **_usual("completed")["tool_call"], "startedAtMs": "12", "completedAtMs": ""}})
@given(obj=tool_call_objects())
def test_the_tool_call_fast_path_gives_the_careful_parsers_event(obj: dict[str, Any]) -> None:
    subtype = obj.get("subtype")
    subtype = subtype if isinstance(subtype, str) else ""
    assert parse_tool_call(obj, subtype) == parse_any_tool_call(obj, subtype)


@pytest.mark.parametrize("subtype", ["started", "completed"])
def test_the_usual_tool_call_shape_takes_the_fast_path(
    subtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without this, the equivalence above could hold because nothing ever took the shortcut."""

    def refuse(obj: object, subtype: str) -> object:
        raise AssertionError("the careful parser was called for the usual shape")

    monkeypatch.setattr(toolcalls, "parse_any_tool_call", refuse)
    event = parse_tool_call(_usual(subtype), subtype)
    assert (event.kind, event.target, event.call_id) == ("shell", "pytest -q", "c1")


def _careful_assistant(obj: dict[str, Any]) -> AssistantEvent:
    """What parse_object built for an assistant event before the fast path."""
    model_call_id = obj.get("model_call_id")
    return AssistantEvent(_message_text(obj.get("message")),
                          model_call_id if isinstance(model_call_id, str) and model_call_id
                          else None, json_int(obj.get("timestamp_ms")))  # fmt: skip


@st.composite
def assistant_objects(draw: st.DrawFn) -> dict[str, object]:
    part = _maybe(draw, _dict(type=_maybe(draw, "text"), text=_maybe(draw, "hello")))
    content = draw(st.sampled_from(["list1", "list2", "str", "odd"]))
    if content == "list1":
        parts: object = [part]
    elif content == "list2":
        parts = [part, {"type": "text", "text": " world"}]
    elif content == "str":
        parts = draw(st.sampled_from(["", "x", "xy"]))
    else:
        parts = draw(JSON_VALUES)
    message = _maybe(draw, _dict(role="assistant", content=_maybe(draw, parts)))
    return _dict(type="assistant", message=message, model_call_id=_maybe(draw, "m1"),
                 timestamp_ms=_maybe(draw, 7))  # fmt: skip


@given(obj=assistant_objects())
def test_the_segment_fast_path_gives_the_careful_event(obj: dict[str, Any]) -> None:
    assert _assistant(obj) == _careful_assistant(obj)


HINTY_TEXT = st.lists(st.one_of(st.sampled_from([*_PATTERN_HINTS, "_", "-", "A", "I", "z", "J",
                                                 "gh", "ey", "xo", "\u2192"]),
                                st.text(max_size=6)), max_size=12).map("".join)  # fmt: skip


@given(text=HINTY_TEXT)
def test_hints_found_in_reversed_text_are_the_hints_in_the_text(text: str) -> None:
    assert has_hint(text) == any(hint in text for hint in _PATTERN_HINTS)


@given(text=HINTY_TEXT, pad=st.sampled_from(["", "a", "\u2192", "\ud800"]))
def test_hints_found_on_the_bytes_of_a_long_text_are_the_hints_in_the_text(
    text: str, pad: str
) -> None:
    """Past _HINT_SHORT characters the search runs forward over the UTF-8 bytes, one expression
    per first character: the same answer, whatever the text's characters."""
    long_text = pad * (_HINT_SHORT + 1) + text + pad
    expected = any(hint in long_text for hint in _PATTERN_HINTS)
    assert has_hint(long_text) == expected
    assert has_hint_utf8(long_text.encode("utf-8", "surrogatepass")) == expected


@given(text=HINTY_TEXT | st.text(max_size=30),
       secret=st.sampled_from(["s3cr3t-v4lue", "pässwörd→1", "\U0001f600pin", "k\udcffey-1",
                                     "k\ud800ey!"]))
def test_a_secret_is_found_on_the_bytes_exactly_when_it_is_in_the_text(
    text: str, secret: str
) -> None:
    redactor = Redactor([secret])
    found = redactor.finds_utf8(text.encode("utf-8", "surrogatepass"))
    assert found == (any(form in text for form in redactor._values) or has_hint(text))
    assert redactor.finds_utf8(f"a{text}{secret}→".encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("hint", _PATTERN_HINTS)
def test_a_hint_across_a_window_edge_of_a_long_text_is_found(hint: str) -> None:
    """Long texts are searched a 1 MiB window at a time; a hint cut by a window edge counts."""
    window = 1024 * 1024
    for offset in range(1, len(hint)):
        text = "a" * (window - offset) + hint + "b" * 100
        assert has_hint(text), (hint, offset)
    assert not has_hint("a" * (3 * window))


@given(text=st.text(st.characters(blacklist_categories=()), max_size=40))
@example(text="\x85")
@example(text="·\u0085x")
@example(text="\ud800")
def test_control_characters_found_on_the_bytes_are_those_the_expression_finds(text: str) -> None:
    assert has_control(text) == bool(_CONTROL.search(text))


class FullPassRunner(Runner):
    """The Runner without its fast paths: every entry's content redacted and neutralised,
    then one control and invisible pass over the whole buffered text."""

    def flush(self) -> None:
        if self._buffer:
            parts = self._buffer
            text = "".join(part if index % 3 != 1 else neutral(self.redact(part))
                           for index, part in enumerate(parts))
            if _CONTROL.search(text):
                text = _CONTROL.sub(_visible, text)
            self._out.write(escape_invisible(text))
            self._buffer.clear()
            self._buffered = 0


# Texts that try every trick the flush must see through: secrets (plain and encoded), the
# patterns' hints and whole matches, controls, command and log-format lines.
SECRET = "s3cr3t-v4lue"
WIDE_SECRET = "pässwörd→1"  # found on the UTF-8 bytes the flush searches
FLUSH_TEXT = st.lists(st.sampled_from([
    SECRET, WIDE_SECRET, "pässwörd", "czNjcjN0LXY0bHVl", "s3cr3t", "ghp_" + "a" * 36,
    "sk-ant-" + "b" * 24, "AKIA", "eyJ",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n", "\x1b[31m", "\r", "\x85", "##[error]", "::",
    "\n", " ", "  ", "%", "→", "a", "text", "\u202e", "\u200b", "\U000e0041", "\u2028",
]), max_size=8).map("".join)  # fmt: skip
OPS = st.lists(st.tuples(st.sampled_from(["log", "untrusted", "entry", "group", "warning"]),
                         FLUSH_TEXT), max_size=12)  # fmt: skip


def _tokens() -> Iterator[str]:
    return (f"{n:032x}" for n in itertools.count(0xABCDEF))


def _replay(runner_class: type[Runner], ops: list[tuple[str, str]],
            monkeypatch: pytest.MonkeyPatch) -> str:  # fmt: skip
    tokens = _tokens()
    monkeypatch.setattr(runner_io, "random_token", lambda: next(tokens))
    out = io.StringIO()
    runner = runner_class(stdout=out, env={}, secrets=[SECRET, WIDE_SECRET])
    for op, text in ops:
        if op == "group":
            with runner.group(text):
                runner.untrusted(text)
        elif op == "warning":
            runner.warning(text, title=text)
        else:
            getattr(runner, op)(text)
    runner.flush()
    return out.getvalue()


@given(ops=OPS)
def test_the_contents_only_search_writes_the_same_log_as_a_full_pass(
    ops: list[tuple[str, str]]
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast = _replay(Runner, ops, monkeypatch)
        full = _replay(FullPassRunner, ops, monkeypatch)
    assert fast == full


@st.composite
def records(draw: st.DrawFn) -> StreamResult:
    calls = draw(st.lists(st.builds(
        ToolCallRecord, st.just("id"), st.sampled_from(["shell", "read"]), st.just("t"),
        st.sampled_from(["success", "error", "pending", "unknown", "rejected", "x"]),
        refused_by=st.sampled_from(["", "", "policy", "hook"])), max_size=30))  # fmt: skip
    return StreamResult(tool_calls=tuple(calls))


@given(record=records())
def test_grouped_sorts_each_call_as_its_own_predicates_say(record: StreamResult) -> None:
    """The one pass (which skips plain successes) gives what filtering every call would."""
    calls = record.tool_calls
    groups = record.grouped()
    assert groups.failed == [c for c in calls if c.failed]
    assert groups.denied == [c for c in calls if c.denied]
    assert groups.hook_denied == [c for c in calls if c.hook_denied]
    assert groups.unknown == [c for c in calls if c.outcome == "unknown"]
    assert groups.pending == [c for c in calls if c.outcome == "pending"]


def _dropped_by_the_old_loop(lengths: list[int], total: int) -> int:
    drop = 0
    while total > SEGMENTS_KEPT_CHARS // 2 and drop < len(lengths) - 1:
        total -= lengths[drop]
        drop += 1
    return drop


@given(lengths=st.lists(st.integers(1, SEGMENTS_KEPT_CHARS // 3), min_size=1, max_size=40))
def test_old_segments_are_dropped_as_one_at_a_time_would(lengths: list[int]) -> None:
    aggregator = Aggregator()
    lengths[0] += SEGMENTS_KEPT_CHARS  # over the cap, as when the aggregator calls it
    aggregator._segments = ["x" * n for n in lengths]
    aggregator._segment_chars = total = sum(lengths)
    aggregator._forget_segments()
    drop = _dropped_by_the_old_loop(lengths, total)
    assert len(aggregator._segments) == len(lengths) - drop
    assert aggregator._dropped_chars == sum(lengths[:drop])
    assert aggregator._segment_chars == total - sum(lengths[:drop])


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.stem)
def test_the_engine_builds_the_record_apply_builds(fixture: Path) -> None:
    assert load_report(fixture).stream == applied_record(fixture.read_bytes().splitlines())


@given(stream=st.lists(events(), max_size=25))
def test_the_engine_builds_the_record_apply_builds_for_any_stream(
    stream: list[dict[str, object]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    lines = [json.dumps(event).encode() for event in stream]
    path = tmp_path_factory.mktemp("stream") / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert load_report(path).stream == applied_record(lines)


def test_redaction_cut_and_flattening_of_targets_are_cached_per_workspace_and_secret() -> None:
    """A cached display target is dropped when the redactor learns a secret."""
    from cursor_agent_action.redact import Redactor

    redactor = Redactor()
    aggregator = Aggregator(redact=redactor)
    line = ('{"type":"tool_call","subtype":"started","call_id":"%s","timestamp_ms":1,'
            '"tool_call":{"shellToolCall":{"args":{"command":"echo hunter22"}}}}')  # fmt: skip
    aggregator.apply(parse_line((line % "a").encode()))
    redactor.add("hunter22")
    aggregator.apply(parse_line((line % "b").encode()))
    first, second = aggregator.finish().tool_calls
    assert (first.target, second.target) == ("echo hunter22", "echo ***")


def test_a_path_cached_before_the_workspace_is_known_is_made_relative_after() -> None:
    """Display targets are cached per workspace: once init names it, a path seen before is
    shown relative to it, as if nothing had been cached."""
    aggregator = Aggregator()
    line = ('{"type":"tool_call","subtype":"started","call_id":"%s","timestamp_ms":1,'
            '"tool_call":{"readToolCall":{"args":{"path":"/w/src/a.py"}}}}')  # fmt: skip
    aggregator.apply(parse_line((line % "a").encode()))
    aggregator.apply(parse_line(b'{"type":"system","subtype":"init","cwd":"/w"}'))
    aggregator.apply(parse_line((line % "b").encode()))
    first, second = aggregator.finish().tool_calls
    assert (first.target, second.target) == ("/w/src/a.py", "src/a.py")


def test_a_repeated_completion_of_a_settled_call_is_not_counted_again() -> None:
    """Past the rows the reports list, a successful call is settled; its repeated completion
    (the CLI has sent one) must not come back as a new call, and what remembers settled ids
    stays bounded."""
    aggregator = Aggregator()

    def line(subtype: str, n: int) -> bytes:
        result = ',"result":{"success":{}}' if subtype == "completed" else ""
        inner = f'{{"readToolCall":{{"args":{{"path":"f"}}{result}}}}}'
        return (f'{{"type":"tool_call","subtype":"{subtype}","call_id":"c{n}",'
                f'"timestamp_ms":1,"tool_call":{inner}}}').encode()

    for n in range(5000):
        aggregator.apply(parse_line(line("started", n)))
        aggregator.apply(parse_line(line("completed", n)))
    aggregator.apply(parse_line(line("completed", 4990)))  # a repeat of a recent settled call
    record = aggregator.finish()
    assert len(record.tool_calls) == 5000
    assert not record.grouped().pending
    assert len(aggregator._settled_now) + len(aggregator._settled_before) <= 2048
    assert re.fullmatch(r"c\d+", next(iter(aggregator._settled_now)))


def _plain_title(call: ToolCallRecord, event: ToolCallEvent | None) -> str:
    """The tool-call title as first written: parts, then the parts joined."""
    stats = ""
    if event is not None and (payload := event.payload):
        if event.kind == "edit" and "linesAdded" in payload:
            stats = f"+{payload.get('linesAdded')} -{payload.get('linesRemoved', 0)} lines"
        elif isinstance(count := payload.get("linesCreated"), int):
            stats = f"{count} line{'' if count == 1 else 's'} written"
        elif isinstance(count := payload.get("totalLines"), int):
            stats = f"{count} line{'' if count == 1 else 's'}"
    head = f"{call.kind} {one_line(call.target, 160)}" if call.target else call.kind
    outcome = call.outcome
    code = call.exit_code
    if outcome == "pending" or (code is not None and (code != 0 or outcome != "success")):
        outcome = describe_outcome(call)
    duration = format_duration(call.duration_ms)
    parts = [f"{head} → {outcome}", stats, duration]
    return " · ".join(part for part in parts if part)


@given(
    call=st.builds(
        ToolCallRecord, st.just("id"), st.sampled_from(["shell", "read", "edit", "x y"]),
        st.sampled_from(["", " ", "src/a.py", "a  b\nc", "%x", "p" * 200]),
        st.sampled_from(["success", "error", "pending", "unknown", "rejected"]),
        exit_code=st.sampled_from([None, 0, 1, -15]),
        duration_ms=st.sampled_from([None, -5, 0, 999, 1000, 59_999, 61_000]),
        refused_by=st.sampled_from(["", "hook"]),
    ),
    kind=st.sampled_from(["edit", "read", "write"]),
    payload=st.dictionaries(
        st.sampled_from(["linesAdded", "linesRemoved", "linesCreated", "totalLines", "x"]),
        st.sampled_from([0, 1, 7, True, "3", None]), max_size=3),
    completed=st.booleans(),
)  # fmt: skip
def test_a_tool_call_title_built_in_one_piece_is_the_parts_joined(
    call: ToolCallRecord, kind: str, payload: dict[str, Any], completed: bool
) -> None:
    event = ToolCallEvent("completed", "id", kind, "", {}, "success", payload, None, None, None)
    shown = event if completed else None
    renderer = LogRenderer(Runner(stdout=io.StringIO(), env={}))
    assert renderer.call_title(call, shown) == _plain_title(call, shown)
    assert renderer.call_title(call, shown) == _plain_title(call, shown)  # from the cache


@pytest.mark.parametrize("named", ["", "a.py", "b.py", None, 7])
@pytest.mark.parametrize("written", ["", "a.py", "b.py", None, ["a.py"]])
def test_the_paths_of_a_call_are_its_distinct_non_empty_paths_in_order(
    named: object, written: object
) -> None:
    event = ToolCallEvent("completed", "id", "edit", "", {"path": named}, "success",
                          {"path": written}, None, None, None)  # fmt: skip
    texts = [value if isinstance(value, str) else "" for value in (named, written)]
    expected = [path for path in dict.fromkeys(texts) if path]
    assert event.paths == expected
