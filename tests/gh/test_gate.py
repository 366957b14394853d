"""gate: who may start the agent. Real HTTP to the loopback GitHub API; the event payload is a
file as the runner writes it. A refusal is an answer (exit 0, allowed=false, a notice), never a
failed step; the comment is untrusted text that leaves only as the task output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action import cli
from cursor_agent_action.gh.gate import parse_command
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import GitHubServer, error_line

REPO = "octo/widgets"


@dataclass
class Gate:
    gh: GitHubServer
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    pull: int

    def comment(self, body: str, *, login: str = "maintainer", kind: str = "User",
                action: str = "created", on_pull: bool = True, number: int = 0) -> dict[str, Any]:
        issue: dict[str, Any] = {"number": number or self.pull}
        if on_pull:
            issue["pull_request"] = {"url": "https://api.example/pulls"}
        return {"action": action, "issue": issue,
                "comment": {"body": body, "user": {"login": login, "type": kind}},
                "sender": {"login": login, "type": kind}}

    def run(self, event: dict[str, Any], *args: str, name: str = "issue_comment",
            ) -> tuple[int, dict[str, str], str]:
        path = self.tmp / "event.json"
        path.write_text(json.dumps(event))
        self.monkeypatch.setenv("GITHUB_EVENT_PATH", str(path))
        self.monkeypatch.setenv("GITHUB_EVENT_NAME", name)
        out, summary = self.tmp / "out.txt", self.tmp / "summary.md"
        out.write_text("")
        code = cli.main(["gate", "--output-file", str(out), "--summary-file", str(summary),
                         *args])
        return code, parse_output_file(out.read_text()), summary.read_text() if (
            summary.exists()) else ""


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    with GitHubServer(REPO) as gh:
        for key, value in gh.env().items():
            monkeypatch.setenv(key, value)
        for key in ("COMMAND", "ALLOWED_PRESETS", "ALLOWED_BOTS"):
            monkeypatch.delenv(f"CURSOR_AGENT_ACTION_{key}", raising=False)
        gh.permissions.update({"maintainer": "write", "owner": "admin", "reader": "read"})
        pull = gh.add_pull("feature", head_sha="c" * 40)
        yield Gate(gh, tmp_path, monkeypatch, pull)


def test_a_maintainers_command_is_allowed_with_its_task_preset_and_head(gate: Gate) -> None:
    code, out, _ = gate.run(gate.comment("/cursor edit Fix the typo in docs/usage.md"))
    assert code == 0
    assert out["allowed"] == "true"
    assert (out["preset"], out["task"]) == ("edit", "Fix the typo in docs/usage.md")
    assert (out["pr-number"], out["head-sha"], out["head-ref"]) == (
        str(gate.pull), "c" * 40, "feature")
    assert out["actor"] == "maintainer"


def test_without_a_preset_the_first_allowed_one_is_used(gate: Gate) -> None:
    _, out, _ = gate.run(gate.comment("/cursor  Update the changelog\nfor this PR"))
    assert (out["preset"], out["task"]) == ("docs", "Update the changelog\nfor this PR")


@pytest.mark.parametrize(("event", "reason"), [
    ({"login": "reader"}, "reader has read permission on octo/widgets; write or higher is needed"),
    ({"login": "stranger"}, "stranger has none permission"),
    ({"login": "renovate[bot]", "kind": "Bot"},
     "renovate[bot] is a bot, and allowed-bots does not list it"),
    ({"action": "edited"}, "only a new comment is a command (this one was edited)"),
    ({"on_pull": False}, "comment commands work on pull requests only"),
])  # fmt: skip
def test_who_may_not_start_the_agent_gets_a_notice_not_a_failure(
    gate: Gate, event: dict[str, Any], reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, summary = gate.run(gate.comment("/cursor Update the docs", **event))
    assert code == 0
    assert out["allowed"] == "false"
    assert reason in out["reason"]
    assert out["task"] == ""
    log = capsys.readouterr().out
    assert "::notice title=cursor-agent-action gate::Not starting the agent: " in log
    assert "::error" not in log
    assert "### Agent not started" in summary


def test_a_listed_bot_is_allowed(gate: Gate) -> None:
    _, out, _ = gate.run(gate.comment("/cursor docs Regenerate the API docs",
                                      login="docs-bot[bot]", kind="Bot"),
                         "--allowed-bots", "docs-bot[bot]")
    assert out["allowed"] == "true"


def test_a_pull_request_from_a_fork_is_refused(gate: Gate) -> None:
    fork = gate.gh.add_pull("patch-1", head_repo="someone/widgets")
    _, out, _ = gate.run(gate.comment("/cursor Update the docs", number=fork))
    assert out["allowed"] == "false"
    assert out["reason"].startswith(f"pull request #{fork} comes from the fork someone/widgets")


def test_a_preset_outside_the_allowed_list_is_refused(gate: Gate) -> None:
    _, out, _ = gate.run(gate.comment("/cursor edit Rewrite the CLI"), "--allowed-presets",
                         "docs")
    assert out["allowed"] == "false"
    assert "asks for the edit preset, which this workflow does not allow (allowed: docs)" in (
        out["reason"])


def test_a_hostile_comment_stays_data(gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    """Workflow commands and an output delimiter in the comment reach only the task output."""
    body = "/cursor Do it\n::add-mask::x\n::set-output name=allowed::true\nEOF\nallowed<<EOF"
    _, out, _ = gate.run(gate.comment(body))
    assert out["task"] == body.removeprefix("/cursor ").strip()
    assert "::add-mask::x" not in capsys.readouterr().out


def test_other_events_check_the_sender(gate: Gate) -> None:
    event = {"pull_request": {"number": gate.pull}, "sender": {"login": "reader"}}
    _, out, _ = gate.run(event, name="pull_request")
    assert out["allowed"] == "false"
    assert "reader has read permission" in out["reason"]
    event["sender"] = {"login": "owner"}
    _, out, _ = gate.run(event, name="pull_request")
    assert out["allowed"] == "true"
    assert out["head-sha"] == "c" * 40


def test_an_api_failure_fails_the_step(gate: Gate, capsys: pytest.CaptureFixture[str]) -> None:
    gate.gh.fail("GET", r"/collaborators/maintainer/permission$", 401, message="Bad credentials")
    code, _, _ = gate.run(gate.comment("/cursor Update the docs"))
    assert code == 4
    assert "reading maintainer's permission on octo/widgets" in error_line(
        capsys.readouterr().out)


@pytest.mark.parametrize(("body", "expected"), [
    ("/cursor fix it", ("docs", "fix it", "")),
    ("/cursorfix it", ("", "", "the comment does not start with /cursor")),
    ("please /cursor fix it", ("", "", "the comment does not start with /cursor")),
    ("/cursor", ("", "", "no task after /cursor")),
    ("/cursor docs", ("", "", "no task after /cursor")),
    ("/cursor read-only explain", ("", "", "asks for the read-only preset")),
])  # fmt: skip
def test_parse_command(body: str, expected: tuple[str, str, str]) -> None:
    preset, task, refusal = parse_command(body, "/cursor", ["docs", "edit"])
    assert (preset, task) == expected[:2]
    assert expected[2] in refusal
    assert bool(refusal) == bool(expected[2])
