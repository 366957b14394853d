"""Shapes of the 2026.10 CLI (docs/cli-compat.md), with fixtures of our own: every refusal
shape, hook refusals apart, calls with no outcome, MCP calls and new tool kinds."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.engine import process_stream
from cursor_agent_action.stream.render.report import report
from cursor_agent_action.stream.render.summary import render_summary
from tests.support.runner import RUNNER_ENV
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
    assert [c.target for c in record.stream.grouped().denied] == ["a.md", "b.md", "rm -rf /"]
    assert [c.target for c in record.stream.grouped().hook_denied] == [".env", "c.md"]
    assert [c.target for c in record.stream.grouped().unknown] == ["d.md"]
    assert [c.target for c in record.stream.grouped().failed] == ["make"]
    assert len(record.stream.tool_calls) == 9


def test_outputs_summary_and_log_show_the_shapes(tmp_path: Any) -> None:
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, output_file=tmp_path / "out",
                    summary_file=tmp_path / "s")
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


# -- every hook-refusal shape (docs/cli-compat.md, "Hook refusals") ----------------------------

NOTE = "\n\nAgent note: Do not suggest workarounds to the blocked tool."
HINT = "\n\nTo view or modify configured hooks, go to Cursor Settings > Hooks."
HOOK_SHAPES: dict[str, tuple[str, dict[str, Any], str]] = {
    # name: (tool key, result, the hook's message as the summary shows it)
    "exit 2, rejected": ("shellToolCall", {"rejected": {
        "command": "ls", "reason": "Hook blocked with message: PRE-BLOCK" + NOTE}},
        "Hook blocked with message: PRE-BLOCK"),
    "exit 2, error": ("readToolCall", {"error": {
        "errorMessage": "Hook blocked with message: secrets are off limits" + NOTE}},
        "Hook blocked with message: secrets are off limits"),
    "JSON deny, rejected": ("shellToolCall", {"rejected": {
        "command": "ls", "reason": "USER-DENY-MSG" + NOTE}}, "USER-DENY-MSG"),
    "JSON deny, error (an edit)": ("editToolCall", {"error": {
        "errorMessage": "docs are frozen" + NOTE}}, "docs are frozen"),
    "before shell execution": ("shellToolCall", {"rejected": {
        "command": "ls", "reason": "Command execution was blocked by a hook: SHELL-DENY"
        + HINT + NOTE}}, "Command execution was blocked by a hook: SHELL-DENY"),
    "an action blocked without a message": ("editToolCall", {"error": {
        "errorMessage": "Edit was blocked by a hook." + HINT + NOTE}},
        "Edit was blocked by a hook."),
    "several hooks": ("shellToolCall", {"rejected": {"command": "ls", "reason":
        "deny-one\n\n---\n\nHook blocked with message: block-two" + NOTE}},
        "deny-one\n\n---\n\nHook blocked with message: block-two"),
    "fail-closed hook": ("writeToolCall", {"error": {"errorMessage":
        "Write was blocked because a configured hook failed to execute: spawn ENOENT\n\nThis "
        "is a safety measure (fail-closed)." + HINT}},
        "Write was blocked because a configured hook failed to execute: spawn ENOENT\n\nThis "
        "is a safety measure (fail-closed)."),
    "HookDeniedError": ("mcpToolCall", {"error": {"error": "Hook denied: not this server"}},
                        "Hook denied: not this server"),
    "a result key naming a hook": ("editToolCall", {"hookDenied": {"reason": "no"}}, "no"),
}  # fmt: skip


def _one_call(key: str, result: dict[str, Any]) -> bytes:
    return (INIT + _call("h", key, {"path": "/w/x.md", "command": "ls"}, result)
            + RESULT).encode()  # fmt: skip


@pytest.mark.parametrize("shape", list(HOOK_SHAPES))
def test_each_hook_refusal_shape_counts_as_a_hook_denial_with_the_hooks_own_words(
    shape: str, tmp_path: Any
) -> None:
    key, result, message = HOOK_SHAPES[shape]
    record = process_stream(io.BytesIO(_one_call(key, result)), None)
    groups = record.stream.grouped()
    assert [len(groups.hook_denied), len(groups.denied), len(groups.failed)] == [1, 0, 0]
    assert groups.hook_denied[0].detail == message  # the CLI's two notes left out
    runner = Runner(stdout=io.StringIO(), env=RUNNER_ENV, output_file=tmp_path / "out",
                    summary_file=tmp_path / "s")  # fmt: skip
    report(record, runner, result_dir=tmp_path)
    outputs = parse_output_file((tmp_path / "out").read_text())
    assert (outputs["hook-denials"], outputs["permission-denials"]) == ("1", "0")


@pytest.mark.parametrize(("result", "group"), [
    ({"rejected": {"command": "ls", "reason": "Not in the allowlist"}}, "denied"),
    ({"permissionDenied": {"error": "Command blocked by permissions configuration"}}, "denied"),
    ({"failure": {"stderr": "husky - pre-commit hook blocked the commit"}}, "failed"),
    ({"error": {"errorMessage": "a hook script in the repo blocks nothing here"}}, "failed"),
])  # fmt: skip
def test_policy_refusals_and_ordinary_failures_naming_a_hook_are_not_hook_denials(
    result: dict[str, Any], group: str
) -> None:
    """Only the CLI's own words make a hook refusal: a command's output about a git hook is
    an ordinary failure."""
    record = process_stream(io.BytesIO(_one_call("shellToolCall", result)), None)
    groups = record.stream.grouped()
    assert not groups.hook_denied
    assert len(getattr(groups, group)) == 1
