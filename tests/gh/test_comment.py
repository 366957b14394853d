"""comment: sticky comments through PyGithub against the loopback GitHub server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_GITHUB, EXIT_USAGE
from cursor_agent_action.gh.api import COMMENT_LIMIT
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import READ_ONLY_TOKEN, GitHubServer, error_line

SESSION = "0b5c3f0e-1111-4222-8333-444455556666"
TRANSCRIPT = "\n".join(json.dumps(event) for event in [
    {"type": "system", "subtype": "init", "cwd": "/w", "session_id": SESSION, "model": "Auto"},
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "The docs now describe the new flag."}]}, "session_id": SESSION},
    {"type": "result", "subtype": "success", "duration_ms": 1200, "is_error": False,
     "result": "The docs now describe the new flag.", "session_id": SESSION,
     "request_id": "r-1", "usage": {"inputTokens": 10, "outputTokens": 5}},
]) + "\n"


@dataclass
class Env:
    gh: GitHubServer
    out: Path
    tmp: Path
    monkeypatch: pytest.MonkeyPatch
    capsys: pytest.CaptureFixture[str]

    def comment(self, *args: str) -> tuple[int, dict[str, str], str]:
        self.out.write_text("")
        self.capsys.readouterr()
        code = cli.main(["comment", "--output-file", str(self.out), *args])
        return code, parse_output_file(self.out.read_text()), self.capsys.readouterr().out

    def event(self, payload: dict[str, object]) -> None:
        path = self.tmp / "event.json"
        path.write_text(json.dumps(payload))
        self.monkeypatch.setenv("GITHUB_EVENT_PATH", str(path))

    def bodies(self) -> list[str]:
        return [c["body"] for c in self.gh.state.comments.values()]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Env]:
    with GitHubServer(per_page_max=2) as gh:
        for key, value in gh.env(GITHUB_WORKFLOW="Docs", GITHUB_JOB="publish").items():
            monkeypatch.setenv(key, value)
        for key in ("GITHUB_EVENT_PATH", "CURSOR_AGENT_ACTION_NUMBER",
                    "CURSOR_AGENT_ACTION_MARKER", "CURSOR_AGENT_ACTION_BODY",
                    "CURSOR_AGENT_ACTION_COMMENT_AUTHOR"):
            monkeypatch.delenv(key, raising=False)
        yield Env(gh, tmp_path / "out.txt", tmp_path, monkeypatch, capsys)


def test_creates_then_updates_in_place_found_by_marker_across_pages(env: Env) -> None:
    number = env.gh.add_issue()
    env.event({"issue": {"number": number}})
    code, first, _ = env.comment("--body", "first")
    assert code == 0
    # Other people's comments push ours onto a later page (the server pages by 2).
    for text in ("looks good", "<!-- cursor-agent-action:Docs/publish --> quoted", "thanks"):
        env.gh.state.comments[len(env.gh.state.comments) + 5000] = {
            "id": len(env.gh.state.comments) + 5000, "_issue": number, "body": text,
            "user": {"login": "someone"}, "html_url": "x", "url": "x"}
    code, second, _ = env.comment("--body", "second")
    assert code == 0
    assert second == first
    ours = env.gh.state.comments[int(first["comment-id"])]
    assert ours["body"].startswith("<!-- cursor-agent-action:Docs/publish -->\nsecond")
    assert "https://github.example/octo/widgets/actions/runs/777/attempts/1" in ours["body"]
    assert first["comment-url"] == ours["html_url"]
    assert first["issue-number"] == str(number)
    assert len(env.gh.requests_to("POST", r"/comments$")) == 1
    assert len(env.gh.requests_to("PATCH", r"/comments/")) == 1


def test_same_body_again_makes_no_write(env: Env) -> None:
    number = env.gh.add_issue()
    env.comment("--number", str(number), "--body", "same")
    code, _, log = env.comment("--number", str(number), "--body", "same")
    assert code == 0
    assert "already up to date" in log
    assert env.gh.requests_to("PATCH", r"/comments/") == []


def test_default_marker_survives_any_workflow_name(env: Env) -> None:
    env.monkeypatch.setenv("GITHUB_WORKFLOW", "CI (nightly) -- <main>")
    number = env.gh.add_issue()
    code, _, _ = env.comment("--number", str(number), "--body", "x")
    assert code == 0
    (body,) = env.bodies()
    assert body.startswith("<!-- cursor-agent-action:CI -nightly- - -main-/publish -->\n")


def test_distinct_markers_keep_distinct_comments(env: Env) -> None:
    number = env.gh.add_issue()
    env.comment("--number", str(number), "--body", "a", "--marker", "triage")
    env.comment("--number", str(number), "--body", "b", "--marker", "docs")
    assert sorted(b.split("\n")[0] for b in env.bodies()) == [
        "<!-- cursor-agent-action:docs -->", "<!-- cursor-agent-action:triage -->"]


def test_number_comes_from_the_pull_request_event(env: Env) -> None:
    number = env.gh.add_pull("feature")
    env.event({"pull_request": {"number": number, "head": {"repo": {
        "full_name": "octo/widgets"}}}})
    code, out, _ = env.comment("--body", "hi")
    assert code == 0
    assert env.gh.state.comments[int(out["comment-id"])]["_issue"] == number


def test_number_comes_from_a_workflow_run_event(env: Env) -> None:
    number = env.gh.add_pull("feature")
    env.event({"workflow_run": {"id": 5, "pull_requests": [{"number": number}]}})
    code, out, _ = env.comment("--body", "triage")
    assert code == 0
    assert out["issue-number"] == str(number)


def test_transcript_body_is_the_compact_summary(env: Env) -> None:
    number = env.gh.add_issue()
    transcript = env.tmp / "t.jsonl"
    transcript.write_text(TRANSCRIPT)
    code, out, _ = env.comment("--number", str(number), "--transcript", str(transcript))
    assert code == 0
    body = env.gh.state.comments[int(out["comment-id"])]["body"]
    assert "The docs now describe the new flag." in body
    assert "actions/runs/777" in body


def test_huge_body_is_cut_to_githubs_limit(env: Env) -> None:
    number = env.gh.add_issue()
    big = env.tmp / "big.md"
    big.write_text("x" * 200_000)
    code, out, _ = env.comment("--number", str(number), "--body-file", str(big))
    assert code == 0
    body = env.gh.state.comments[int(out["comment-id"])]["body"]
    assert len(body) <= COMMENT_LIMIT
    assert "cut to fit" in body
    assert body.endswith("/actions/runs/777/attempts/1)")


def test_secrets_in_the_body_are_redacted(env: Env) -> None:
    number = env.gh.add_issue()
    env.monkeypatch.setenv("CURSOR_API_KEY", "key_live_supersecret")
    env.comment("--number", str(number), "--body", "leaked key_live_supersecret here")
    (body,) = env.bodies()
    assert "supersecret" not in body
    assert "leaked *** here" in body


@pytest.mark.parametrize(("args", "needle"), [
    ([], "no pull request or issue to comment on"),
    (["--number", "abc"], "--number must be a pull request or issue number"),
    (["--number", "1", "--marker", "a-->b"], "not usable in a hidden HTML comment"),
])
def test_bad_input_is_a_usage_error(env: Env, args: list[str], needle: str) -> None:
    code, _, log = env.comment("--body", "x", *args)
    assert code == EXIT_USAGE
    assert needle in log
    assert env.gh.requests == []


def test_missing_token_on_a_fork_pr_says_why_and_how_to_fix(env: Env) -> None:
    env.monkeypatch.delenv("GITHUB_TOKEN")
    env.event({"pull_request": {"number": 3, "head": {"repo": {"full_name": "fork/widgets"}}}})
    code, _, log = env.comment("--body", "x")
    assert code == EXIT_GITHUB
    line = error_line(log)
    assert "no GitHub token: GITHUB_TOKEN is empty or unset" in line
    assert "fork fork/widgets" in line
    assert "workflow_run" in line


def test_read_only_token_403_names_the_permission_and_the_fork(env: Env) -> None:
    number = env.gh.add_issue()
    env.monkeypatch.setenv("GITHUB_TOKEN", READ_ONLY_TOKEN)
    env.event({"pull_request": {"number": number, "head": {"repo": {
        "full_name": "fork/widgets"}}}})
    code, _, log = env.comment("--body", "x")
    assert code == EXIT_GITHUB
    line = error_line(log)
    assert f"commenting on #{number} failed: GitHub answered 403" in line
    assert "Resource not accessible by integration" in line
    assert "pull-requests: write" in line
    assert "read-only" in line
    assert "Traceback" not in log


@pytest.mark.parametrize(("status", "needle"), [
    (401, "invalid or expired"), (404, "Check that octo/widgets"),
])
def test_auth_and_missing_errors_have_hints(env: Env, status: int, needle: str) -> None:
    env.gh.fail("GET", r"/comments$", status)
    code, _, log = env.comment("--number", "9", "--body", "x")
    assert code == EXIT_GITHUB
    line = error_line(log)
    assert f"GitHub answered {status}" in line
    assert needle in line


def test_secondary_rate_limit_429_is_waited_out_and_retried(env: Env) -> None:
    number = env.gh.add_issue()
    env.gh.rate_limit("POST", r"/comments$", primary=False, reset_in=0, times=2)
    code, _, log = env.comment("--number", str(number), "--body", "x")
    assert code == 0, log
    assert len(env.gh.requests_to("POST", r"/comments$")) == 3
    assert log.count("GitHub answered 429; waiting 0 s") == 2
    assert len(env.bodies()) == 1


def test_without_a_pr_an_issue_is_opened_then_updated_in_place(env: Env) -> None:
    env.gh.add_pull("unrelated")  # pull requests are listed as issues too: never picked
    code, first, _ = env.comment("--body", "CI broke", "--issue-title", "CI failure on main")
    assert code == 0
    number = int(first["issue-number"])
    issue = env.gh.state.issues[number]
    assert issue["title"] == "CI failure on main"
    assert [label["name"] for label in issue["labels"]] == ["cursor-agent"]
    assert issue["body"].startswith("<!-- cursor-agent-action:Docs/publish -->\nCI broke")
    assert first["comment-id"] == ""
    assert first["comment-url"] == issue["html_url"]
    code, second, _ = env.comment("--body", "CI still broken", "--issue-title",
                                  "CI failure on main")
    assert code == 0
    assert second["issue-number"] == str(number)
    assert env.gh.state.issues[number]["body"].endswith(
        "CI still broken\n\n[Workflow run](https://github.example/octo/widgets/actions/runs/"
        "777/attempts/1)")
    assert len(env.gh.requests_to("POST", r"/issues$")) == 1
    assert env.gh.requests_to("GET", r"/issues$")[0].query["labels"] == "cursor-agent"


def test_a_planted_marker_by_someone_else_is_never_taken_for_ours(env: Env) -> None:
    """Anyone can write the marker: only comment-author's comments are found and edited."""
    number = env.gh.add_issue()
    planted = env.gh.add_comment(number, "<!-- cursor-agent-action:Docs/publish -->\nmine",
                                 login="mallory")
    code, first, _ = env.comment("--number", str(number), "--body", "ours")
    assert code == 0
    assert first["comment-id"] != str(planted)
    code, second, log = env.comment("--number", str(number), "--body", "ours again")
    assert code == 0
    assert second["comment-id"] == first["comment-id"]
    assert env.gh.state.comments[planted]["body"].endswith("\nmine")
    assert env.gh.state.comments[int(first["comment-id"])]["body"].startswith(
        "<!-- cursor-agent-action:Docs/publish -->\nours again")
    assert env.gh.requests_to("PATCH", rf"/comments/{planted}$") == []
    assert "::warning" not in log


