"""Tool calls in the stream: the ``tool_call`` event's shapes, its kind, target and outcome.

The CLI wraps each call in a key ending in ``ToolCall`` (``shellToolCall``, ``readToolCall``,
...), with ``args`` and, once completed, a ``result`` whose one key says how it ended. Newer
kinds appear over time: an unknown key is kept as the kind, never dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

# Keys of a completed call's result that say how it ended, in the order we prefer them.
OUTCOMES = (
    "success",
    "error",
    "rejected",
    "permissionDenied",
    "writePermissionDenied",
    "spawnError",
    "failure",
    "timeout",
)
DENIALS = frozenset({"rejected", "permissionDenied", "writePermissionDenied"})
"""Result keys of a call the permission policy (or, by its message, a hook) refused."""
UNKNOWN = "unknown"
"""The outcome of a call completed with no result at all (``tool_call: {}``, seen in 2026.10
runs that go on normally): neither failed nor succeeded."""
# The CLI's own words for a hook's refusal (docs/cli-compat.md, "Hook refusals", has a shape
# per line and the sources): a hook that exits 2 ("Hook blocked with message: <stderr>", also
# after "---" when several hooks refused), "<Action> was blocked by a hook[: <message>]", a
# fail-closed hook that could not run, the CLI's error names, and the two sentences the CLI
# appends to every hook denial (a JSON deny's own message carries nothing else).
_HOOK_TEXT = re.compile(
    r"^\s*hook blocked with message:"
    r"|\bwas blocked by a hook\b|\bblocked by (a|the) hook\b"
    r"|\bblocked because a configured hook failed\b"
    r"|^\s*hook (denied|failed \(fail-closed\)):"
    r"|agent note: do not suggest workarounds to the blocked tool"
    r"|to view or modify configured hooks, go to cursor settings > hooks",
    re.IGNORECASE | re.MULTILINE,
)
_POLICY_TEXT = re.compile(
    r"blocked by permissions configuration|not (on|in) the allow ?list"
    r"|permission denied by (the )?polic",
    re.IGNORECASE,
)


def refusal(outcome: str | None, detail: str) -> str:
    """Who refused a completed call: "hook", "policy" or "" (it was not refused).

    A hook's refusal comes as a denial-like result key (``...hook...``), or as a denial or an
    ``error`` whose message says a hook blocked it; the policy's as one of :data:`DENIALS`, or
    an ``error`` with the policy's own words."""
    if not outcome or outcome in ("success", UNKNOWN):
        return ""
    if "hook" in outcome.lower() or _HOOK_TEXT.search(detail):
        return "hook"
    if outcome in DENIALS or _POLICY_TEXT.search(detail):
        return "policy"
    return ""
_HOOK_NOTES = re.compile(
    r"\s*(agent note: do not suggest workarounds to the blocked tool\.?"
    r"|to view or modify configured hooks, go to cursor settings > hooks\.?)",
    re.IGNORECASE,
)


def hook_message(detail: str) -> str:
    """A hook refusal's message without the two sentences the CLI appends to every one."""
    return _HOOK_NOTES.sub("", detail).strip() or detail


# Argument names that make a good display target, in priority order.
_TARGET_KEYS = (
    "command",
    "path",
    "targetFile",
    "filePath",
    "pattern",
    "globPattern",
    "query",
    "url",
    "targetDirectory",
    "directory",
    "description",
    "name",
    "toolName",
)


# Kinds whose best target is not the first of _TARGET_KEYS they carry (grep also has a path).
_KIND_TARGET_KEYS = {
    "grep": ("pattern", *_TARGET_KEYS),
    "glob": ("globPattern", "pattern", *_TARGET_KEYS),
    "semSearch": ("query", *_TARGET_KEYS),
}


def json_str(value: object) -> str:
    return value if isinstance(value, str) else ""


def json_int(value: object) -> int | None:
    """An integer from an int or a digit string (the CLI sends ``startedAtMs`` as a string)."""
    if type(value) is int:  # the common cases first; bool (a subclass) is not a number here
        return value
    if type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        digits = value.strip().removeprefix("-")
        if digits.isascii() and digits.isdecimal():
            return int(value)
    return None


