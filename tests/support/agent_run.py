"""Running ``cursor-agent-action run`` (``cli.main``) against the stand-in CLI from tests:
the events a scenario replays, the run itself and what it left (outputs, summary, log)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.cli import main
from cursor_agent_action.output_file import parse_output_file
from tests.support.standin import make_standin, runs

SESSION = "5e55a0b1-0000-4000-8000-00000000c0de"
API_KEY = "key_test_0123456789abcdef"
CREDENTIALS = {
    "GITHUB_TOKEN": "ghs_secret_github_token",
    "GH_TOKEN": "gho_secret_gh_token",
    "ACTIONS_RUNTIME_TOKEN": "runtime-secret",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-secret",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://oidc.example/secret",
    "INPUT_API_KEY": "input-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
}


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields, "session_id": SESSION}


INIT = event("system", subtype="init", apiKeySource="env", cwd="/home/runner/work/repo",
              model="Auto", permissionMode="default")
SAY = event("assistant", message={"role": "assistant",
                                   "content": [{"type": "text", "text": "All done."}]})
RESULT = event("result", subtype="success", duration_ms=2500, duration_api_ms=2500,
                is_error=False, result="All done.", request_id="req-1",
                usage={"inputTokens": 10, "outputTokens": 5, "cacheReadTokens": 0,
                       "cacheWriteTokens": 0})


def tool(subtype: str, call_id: str, kind: str, args: dict[str, Any],
          result: dict[str, Any] | None = None) -> dict[str, Any]:
    inner: dict[str, Any] = {"args": args}
    if result is not None:
        inner["result"] = result
    return event("tool_call", subtype=subtype, call_id=call_id,
                  tool_call={kind: inner, "toolCallId": call_id})


@dataclass
class Run:
    code: int
    outputs: dict[str, str]
    summary: str
    log: str
    workspace: Path
    tmp: Path

    @property
    def runs(self) -> list[dict[str, Any]]:
        return runs(self.tmp)


def make_workspace(tmp_path: Path) -> Path:
    """A git repository with one commit, as actions/checkout leaves it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# demo\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    return repo


def set_run_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A runner-like environment with credentials that must never reach the agent."""
    env = {"RUNNER_TEMP": str(tmp_path / "runner-temp"), "CURSOR_API_KEY": API_KEY,
           "LC_ALL": "C.UTF-8", "CI": "true", **CREDENTIALS}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    scenario: dict[str, Any], *args: str, prompt: str | None = "Update the docs.",
) -> Run:
    scenario.setdefault("record", "record.jsonl")
    if "transcript" not in scenario and "answer" not in scenario:
        scenario.setdefault("lines", [INIT, SAY, RESULT])
    agent = make_standin(tmp_path, scenario)
    output, summary = tmp_path / "outputs.txt", tmp_path / "summary.md"
    argv = ["run", "--agent-bin", str(agent), "--working-directory", str(workspace),
            "--output-file", str(output), "--summary-file", str(summary), "--retry-delay", "0",
            *args]
    if prompt is not None:
        argv += ["--prompt", prompt]
    code = main(argv)
    return Run(
        code=code,
        outputs=parse_output_file(output.read_text()) if output.exists() else {},
        summary=summary.read_text() if summary.exists() else "",
        log=capsys.readouterr().out,
        workspace=workspace,
        tmp=tmp_path,
    )


