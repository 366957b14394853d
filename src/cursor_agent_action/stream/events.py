"""Lines to typed events. :func:`parse_line` never raises: every line becomes an event.

Shapes follow what the Cursor CLI really emits with ``--output-format stream-json`` (real
captures are in tests/fixtures/corpus-*.jsonl): fields can be missing or of the wrong
type, unknown event types and tool kinds appear over time, and some lines are not JSON at all.
Unknown things are kept generically (:class:`UnknownEvent`, a tool ``kind`` equal to the raw
key) rather than dropped, and nothing here trusts a field's type.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from cursor_agent_action.stream.framing import BOM, MAX_LINE_BYTES, CutLine, Line
from cursor_agent_action.stream.notices import answer_fields, notice_fields, query_fields
from cursor_agent_action.stream.toolcalls import (
    ToolCallEvent,
    json_dict,
    json_int,
    json_str,
    parse_tool_call,
)

# Thinking deltas are most of a real stream and are never shown: recognised by their prefix
# (the CLI always writes "type" first, compactly) and skipped without decoding. Assistant token
# deltas (no "model_call_id" key) are decoded only if their whole-segment repeat never comes.
# A key cannot be faked by text: a quote inside a JSON string is always escaped.
THINKING_PREFIX = b'{"type":"thinking"'
ASSISTANT_PREFIX = b'{"type":"assistant"'
MODEL_CALL_KEY = b'"model_call_id":'
TIMESTAMP_KEY = b'"timestamp_ms":'
# How a complete event line ends: with its newline (the framing keeps it; CRLF files too), or
# without one (the last line of a stream that does not end in a newline).
OBJECT_END = (b"}\n", b"}\r\n", b"}", b"}\r")
# A backslash before anything but a JSON escape character (seen in real captures, e.g. a
# Windows path "C:\ws"): repaired by escaping the backslash, so the rest of the line survives.
_BAD_ESCAPE = re.compile(r'\\(["\\/bfnrtu]|.)', re.DOTALL)
_JSON_ESCAPES = '"\\/bfnrtu'
_PREVIEW_BYTES = 1024
# A line can hold tens of MiB (a file in a tool result, a long answer): see take_line.
HUGE_LINE_BYTES = 8 * 1024 * 1024
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abAB]")

@dataclass(slots=True)
class InitEvent:
    session_id: str
    model: str
    cwd: str
    permission_mode: str


@dataclass(slots=True)
class SystemEvent:
    """A ``system`` event other than ``init`` (``background_shell_timeout``,
    ``task_notification``, ...), with its status and the text it carries, if any."""

    subtype: str
    status: str = ""
    text: str = ""


@dataclass(slots=True)
class UserEvent:
    text: str


@dataclass(slots=True)
class ThinkingEvent:
    """Reasoning deltas; never shown and never decoded."""


THINKING = ThinkingEvent()


@dataclass(slots=True)
class AssistantEvent:
    text: str
    model_call_id: str | None
    timestamp_ms: int | None

    @property
    def is_delta(self) -> bool:
        """A ``--stream-partial-output`` token delta: ``timestamp_ms`` but no ``model_call_id``."""
        return self.timestamp_ms is not None and self.model_call_id is None


@dataclass(slots=True)
class InteractionEvent:
    """An ``interaction_query``: a ``request`` (a question, a plan, an approval the agent
    asked for) or its ``response`` (how it was answered; see :mod:`.notices`)."""

    subtype: str
    query_type: str
    query_id: str = ""
    text: str = ""  # a request's question, plan, command or URL
    answer: str = ""  # a response's "approved", "rejected", ...
    reason: str = ""


@dataclass(slots=True)
class ResultEvent:
    subtype: str
    is_error: bool
    result: str
    duration_ms: int | None
    session_id: str
    request_id: str
    usage: dict[str, int | None] = field(default_factory=dict)


@dataclass(slots=True)
class UnknownEvent:
    """A JSON object of a type we do not know (kept so the log can mention it)."""

    type: str
    subtype: str


@dataclass(slots=True)
class MalformedLine:
    """A line that is not a JSON object."""

    reason: str
    preview: str


Event = (
    InitEvent
    | SystemEvent
    | UserEvent
    | ThinkingEvent
    | AssistantEvent
    | ToolCallEvent
    | InteractionEvent
    | ResultEvent
    | UnknownEvent
    | MalformedLine
)


def _repair_escapes(text: str) -> str:
    def fix(match: re.Match[str]) -> str:
        escaped = match.group(1)
        return match.group(0) if escaped[0] in _JSON_ESCAPES else "\\\\" + escaped

    return _BAD_ESCAPE.sub(fix, text)


def _preview(line: Line) -> str:
    """The start of a bad line, longer than shown, so a secret in it is redacted whole before
    the log cuts it to size."""
    return " ".join(bytes(line[:_PREVIEW_BYTES]).decode("utf-8", "replace").split())


def _loads(line: Line) -> tuple[object, str]:
    """Decode JSON leniently; returns (value, "") or (None, reason)."""
    try:
        return orjson.loads(line), ""
    except orjson.JSONDecodeError as exc:
        error = exc
    reason = str(error).split(":", 1)[0] or "not JSON"
    if error.pos == 0 and not line.startswith((b"{", BOM)):
        return None, reason  # not JSON at all: no repair can help
    # Repairs, each at most once and only for the error that calls for it, so a long broken
    # line is not copied more than needed.
    data: Line | str = line
    for _ in range(3):
        message = str(error)
        if not isinstance(data, str) and data.startswith(BOM):  # concatenated files
            data = data[len(BOM) :]
        elif not isinstance(data, str) and ("UTF-8" in message or "escape" in message):
            data = data.decode("utf-8", "replace")  # invalid UTF-8 becomes U+FFFD
        elif isinstance(data, str) and "escape" in message:
            repaired = _repair_escapes(data)
            if repaired == data:
                break
            data = repaired
        else:
            break
        try:
            return orjson.loads(data), ""
        except orjson.JSONDecodeError as exc:
            error = exc
    return None, reason


def is_thinking(line: Line) -> bool:
    """A complete thinking event line, recognised without decoding it."""
    return line.startswith(THINKING_PREFIX) and line.endswith(OBJECT_END)


def take_line(holder: list[Any], index: int) -> Event:
    """Parse ``holder[index]`` and drop it from the list; the caller holds no other reference.

    A long line is decoded to text and its bytes freed before the JSON is parsed, by the
    stdlib, which builds the values without a scratch copy: a 50 MiB line peaks at twice its
    size, where orjson would need three times.
    """
    line: Line = holder[index]
    holder[index] = b""
    if len(line) <= HUGE_LINE_BYTES:
        return parse_line(line)
    text = str(line, "utf-8", "replace")  # as _loads repairs invalid UTF-8
    del line
    if not _SURROGATE_ESCAPE.search(text):  # orjson refuses lone surrogates; keep its verdict
        with contextlib.suppress(ValueError, RecursionError):
            value = json.loads(text, parse_constant=_no_constant)
            if isinstance(value, dict):
                with contextlib.suppress(Exception):
                    return parse_object(value)
    return parse_line(text.encode("utf-8"))  # anything unusual: the one exact path


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")  # NaN/Infinity: orjson refuses them too


def delta_text(holder: list[Any], index: int) -> str:
    """The text of the raw assistant token-delta line ``holder[index]`` (decoded on demand)."""
    event = take_line(holder, index)
    return event.text if isinstance(event, AssistantEvent) else ""


def parse_line(line: Line) -> Event:
    """One physical line (not blank) to an event. Never raises."""
    if line.startswith(THINKING_PREFIX) and line.endswith(OBJECT_END):
        return THINKING
    return parse_json_line(line)


def parse_json_line(line: Line) -> Event:
    """:func:`parse_line` for a line already known not to be a complete thinking event (the
    engine's hot loop tells those apart itself)."""
    try:
        value = orjson.loads(line)  # the common case without a call in between
    except orjson.JSONDecodeError:
        if isinstance(line, CutLine):
            return MalformedLine(
                f"longer than the {MAX_LINE_BYTES // 2**20} MiB line cap ({line.size:,} bytes): "
                "cut, only its start kept", _preview(line))
        # Repaired and explained without the newline the framing keeps (a backslash before it
        # would read as a bad escape, not as the cut line it is).
        value, reason = _loads(line[:-1] if line.endswith(b"\n") else line)
    else:
        reason = ""
    if type(value) is not dict:
        if not reason:
            reason = f"a JSON {type(value).__name__.replace('NoneType', 'null')}, not an object"
        return MalformedLine(reason, _preview(line))
    try:
        kind = value.get("type")
        if kind == "tool_call":  # most decoded lines
            subtype = value.get("subtype")
            return parse_tool_call(value, subtype if type(subtype) is str else "")
        if kind == "assistant":  # the next most: whole segments
            return _assistant(value)
        return parse_object(value)
    except Exception as exc:  # defensive: a shape we did not foresee must not stop the run
        return MalformedLine(f"unexpected event shape ({type(exc).__name__})", _preview(line))


def parse_object(obj: dict[str, Any]) -> Event:
    kind = json_str(obj.get("type"))
    subtype = json_str(obj.get("subtype"))
    if kind == "thinking":
        return THINKING
    if kind == "assistant":
        return _assistant(obj)
    if kind == "tool_call":
        return parse_tool_call(obj, subtype)
    if kind == "system":
        if subtype == "init":
            return InitEvent(
                json_str(obj.get("session_id")),
                json_str(obj.get("model")),
                json_str(obj.get("cwd")),
                json_str(obj.get("permissionMode")),
            )
        return SystemEvent(subtype, *notice_fields(obj))
    if kind == "user":
        return UserEvent(_message_text(obj.get("message")))
    if kind == "result":
        usage = json_dict(obj.get("usage"))
        return ResultEvent(
            subtype,
            obj.get("is_error") is True,
            json_str(obj.get("result")),
            json_int(obj.get("duration_ms")),
            json_str(obj.get("session_id")),
            json_str(obj.get("request_id")),
            {
                name: json_int(usage.get(key))
                for name, key in (
                    ("input", "inputTokens"),
                    ("output", "outputTokens"),
                    ("cache_read", "cacheReadTokens"),
                    ("cache_write", "cacheWriteTokens"),
                )
            },
        )
    if kind == "interaction_query":
        query_type = json_str(obj.get("query_type"))
        if subtype == "response":
            query_id, answer, reason = answer_fields(obj)
            return InteractionEvent(subtype, query_type, query_id, "", answer, reason)
        query_id, text = query_fields(obj, query_type)
        return InteractionEvent(subtype, query_type, query_id, text)
    return UnknownEvent(kind, subtype)


def _assistant(obj: dict[str, Any]) -> AssistantEvent:
    # Once per segment: the usual shape (one text part) read with plain lookups, where a
    # value of another type fails a lookup; anything else through _message_text.
    try:
        (part,) = obj["message"]["content"]  # exactly one part
        text = part["text"]
        if type(text) is not str or type(part) is not dict or part.get("type", "text") != "text":
            text = _message_text(obj.get("message"))
    except (KeyError, TypeError, ValueError):
        text = _message_text(obj.get("message"))
    model_call_id = obj.get("model_call_id")
    timestamp_ms = obj.get("timestamp_ms")
    return AssistantEvent(
        text,
        model_call_id if model_call_id and type(model_call_id) is str else None,
        timestamp_ms if type(timestamp_ms) is int else json_int(timestamp_ms),
    )


def _message_text(message: object) -> str:
    content = json_dict(message).get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    if len(content) == 1:  # the usual shape: one text part
        part = content[0]
        if type(part) is dict and part.get("type", "text") == "text":
            return json_str(part.get("text"))
    return "".join(
        json_str(part.get("text"))
        for part in content
        if isinstance(part, dict) and part.get("type", "text") == "text"
    )