def test_comment_author_matches_logins_ignoring_case_and_warns_when_the_token_is_not_it(
        env: Env) -> None:
    number = env.gh.add_issue()
    env.gh.add_comment(number, "<!-- cursor-agent-action:Docs/publish -->\nold",
                       login="Docs-Bot[bot]")
    env.monkeypatch.setenv("CURSOR_AGENT_ACTION_COMMENT_AUTHOR", "docs-bot[bot]")
    code, _, log = env.comment("--number", str(number), "--body", "new")
    assert code == 0
    assert env.gh.requests_to("POST", r"/comments$") == []
    assert env.gh.requests_to("PATCH", r"/comments/")
    env.gh.state.comments.clear()
    code, _, log = env.comment("--number", str(number), "--body", "new")
    assert code == 0
    assert ("was written by github-actions[bot], not by comment-author docs-bot[bot]: re-runs "
            "will add a new one" in log)
    assert "Set comment-author: github-actions[bot]." in log


def test_a_planted_sticky_issue_by_someone_else_is_left_alone(env: Env) -> None:
    planted = env.gh.add_issue("CI failure on main",
                               "<!-- cursor-agent-action:Docs/publish -->\nphish",
                               login="mallory", labels=("cursor-agent",))
    code, out, _ = env.comment("--body", "CI broke", "--issue-title", "CI failure on main")
    assert code == 0
    assert out["issue-number"] != str(planted)
    assert env.gh.state.issues[planted]["body"].endswith("\nphish")
    assert env.gh.requests_to("PATCH", rf"/issues/{planted}$") == []
    code, again, _ = env.comment("--body", "CI still broken", "--issue-title",
                                 "CI failure on main")
    assert again["issue-number"] == out["issue-number"]
    assert len(env.gh.requests_to("POST", r"/issues$")) == 1


