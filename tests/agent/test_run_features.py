"""`run` with the features beyond the peers: structured output (checked, asked for once more
in the same chat), the tool-call budget, and MCP servers from the workflow only. The agent is
the stand-in CLI, contained as in production (the suite runs as root)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent.guards import cli_sandbox
from tests.support.agent_run import API_KEY, INIT, RESULT, SAY, SESSION, event, run, tool
from tests.support.gfm import live_parts

pytestmark = pytest.mark.usefixtures("run_env")

TRIAGE = json.dumps({
    "type": "object", "required": ["cause", "confidence"], "additionalProperties": False,
    "properties": {"cause": {"type": "string"},
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
})  # fmt: skip
GOOD = 'Found it.\n\n```json\n{"cause": "flaky network test", "confidence": 0.7}\n```\n'


def test_a_matching_answer_becomes_the_structured_output(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {"answer": GOOD},
                 "--output-schema", TRIAGE)
    assert result.code == 0
    assert result.outputs["conclusion"] == "success"
    assert result.outputs["structured-output"] == ('{"cause":"flaky network test",'
                                                   '"confidence":0.7}')
    saved = Path(result.outputs["structured-output-file"])
    assert json.loads(saved.read_text()) == {"cause": "flaky network test", "confidence": 0.7}
    [entry] = result.runs  # asked once: no resume
    assert entry["argv"][-1].startswith("Update the docs.\n\n---\nWhen you have finished")
    assert TRIAGE.replace(" ", "") in entry["argv"][-1]
    assert ("<summary>The agent&#39;s answer: its structured output (its final message, "
            in result.summary)
    assert '</summary>\n\n```json\n{\n  "cause": "flaky network test"' in result.summary


def test_a_wrong_answer_is_asked_for_again_once_in_the_same_chat_and_fixed(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"answer": '{"cause": "flaky", "confidence": 7}',
                "resume": {"answer": GOOD}}
    result = run(tmp_path, workspace, capsys, scenario, "--output-schema", TRIAGE)
    assert result.code == 0
    assert json.loads(result.outputs["structured-output"])["confidence"] == 0.7
    first, second = result.runs
    assert "--resume" not in first["argv"]
    resume_at = second["argv"].index("--resume")
    assert second["argv"][resume_at + 1] == "00000000-0000-4000-8000-000000000000"
    assert "at $.confidence: 7 is greater than the maximum of 1" in second["argv"][-1]
    assert "::warning title=structured output::The answer does not match output-schema" in (
        result.log)
    # One transcript for both turns; the report counts both.
    transcript = Path(result.outputs["transcript-file"]).read_text().splitlines()
    assert sum('"type":"result"' in line for line in transcript) == 2
    assert result.outputs["duration-ms"] == "2400"
    assert "The first answer did not match output-schema" in result.summary


def test_an_answer_still_wrong_after_the_retry_fails_with_the_first_errors(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"answer": "No JSON here.",
                "resume": {"answer": '```json\n{"cause": 1, "confidence": 0.5}\n```'}}
    result = run(tmp_path, workspace, capsys, scenario, "--output-schema", TRIAGE)
    assert result.code == 1
    assert result.outputs["conclusion"] == "failure"
    assert result.outputs["structured-output"] == ""
    assert result.outputs["structured-output-file"] == ""
    assert len(result.runs) == 2  # asked again once, never more
    [error] = [line for line in result.log.splitlines() if line.startswith("::error")]
    assert "does not match output-schema, also after it was asked once more: at $.cause: 1 " \
           "is not of type 'string'" in error
    assert "Fix: make the schema easier to meet" in error


def test_without_a_session_id_there_is_no_resume_and_no_new_chat(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asking again without --resume would start a new chat that knows nothing: refused."""
    lines = [{**line, "session_id": ""} for line in (INIT, SAY, RESULT)]
    result = run(tmp_path, workspace, capsys, {"lines": lines}, "--output-schema", TRIAGE)
    assert result.outputs["conclusion"] == "failure"
    assert len(result.runs) == 1
    assert "reported no session id to resume" in result.summary


def test_a_non_json_answer_with_fail_on_error_false_sets_every_output(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"answer": "Sorry.", "resume": {"answer": "Still sorry."}}
    result = run(tmp_path, workspace, capsys, scenario, "--output-schema", TRIAGE,
                 "--no-fail-on-error")
    assert result.code == 0
    assert result.outputs["conclusion"] == "failure"
    assert "the answer holds no JSON value" in result.outputs["result"] or (
        "the answer holds no JSON value" in result.summary)
    assert {"structured-output", "structured-output-file", "result"} <= result.outputs.keys()


