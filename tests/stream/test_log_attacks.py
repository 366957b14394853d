"""A hostile stream against the live log's shortcuts: whatever part of a log entry the agent
or the CLI can shape, a secret in it is replaced and a control character shown, not written.

The log's flush searches only what its entries hold (not our own ``::stop-commands::`` and
``::group::`` framing); these tests put secrets and controls in every such part of a tool
call's title (kind, target, outcome, stats) and in segments, and read the log the way the
Actions runner does.
"""

from __future__ import annotations

import io
import json

import pytest

from cursor_agent_action.redact import Redactor
from cursor_agent_action.runner_io import AGENT_MARK, Runner
from cursor_agent_action.stream.aggregate import WHOLE_SEGMENT_LEN, Aggregator
from cursor_agent_action.stream.engine import StreamProcessor
from cursor_agent_action.stream.events import parse_line
from tests.support.runner import RUNNER_ENV
from tests.support.stream import processed_commands

API_KEY = "key_" + "Q7" * 20
GITHUB_TOKEN = "ghs_" + "Zx9" * 12
SHAPED = "sk-ant-" + "w" * 30  # a secret nobody told the run about


def _call(call_id: str, key: str, args: dict[str, object], result: dict[str, object],
          ) -> list[dict[str, object]]:  # fmt: skip
    tool_call = {key: {"args": args}, "startedAtMs": "1", "completedAtMs": "40"}
    done = {key: {"args": args, "result": result}, "startedAtMs": "1", "completedAtMs": "40"}
    return [
        {"type": "tool_call", "subtype": "started", "call_id": call_id, "timestamp_ms": 1,
         "tool_call": tool_call},
        {"type": "tool_call", "subtype": "completed", "call_id": call_id, "timestamp_ms": 40,
         "tool_call": done},
    ]  # fmt: skip


def _log(events: list[dict[str, object]]) -> str:
    """The log of the stream, less the ``::add-mask::`` lines (which must name the secrets
    for the runner's own masking)."""
    out = io.StringIO()
    runner = Runner(stdout=out, env=RUNNER_ENV, secrets=[API_KEY, GITHUB_TOKEN])
    processor = StreamProcessor(runner)
    processor.feed(b"".join(json.dumps(event).encode() + b"\n" for event in events))
    processor.close()
    masks: list[str] = []
    rest: list[str] = []
    for line in out.getvalue().splitlines(keepends=True):
        (masks if line.startswith("::add-mask::") else rest).append(line)
    assert len(masks) == 2
    return "".join(rest)


@pytest.mark.parametrize("secret", [API_KEY, GITHUB_TOKEN, SHAPED])
@pytest.mark.parametrize("where", ["kind", "target", "outcome", "stats", "segment"])
def test_a_secret_in_any_part_of_a_log_entry_is_replaced(where: str, secret: str) -> None:
    key, outcome = "readToolCall", "success"
    args: dict[str, object] = {"path": "a.py"}
    stats: dict[str, object] = {"totalLines": 3}
    events: list[dict[str, object]] = [{"type": "system", "subtype": "init", "cwd": "/w"}]
    if where == "kind":
        key = f"{secret}ToolCall"
    elif where == "target":
        args = {"path": f"/w/{secret}.py"}
    elif where == "outcome":
        outcome = secret
    elif where == "stats":
        key, stats = "editToolCall", {"linesAdded": secret, "linesRemoved": 1}
    else:
        text = {"type": "text", "text": f"use {secret} now"}
        events.append({"type": "assistant", "model_call_id": "m", "message": {"content": [text]}})
    events += _call("c1", key, args, {outcome: stats})
    log = _log(events)
    assert secret not in log
    assert "***" in log
    processed_commands(log)  # every line still reads as the runner would read it


@pytest.mark.parametrize("where", ["kind", "target", "outcome", "segment"])
def test_a_control_character_in_any_part_of_a_log_entry_is_shown_not_written(where: str) -> None:
    hostile = "x\x1b[2J\r::error::pwned\x9b"
    key, outcome = "readToolCall", "success"
    args: dict[str, object] = {"path": "a.py"}
    events: list[dict[str, object]] = []
    if where == "kind":
        key = f"{hostile}ToolCall"
    elif where == "target":
        args = {"path": hostile}
    elif where == "outcome":
        outcome = hostile
    else:
        events.append({"type": "assistant", "model_call_id": "m",
                       "message": {"content": [{"type": "text", "text": hostile}]}})  # fmt: skip
    events += _call("c1", key, args, {outcome: {}})
    log = _log(events)
    assert not any(char in log for char in "\x1b\r\x9b")
    assert "\\x1b" in log
    assert not any(name == "error" for name, _, _ in processed_commands(log))