EVIL = ("# Owned\n![pixel](https://evil.example/p.png) <img src=x onerror=alert(1)>\n"
        "[click](https://evil.example) <!-- hidden --> ping @mallory and @octo/admins\n"
        "````\nescape the fence\n<details open>")


def _evil_transcript(path: Path) -> str:
    path.write_text(TRANSCRIPT.replace("The docs now describe the new flag.",
                                       EVIL.replace("\n", "\\n").replace('"', '\\"')))
    return str(path)


@pytest.mark.parametrize("source", ["transcript", "final-message"])
def test_agent_markup_passed_the_recommended_way_stays_inert(env: Env, source: str) -> None:
    """No heading, image, link, HTML or @mention of the agent's renders: all of it is fenced."""
    from tests.stream.test_summary import rendered_markup

    number = env.gh.add_issue()
    value = _evil_transcript(env.tmp / "evil.jsonl") if source == "transcript" else EVIL
    code, out, _ = env.comment("--number", str(number), f"--{source}", value)
    assert code == 0
    body = env.gh.state.comments[int(out["comment-id"])]["body"]
    assert "escape the fence" in body  # shown verbatim, but inert
    assert "@mallory" in body
    marker, rest = body.split("\n", 1)
    assert marker == "<!-- cursor-agent-action:Docs/publish -->"
    rendered = rendered_markup(rest)
    for markup in ("# Owned", "![pixel]", "<img", "[click]", "<!--", "@mallory", "@octo",
                   "<details", "escape the fence"):
        assert markup not in rendered, markup
    assert "https://github.example/octo/widgets/actions/runs/777" in body