def json_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class ToolCallEvent:
    subtype: str  # "started", "completed" or anything newer
    call_id: str
    kind: str  # "shell", "read", ... or the raw key of an unknown tool
    target: str
    args: dict[str, Any]
    outcome: str | None  # the result key when completed ("success", "rejected", ...)
    payload: dict[str, Any]  # the value under the outcome key
    started_at_ms: int | None
    completed_at_ms: int | None
    timestamp_ms: int | None

    @property
    def detail(self) -> str:
        """The error message or rejection reason of a call that did not succeed."""
        if self.outcome == "success":
            return ""
        for key in ("errorMessage", "reason", "error", "message", "stderr"):
            value = self.payload.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, dict):
                nested = json_str(value.get("message")) or json_str(value.get("errorMessage"))
                if nested:
                    return nested
        return ""

    @property
    def exit_code(self) -> int | None:
        return json_int(self.payload.get("exitCode")) if self.kind == "shell" else None

    @property
    def paths(self) -> list[str]:
        """Paths this call names (arguments and result), for the files-changed list."""
        named = json_str(self.args.get("path"))  # once per edit: no list, set or comprehension
        written = json_str(self.payload.get("path"))
        if written and written != named:
            return [named, written] if named else [written]
        return [named] if named else []


# One string object per known kind, however many calls name it.
_KIND_NAMES = {
    f"{name}ToolCall": name
    for name in (
        "shell",
        "read",
        "edit",
        "write",
        "delete",
        "grep",
        "glob",
        "ls",
        "semSearch",
        "readLints",
        "todo",
        "updateTodos",
        "mcp",
        "getMcpTools",
        "webSearch",
        "webFetch",
        "task",
    )
}


def _tool_key(tool_call: dict[str, Any]) -> str:
    """The key holding the call: the one ending in ``ToolCall``, else ``function``, else the
    first object-valued key that is not one of the known sibling keys."""
    for key, value in tool_call.items():  # the call is the first key in every capture
        if key.endswith("ToolCall") and type(value) is dict:
            return key
        break
    fallback = ""
    for key, value in tool_call.items():
        if key.endswith("ToolCall") and isinstance(value, dict):
            return key
        if not fallback and isinstance(value, dict) and key not in ("hookAdditionalContexts",):
            fallback = key
    return fallback


def _outcome(result: dict[str, Any]) -> str | None:
    """The key saying how a call ended, picked among siblings such as ``isBackground``."""
    for key in OUTCOMES:
        if key in result:
            return key
    for key, value in result.items():
        if isinstance(value, dict):
            return key
    return None


def _target(kind: str, inner: dict[str, Any], args: dict[str, Any]) -> str:
    if kind == "mcp":
        provider = (json_str(args.get("providerIdentifier"))
                    or json_str(inner.get("providerIdentifier")))
        tool = json_str(args.get("toolName")) or json_str(args.get("name"))
        return f"{provider}:{tool}" if provider and tool else tool or provider
    if kind == "getMcpTools":  # listing an MCP server's tools
        return json_str(args.get("serverName")) or json_str(args.get("server")) or json_str(
            args.get("providerIdentifier"))
    if kind == "function":
        return json_str(inner.get("name"))
    for key in _KIND_TARGET_KEYS.get(kind, _TARGET_KEYS):
        value = args.get(key)
        if value and type(value) is str:
            return value
    return ""


# Kinds whose target is the first of their target keys (every kind but the MCP ones): the
# only kinds parse_tool_call's fast path takes, with their name and target keys.
_PLAIN_KINDS = {
    key: (kind, _KIND_TARGET_KEYS.get(kind, _TARGET_KEYS))
    for key, kind in _KIND_NAMES.items()
    if kind not in ("mcp", "getMcpTools")
}