def test_an_invalid_schema_never_starts_the_agent(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {}, "--output-schema", '{"type": 5}')
    assert result.code == 2
    assert result.runs == []
    assert "output-schema is not a valid JSON Schema" in result.log


def test_a_failed_run_is_not_asked_again(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"crash": {"after": 1, "stderr": "boom", "exit_code": 1}}
    result = run(tmp_path, workspace, capsys, scenario, "--output-schema", TRIAGE)
    assert result.outputs["conclusion"] == "failure"
    assert len(result.runs) == 1


def _shell_calls(count: int) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for number in range(1, count + 1):
        args = {"command": f"echo {number}"}
        lines.append(tool("started", f"call-{number}", "shellToolCall", args))
        lines.append(tool("completed", f"call-{number}", "shellToolCall", args,
                          {"success": {"exitCode": 0, "stdout": f"{number}\n", "stderr": ""}}))
    return lines


def test_the_tool_call_budget_stops_the_agent_mid_tool_and_sets_every_output(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fourth call starts: the agent is stopped at once, as on a timeout (the stand-in
    would otherwise hang), and the conclusion is ``budget``."""
    calls = [*_shell_calls(3), tool("started", "call-4", "shellToolCall", {"command": "curl http://127.0.0.1:9"})]
    scenario = {"lines": [INIT, *calls, SAY, RESULT], "hang_after": 1 + len(calls)}
    result = run(tmp_path, workspace, capsys, scenario, "--max-tool-calls", "3",
                 "--no-fail-on-error", "--timeout-minutes", "0.5")
    assert result.outputs["conclusion"] == "budget"
    assert result.outputs["tool-calls"] == "4"
    [error] = [line for line in result.log.splitlines() if line.startswith("::error")]
    assert "more tool calls than max-tool-calls (3) allows" in error
    assert "Fix: raise max-tool-calls" in error
    assert "## 🛑 Cursor agent: budget" in result.summary
    assert result.outputs["session-id"] == SESSION
    failing = run(tmp_path, workspace, capsys, scenario, "--max-tool-calls", "3",
                  "--timeout-minutes", "0.5")
    assert failing.code == 1


def test_a_run_within_its_budget_succeeds(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"lines": [INIT, *_shell_calls(3), SAY, RESULT]}
    result = run(tmp_path, workspace, capsys, scenario, "--max-tool-calls", "3")
    assert result.outputs["conclusion"] == "success"


MCP = {"mcpServers": {"github": {
    "command": "github-mcp-server", "args": ["stdio", "--read-only"],
    "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${env:MCP_GITHUB_TOKEN}"}}}}
MCP_TOKEN = "ghp_mcpreadonlytokenQ7wX2kLm9pR4tV8zN3"  # shares no piece with API_KEY


def test_mcp_servers_from_the_workflow_reach_the_contained_agent_only_for_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCP_GITHUB_TOKEN", MCP_TOKEN)
    (workspace / ".cursor").mkdir()
    (workspace / ".cursor" / "mcp.json").write_text('{"mcpServers": {"evil": {"command": "x"}}}')
    answer = f"The token is {MCP_TOKEN}."
    result = run(tmp_path, workspace, capsys, {"answer": answer},
                 "--mcp-config", json.dumps(MCP), "--pass-env", "MCP_GITHUB_TOKEN",
                 "--allow", "Mcp(github:get_issue)")
    assert result.code == 0
    [entry] = result.runs
    assert "--approve-mcps" in entry["argv"]
    assert json.loads(entry["mcp_json"]) == MCP  # the workflow's servers, in the agent's home
    assert entry["cursor_dir"] == ["cli.json"]  # the repository's own mcp.json is set aside
    assert entry["env"]["MCP_GITHUB_TOKEN"] == MCP_TOKEN  # the server's secret, via pass-env
    home = Path(entry["env"]["HOME"])
    assert home != Path(os.environ.get("HOME", "/root"))
    assert f"::add-mask::{MCP_TOKEN}" in result.log  # the secret is masked
    assert MCP_TOKEN not in result.outputs["result"]
    assert MCP_TOKEN not in result.summary
    # The next run without mcp-config sees no MCP file, whatever the agent left in its home.
    later = run(tmp_path, workspace, capsys, {})
    assert later.runs[-1]["mcp_json"] is None
    assert "--approve-mcps" not in later.runs[-1]["argv"]


@pytest.mark.parametrize(("config", "message"), [
    ("{", "mcp-config is not JSON"),
    ('{"servers": {}}', "mcp-config is not a valid MCP configuration"),
    ('{"mcpServers": {"a:b": {"command": "x"}}}', "does not match"),
    ('{"mcpServers": {"gh": {"args": ["x"]}}}', "is not valid under any of the given schemas"),
    ('{"mcpServers": {"gh": {"command": "x", "env": {"T": "${env:NOT_PASSED}"}}}}',
     "mcp-config refers to ${env:NOT_PASSED}, which pass-env does not list"),
    ('{"mcpServers": {"gh": {"url": "file:///etc/passwd"}}}', "does not match '^https?://'"),
])  # fmt: skip
def test_a_malformed_mcp_config_never_starts_the_agent(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], config: str,
    message: str,
) -> None:
    result = run(tmp_path, workspace, capsys, {}, "--mcp-config", config)
    assert result.code == 2
    assert result.runs == []
    assert message in result.log


def test_approve_mcps_in_extra_args_is_still_refused_with_mcp_config(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = json.dumps({"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}})
    result = run(tmp_path, workspace, capsys, {}, "--extra-args=--approve-mcps",
                 "--mcp-config", config)
    assert result.code == 2
    assert "--approve-mcps is refused" in result.log


def test_uncontained_runs_get_the_mcp_file_in_a_home_of_their_own(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}}
    result = run(tmp_path, workspace, capsys, {}, "--mcp-config", json.dumps(config),
                 "--isolation", "none")
    entry = result.runs[-1]
    assert json.loads(entry["mcp_json"]) == config
    assert Path(entry["env"]["HOME"]).parent.name.startswith("run-")


def test_the_api_key_in_the_json_answer_fails_the_run_and_the_answer_is_withheld(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hostile answer carries the API key, plain and base64-encoded, inside the JSON the
    next step will read: the run fails, the structured output and its file are withheld, and
    neither form is in the summary."""
    encoded = base64.b64encode(API_KEY.encode()).decode()
    answer = ('```json\n{"cause": "the key is ' + API_KEY + '", "confidence": 0.5, '
              '"extra": "' + encoded + '"}\n```')
    schema = json.dumps({"type": "object", "required": ["cause"]})
    result = run(tmp_path, workspace, capsys, {"answer": answer}, "--output-schema", schema)
    assert result.outputs["conclusion"] == "failure"
    assert result.outputs["structured-output"] == ""
    assert result.outputs["structured-output-file"] == ""
    assert "holds the API key, in some form" in result.summary
    for text in (result.outputs["final-message"], result.summary):
        assert API_KEY not in text
        assert encoded not in text


@pytest.mark.parametrize("available", [True, False])
def test_the_clis_own_sandbox_mode_is_passed_and_a_sandbox_that_cannot_start_is_run_once_more_off(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, available: bool,
) -> None:
    """Where the check finds the CLI's sandbox can start, the run passes --sandbox enabled; if
    the CLI then says "Sandbox mode is enabled but not available" (before any event), the run
    is started once more with --sandbox disabled, and succeeds. Where the check says no, the
    first start already passes disabled."""
    monkeypatch.setattr(cli_sandbox, "probe",
                        lambda: cli_sandbox.SandboxSupport(available, "" if available else "no"))
    result = run(tmp_path, workspace, capsys, {"sandbox_unavailable": True})
    assert result.outputs["conclusion"] == "success", result.log
    modes = [entry["argv"][entry["argv"].index("--sandbox") + 1] for entry in result.runs]
    assert modes == (["enabled", "disabled"] if available else ["disabled"])
    assert ("running once more with --sandbox disabled" in result.log) is available


def test_replay_issue_47_a_file_name_and_the_final_message_never_render_live(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 47, the way found in the box with the default set-up: the agent makes a file
    named ``docs-----BEGIN<TAB>PRIVATE KEY-----.md`` behind the tools' back (the summary's
    "changed without a write tool" note names it) and starts its final message with the END
    line. The summary's redaction, run over the rendered Markdown, turned everything between
    into ``***``, our fence included, and what followed END rendered live."""
    payload = ("<img src=https://evil.example/x.png> [phish](https://evil.example/) @octocat")
    say = event("assistant", message={"role": "assistant", "content": [
        {"type": "text", "text": f"-----END PRIVATE KEY-----\n{payload}"}]})
    scenario = {"lines": [INIT, say, RESULT],
                "edits": {"docs-----BEGIN\tPRIVATE KEY-----.md": "x\n"}}
    result = run(tmp_path, workspace, capsys, scenario)
    # The first redaction now knows a tab in the header too (the name's BEGIN is ``***``
    # before anything is rendered); the net after rendering stays, for shapes it does not.
    assert json.loads(result.outputs["files-changed"]) == ["docs***.md"]
    assert "evil.example" in result.summary
    assert live_parts(result.summary) == []