def test_a_huge_final_message_is_cut_inside_its_fence(env: Env) -> None:
    from tests.stream.test_summary import rendered_markup

    number = env.gh.add_issue()
    code, out, _ = env.comment("--number", str(number), "--final-message",
                               "@mallory " * 20_000)
    assert code == 0
    body = env.gh.state.comments[int(out["comment-id"])]["body"]
    assert len(body) <= COMMENT_LIMIT
    assert "... (cut to fit GitHub's size limit)\n```\n\n[Workflow run]" in body
    assert "@mallory" not in rendered_markup(body)


def test_a_secret_cut_at_the_size_limit_leaves_no_piece_behind(env: Env) -> None:
    """Secrets are redacted before the text is cut, not after: no prefix of one survives."""
    number = env.gh.add_issue()
    big = env.tmp / "big.md"
    big.write_text("x" * 200_000)
    _, first, _ = env.comment("--number", str(number), "--body-file", str(big))
    kept = env.gh.state.comments[int(first["comment-id"])]["body"].count("x")
    secret = "key_live_supersecret_0123456789"
    env.monkeypatch.setenv("CURSOR_API_KEY", secret)
    big.write_text("x" * (kept - 12) + secret + "y" * 1000)
    code, out, _ = env.comment("--number", str(number), "--body-file", str(big))
    assert code == 0
    body = env.gh.state.comments[int(out["comment-id"])]["body"]
    assert "key_live" not in body
    assert "x***y" in body


def test_api_url_credentials_never_reach_the_error(env: Env) -> None:
    env.monkeypatch.setenv("GITHUB_API_URL", "http://bob:pw_hidden_42@127.0.0.1:9")
    code, _, log = env.comment("--number", "1", "--body", "x")
    assert code == EXIT_GITHUB
    line = error_line(log)
    assert "cannot reach http://***@127.0.0.1:9" in line
    assert "pw_hidden_42" not in log