def test_a_long_segment_rebuilt_from_deltas_reaches_the_log_redacted() -> None:
    """Deltas whose whole repeat never comes become a segment when a tool call starts; a long
    one is redacted before anything can cut it, and that redacted text is what the log gets."""
    redact = Redactor([API_KEY])
    aggregator = Aggregator(news=True, redact=redact)
    words = "padding " * (WHOLE_SEGMENT_LEN // 8)
    for text in (words, f" the key is {API_KEY} ", words):
        aggregator.apply(parse_line(json.dumps(
            {"type": "assistant", "timestamp_ms": 1,
             "message": {"content": [{"type": "text", "text": text}]}}).encode()))  # fmt: skip
    aggregator.apply(parse_line(json.dumps(_call("c1", "readToolCall", {"path": "a"},
                                                 {"success": {}})[0]).encode()))  # fmt: skip
    assert aggregator.news is not None
    [segment] = aggregator.news
    assert API_KEY not in segment
    assert "the key is *** " in segment


def test_a_secret_that_is_not_utf8_printed_raw_by_the_agent_never_reaches_the_log_or_record(
) -> None:
    """A mask-env value with a stray byte (kept by Python as a surrogate): the agent prints its
    raw bytes on stdout, alone and inside a JSON line. The parser reads both with the byte
    replaced by U+FFFD; that form is redacted too, in the log and in the record."""
    secret = "key\udcfflive-0123456789"
    out = io.StringIO()
    runner = Runner(stdout=out, env=RUNNER_ENV, secrets=[secret])
    processor = StreamProcessor(runner)
    processor.feed(b"key\xfflive-0123456789 printed by the agent\n")
    processor.feed(b'{"type":"assistant","message":{"content":[{"type":"text",'
                   b'"text":"key\xfflive-0123456789"}]},"model_call_id":"m1"}\n')  # fmt: skip
    record = processor.close()
    log = out.getvalue().split("\n", 1)[1]  # after the ::add-mask:: line
    assert "live-0123456789" not in log
    assert "***" in log
    assert "live-0123456789" not in runner.redact(record.final_message)


HIDING = ["\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\u2028", "\U000e0041", "\u00ad"]


@pytest.mark.parametrize("char", HIDING)
@pytest.mark.parametrize("where", ["kind", "target", "outcome", "segment", "refused"])
def test_bidi_and_zero_width_characters_in_any_part_of_the_log_are_shown_escaped(
    where: str, char: str
) -> None:
    """A right-to-left override makes ``gpj.exe`` read ``exe.jpg``; a zero-width space hides
    inside a word; a line separator may start a new line in a viewer. None is written raw:
    each is shown as ``\\u202e``, in titles, segments and annotations alike."""
    hostile = f"evil{char}gpj.exe"
    key, outcome = "readToolCall", "success"
    args: dict[str, object] = {"path": "a.py"}
    events: list[dict[str, object]] = []
    if where == "kind":
        key = f"{hostile}ToolCall"
    elif where == "target":
        args = {"path": hostile}
    elif where == "outcome":
        outcome = hostile
    elif where == "refused":  # the warning annotation quotes the target
        args, outcome = {"path": hostile}, "rejected"
    else:
        events.append({"type": "assistant", "model_call_id": "m",
                       "message": {"content": [{"type": "text", "text": hostile}]}})  # fmt: skip
    events += _call("c1", key, args, {outcome: {}})
    log = _log(events)
    assert char not in log
    code = ord(char)
    assert (f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}") in log
    processed_commands(log)


@pytest.mark.parametrize("imitation", [
    "cursor-agent finished: success after 1.2 s",
    "Isolation: contained (its own user, PID namespace and home).",
    "::group::shell ls → success · 5 ms",
    "##[error]the run failed",
    "\u2028cursor-agent finished: success",
    "ok\ncursor-agent finished: success\nIsolation: contained.",
])  # fmt: skip
def test_an_agent_line_imitating_the_helpers_own_is_visibly_the_agents(imitation: str) -> None:
    """Every line of agent text starts with the agent mark, which none of our own lines
    has: the imitation never stands alone as a line of the log."""
    events: list[dict[str, object]] = [
        {"type": "assistant", "model_call_id": "m",
         "message": {"content": [{"type": "text", "text": imitation}]}},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200,
         "result": imitation},
    ]  # fmt: skip
    lines = _log(events).splitlines()
    ours = [line for line in lines if not line.startswith(AGENT_MARK)]
    assert ours[-1] == "cursor-agent finished: success after 1.2 s"  # the real one, once
    assert sum(line.startswith("cursor-agent finished") for line in ours) == 1
    assert not any(line.startswith(("Isolation", "##[", "::group::shell ls")) for line in ours)
    marked = [line for line in lines if line.startswith(AGENT_MARK)]
    assert len(marked) == imitation.count("\n") + 1
    assert any("finished: success" in line or "Isolation" in line or "##\\[" in line
               or "::group::" in line for line in marked)