def parse_tool_call(obj: dict[str, Any], subtype: str) -> ToolCallEvent:
    """A ``tool_call`` event object (started, completed or newer) to a :class:`ToolCallEvent`.

    Called for every tool event (100,000 in a long run), so the shape every capture has (a
    known kind first in ``tool_call``, a string ``call_id``, an integer ``timestamp_ms``, a
    ``success`` result) is read with plain lookups: a value of another type fails a lookup
    (TypeError, AttributeError) or one of the checks. Anything else, or anything missing,
    goes to :func:`parse_any_tool_call`, which gives the same event for the usual shape
    (tests/stream/test_fast_paths.py checks that on generated objects).
    """
    try:
        tool_call = obj["tool_call"]
        for key in tool_call:  # noqa: B007 (the first key: the call, in every capture)
            break
        else:
            key = ""
        kind, target_keys = _PLAIN_KINDS[key]  # a list's first item: TypeError or KeyError
        inner = tool_call[key]
        args = inner["args"]  # only a dict has string keys
        call_id = obj["call_id"]
        timestamp_ms = obj["timestamp_ms"]
        if type(call_id) is not str or not call_id or type(timestamp_ms) is not int:
            return parse_any_tool_call(obj, subtype)
        target = ""
        for name in target_keys:
            value = args.get(name)  # only a dict has .get
            if value and type(value) is str:
                target = value
                break
        if subtype != "completed":
            return ToolCallEvent(
                subtype, call_id, kind, target, args, None, {}, None, None, timestamp_ms
            )
        payload = inner["result"]["success"]
        started = tool_call["startedAtMs"]
        completed = tool_call["completedAtMs"]
        # Both clocks digits only (int() would also take "+1", " 1", "1_0" and other
        # scripts' digits): checked in one string (two values of another type fail the +).
        both = started + completed
        digits = both.isdigit() and both.isascii()
        if type(payload) is not dict or not started or not completed or not digits:
            return parse_any_tool_call(obj, subtype)
        return ToolCallEvent(
            subtype,
            call_id,
            kind,
            target,
            args,
            "success",
            payload,
            int(started),
            int(completed),
            timestamp_ms,
        )
    except (KeyError, TypeError, IndexError, AttributeError):
        return parse_any_tool_call(obj, subtype)


def parse_any_tool_call(obj: dict[str, Any], subtype: str) -> ToolCallEvent:
    """:func:`parse_tool_call` for any shape at all: every field checked, nothing assumed."""
    tool_call = obj.get("tool_call")
    if type(tool_call) is not dict:
        tool_call = {}
    key = _tool_key(tool_call)
    inner = tool_call.get(key)
    if type(inner) is not dict:
        inner = {}
    kind = _KIND_NAMES.get(key) or (
        key[: -len("ToolCall")] if key.endswith("ToolCall") and len(key) > 8 else key
    )
    args = inner.get("args")
    if type(args) is not dict:
        args = {}
    if kind == "function":
        arguments = inner.get("arguments")
        if isinstance(arguments, str):
            try:
                args = json_dict(orjson.loads(arguments))
            except orjson.JSONDecodeError:
                args = {}
    call_id = obj.get("call_id")
    if not call_id or type(call_id) is not str:
        call_id = json_str(tool_call.get("toolCallId"))
    timestamp_ms = obj.get("timestamp_ms")
    if type(timestamp_ms) is not int:
        timestamp_ms = json_int(timestamp_ms)
    target = _target(kind, inner, args)
    kind = kind or "unknown"
    if subtype != "completed":
        return ToolCallEvent(
            subtype, call_id, kind, target, args, None, {}, None, None, timestamp_ms
        )
    # The generic `function` form may carry its result beside the call rather than inside.
    result = inner.get("result")
    if not result or type(result) is not dict:
        result = json_dict(tool_call.get("result"))
    outcome = "success" if "success" in result else _outcome(result)
    payload = result.get(outcome) if outcome else None
    return ToolCallEvent(
        subtype,
        call_id,
        kind,
        target,
        args,
        UNKNOWN if outcome is None else outcome,
        payload if type(payload) is dict else {},
        # Only a completion needs the call's own clock (its duration).
        json_int(tool_call.get("startedAtMs")),
        json_int(tool_call.get("completedAtMs")),
        timestamp_ms,
    )
