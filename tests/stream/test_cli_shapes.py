"""Shapes of the 2026.10 CLI (docs/cli-compat.md), with fixtures of our own: every refusal
shape, hook refusals apart, calls with no outcome, MCP calls and new tool kinds."""

from __future__ import annotations

import io
import json
from typing import Any

from cursor_agent_action.runner_io import Runner, parse_output_file
from cursor_agent_action.stream.engine import process_stream
from cursor_agent_action.stream.report import report
from cursor_agent_action.stream.summary import render_summary
from tests.support.stream import processed_commands


def _call(call_id: str, key: str, args: dict[str, Any], result: dict[str, Any] | None) -> str:
    inner: dict[str, Any] = {"args": args}
    if result is not None:
        inner["result"] = result
    started = {"type": "tool_call", "subtype": "started", "call_id": call_id,
               "tool_call": {key: {"args": args}}}  # fmt: skip
    tool_call = {key: inner} if result is not None else {}  # `tool_call: {}`: no outcome at all
    done = {"type": "tool_call", "subtype": "completed", "call_id": call_id,
            "tool_call": tool_call}  # fmt: skip
    return json.dumps(started) + "\n" + json.dumps(done) + "\n"


INIT = json.dumps({"type": "system", "subtype": "init", "session_id": "s", "cwd": "/w"}) + "\n"
RESULT = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
                     "session_id": "s"}) + "\n"  # fmt: skip
STREAM = INIT + "".join([
    _call("1", "writeToolCall", {"path": "/w/a.md"}, {"writePermissionDenied": {
        "path": "/w/a.md", "error": "Write blocked by permissions configuration"}}),
    _call("2", "editToolCall", {"path": "/w/b.md"}, {"writePermissionDenied": {"path": "/w/b.md"}}),
    _call("3", "shellToolCall", {"command": "rm -rf /"}, {"rejected": {
        "command": "rm -rf /", "reason": "Not in the allowlist"}}),
    _call("4", "readToolCall", {"path": "/w/.env"}, {"error": {
        "errorMessage": "Hook blocked with message: secrets are off limits"}}),
    _call("5", "editToolCall", {"path": "/w/c.md"}, {"hookDenied": {
        "reason": "the docs hook refused this edit"}}),
    _call("6", "readToolCall", {"path": "/w/d.md"}, None),
    _call("7", "mcpToolCall", {"providerIdentifier": "github", "toolName": "get_issue"},
          {"success": {"content": []}}),
    _call("8", "getMcpToolsToolCall", {"serverName": "github"}, {"success": {"tools": []}}),
    _call("9", "shellToolCall", {"command": "make"}, {"error": {"errorMessage": "boom"}}),
]) + RESULT  # fmt: skip


def test_every_refusal_shape_is_counted_once_where_it_belongs() -> None:
    record = process_stream(io.BytesIO(STREAM.encode()), None)
    assert [c.target for c in record.grouped().denied] == ["a.md", "b.md", "rm -rf /"]
    assert [c.target for c in record.grouped().hook_denied] == [".env", "c.md"]
    assert [c.target for c in record.grouped().unknown] == ["d.md"]
    assert [c.target for c in record.grouped().failed] == ["make"]
    assert len(record.tool_calls) == 9


def test_outputs_summary_and_log_show_the_shapes(tmp_path: Any) -> None:
    log = io.StringIO()
    runner = Runner(stdout=log, env={}, output_file=tmp_path / "out", summary_file=tmp_path / "s")
    record = process_stream(io.BytesIO(STREAM.encode()), runner)
    report(record, runner, result_dir=tmp_path)
    outputs = parse_output_file((tmp_path / "out").read_text())
    counts = ("tool-calls", "failed-tool-calls", "permission-denials", "hook-denials")
    assert [outputs[name] for name in counts] == ["9", "1", "3", "2"]
    summary = render_summary(record, budget_bytes=100_000)
    assert "**Tool calls:** 9 (1 failed, 3 denied, 2 blocked by a hook, 1 with no outcome)" in (
        summary)
    assert "### Blocked by a hook (2)" in summary
    assert "secrets are off limits" in summary
    assert "unknown (no outcome reported)" in summary
    text = log.getvalue()
    assert "::group::mcp github:get_issue → success" in text
    assert "::group::getMcpTools github → success" in text
    kinds = [(name, props) for name, props, _ in processed_commands(text) if name == "warning"]
    assert [props for _, props in kinds].count("title=blocked by a hook") == 2
    assert [props for _, props in kinds].count("title=permission denied") == 3
