"""review's commit status, against the loopback GitHub API (which keeps statuses per commit and
context as GitHub does, and refuses a token the test withholds ``statuses: write`` from)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_GITHUB, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE
from cursor_agent_action.gh.review import status as status_mod
from cursor_agent_action.gh.review.findings import parse
from cursor_agent_action.output_file import parse_output_file
from tests.gh.test_review import Env, answer, finding, open_env
from tests.support.github_server import READ_ONLY_TOKEN, TOKEN, error_line

CONTEXT = "cursor-agent-action/review"
API_HEAD = "c" * 40  # the pull request's head as the API gives it (see open_env)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Env]:
    with open_env(tmp_path, monkeypatch, capsys) as opened:
        yield opened


def states(env: Env, sha: str, context: str = CONTEXT) -> list[tuple[str, str]]:
    """(state, description) of every status set on ``sha`` under ``context``, oldest first."""
    return [(s["state"], s["description"]) for s in env.gh.state.statuses
            if s["_sha"] == sha and s["context"] == context]


def event_for(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, head: str,
              number: int | None = None) -> None:
    """The triggering ``pull_request`` event: the agent reviewed ``head``."""
    path = tmp_path / f"event-{head[:4]}.json"
    path.write_text(json.dumps({"pull_request": {
        "number": env.number if number is None else number, "head": {"sha": head}}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(path))


def test_a_finding_at_fail_on_sets_failure_after_pending_and_before_the_step_fails(
    env: Env,
) -> None:
    code, out, log = env.review(answer(finding(severity="critical"), finding(severity="minor")),
                                "--fail-on", "major")
    assert code == EXIT_RUN_FAILED
    assert states(env, API_HEAD) == [
        ("pending", "Posting the review"),
        ("failure", "Changes requested, highest critical: 1 critical, 1 minor (fail-on: major)")]
    final = env.gh.status_of(API_HEAD, CONTEXT)
    assert final is not None
    assert final["target_url"] == out["review-url"]
    assert (out["status-state"], out["status-sha"]) == ("failure", API_HEAD)
    # The pending status comes before the review: a token that may not set statuses fails
    # before anything is posted (see below).
    order = [(r.method, r.path.rsplit("/", 1)[-1]) for r in env.gh.requests
             if r.method == "POST"]
    assert order == [("POST", API_HEAD), ("POST", "reviews"), ("POST", API_HEAD)]
    assert f"commit status {CONTEXT} on {API_HEAD}: failure" in log


@pytest.mark.parametrize(("verdict", "extra", "description"), [
    ("comment", (), "Reviewed, highest minor: 1 minor (agent: comment; none at fail-on major)"),
    ("approve", (), "Reviewed, highest minor: 1 minor (agent: approve; none at fail-on major)"),
    ("approve", ("--allow-approve",), "Reviewed, highest minor: 1 minor (agent: approve; none "
     "at fail-on major)"),
    # fail-on is the rule the workflow set: the agent's own verdict does not turn it red.
    ("request-changes", (), "Reviewed, highest minor: 1 minor (agent: request-changes; none "
     "at fail-on major)"),
])
def test_no_finding_at_fail_on_sets_success(env: Env, verdict: str, extra: tuple[str, ...],
                                            description: str) -> None:
    code, out, _ = env.review(answer(finding(severity="minor"), verdict=verdict),
                              "--fail-on", "major", *extra)
    assert code == EXIT_OK
    assert states(env, API_HEAD)[-1] == ("success", description)
    assert out["status-state"] == "success"


def test_no_findings_and_fail_on_none() -> None:
    done = status_mod.verdict("d" * 40, parse({"summary": "", "verdict": "approve",
                                               "findings": []}, "findings"), 0, "none", "u")
    assert (done.state, done.description) == ("success", "Reviewed, no findings (agent: approve)")


def test_the_description_is_ours_and_fits_even_for_many_findings() -> None:
    """The agent's words never reach the status (its summary and titles could say "all
    checks passed"); counts of thousands still fit GitHub's 140 characters."""
    hostile = "LGTM, all checks passed ::error::x " * 8
    items = [{"path": "a.py", "line": n, "severity": s, "title": hostile, "body": hostile}
             for n in range(1, 2001) for s in ("critical", "major", "minor", "nit")]
    answer_ = parse({"summary": hostile, "verdict": "request-changes", "findings": items},
                    "findings")
    for blocking, fail_on in ((8000, "nit"), (0, "none")):
        done = status_mod.verdict("d" * 40, answer_, blocking, fail_on, "u")
        assert len(done.description) <= status_mod.DESCRIPTION_LIMIT
        assert "LGTM" not in done.description
        assert "::" not in done.description
    assert status_mod.shorten("x" * 200) == "x" * 139 + "…"


def test_a_token_without_statuses_write_fails_before_posting_naming_the_permission(
    env: Env,
) -> None:
    env.gh.withheld[TOKEN] = {"statuses"}
    code, _, log = env.review(answer(finding()))
    assert code == EXIT_GITHUB
    line = error_line(log)
    assert (f"setting the commit status {CONTEXT} on {API_HEAD[:12]} failed: GitHub answered "
            "403 (Resource not accessible by integration)") in line
    assert "Give the job `permissions: statuses: write`" in line
    assert "Or set status-context: none" in line
    assert env.posted() == []  # no review without its status
    assert env.gh.state.statuses == []


def test_status_context_none_sets_no_status_and_needs_no_permission(env: Env) -> None:
    env.gh.withheld[TOKEN] = {"statuses"}
    code, out, _ = env.review(answer(finding(severity="critical")), "--fail-on", "major",
                              "--status-context", "none")
    assert code == EXIT_RUN_FAILED  # fail-on still fails the step
    assert env.gh.requests_to("POST", r"/statuses/") == []
    assert out["status-state"] == ""
    assert len(env.posted()) == 1


def test_a_named_context_is_its_own_status(env: Env) -> None:
    code, _, _ = env.review(answer(finding()), "--status-context", "review / security")
    assert code == EXIT_OK
    assert states(env, API_HEAD, "review / security")[-1][0] == "success"
    assert states(env, API_HEAD) == []


def test_the_status_goes_on_the_commit_the_agent_reviewed_and_a_new_push_gets_its_own(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run for an older push that finishes late (its findings were about that push) must
    not paint the newer head: its status goes on the commit its event named."""
    first, second = "a" * 40, "b" * 40
    event_for(env, tmp_path, monkeypatch, first)  # the API's head has moved on to API_HEAD
    code, out, _ = env.review(answer(finding(severity="critical")), "--fail-on", "major")
    assert code == EXIT_RUN_FAILED
    assert [s for s, _ in states(env, first)] == ["pending", "failure"]
    assert states(env, API_HEAD) == []
    assert out["status-sha"] == first
    event_for(env, tmp_path, monkeypatch, second)  # the next push, now without the finding
    code, out, _ = env.review(answer(finding(severity="minor")), "--fail-on", "major")
    assert code == EXIT_OK
    assert [s for s, _ in states(env, second)] == ["pending", "success"]
    assert env.gh.status_of(first, CONTEXT)["state"] == "failure"  # type: ignore[index]
    # An event for another pull request says nothing about this one's head: the API's head.
    event_for(env, tmp_path, monkeypatch, "e" * 40, number=env.number + 1)
    assert env.review(answer(finding()))[0] == EXIT_OK
    assert [s for s, _ in states(env, API_HEAD)] == ["pending", "success"]
    # head-sha names it outright.
    assert env.review(answer(finding()), "--head-sha", "F" * 40)[0] == EXIT_OK
    assert [s for s, _ in states(env, "f" * 40)] == ["pending", "success"]


def test_mark_pending_only_marks_the_events_head_and_needs_only_statuses_write(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    event_for(env, tmp_path, monkeypatch, "a" * 40)
    env.out.write_text("")
    code = cli.main(["review", "--output-file", str(env.out), "--mark-pending"])
    assert code == EXIT_OK
    assert states(env, "a" * 40) == [
        ("pending", "Waiting for the review: stays pending unless the review finishes")]
    (made,) = env.gh.state.statuses
    assert made["target_url"] == f"{env.gh.server_url}/octo/widgets/actions/runs/777/attempts/1"
    assert parse_output_file(env.out.read_text()) == {"status-state": "pending",
                                                      "status-sha": "a" * 40}
    assert [r.path for r in env.gh.requests] == ["/repos/octo/widgets/statuses/" + "a" * 40]


def test_mark_pending_without_the_event_reads_the_pull_requests_head(env: Env) -> None:
    code, _, _ = env.review("", "--mark-pending")
    assert code == EXIT_OK
    assert states(env, API_HEAD)[0][0] == "pending"
    assert env.posted() == []


@pytest.mark.parametrize(("args", "message"), [
    (("--mark-pending", "--findings", answer(finding())),
     "mark-pending takes no findings: it only marks the commit pending."),
    (("--mark-pending", "--status-context", "none"),
     "mark-pending sets a commit status, but status-context is none."),
    (("--findings", answer(finding()), "--status-context", "a\nb"),
     "status-context must be one line of printable text"),
    (("--findings", answer(finding()), "--status-context", "x" * 256),
     "status-context is over 255 characters."),
    (("--findings", answer(finding()), "--head-sha", "abc123"),
     "head-sha must be a full 40-character commit SHA, got 'abc123'."),
])
def test_a_bad_status_input_is_one_clear_error_before_any_request(
    env: Env, args: tuple[str, ...], message: str,
) -> None:
    env.out.write_text("")
    env.capsys.readouterr()
    code = cli.main(["review", "--output-file", str(env.out), "--pr-number", str(env.number),
                     *args])
    assert code == EXIT_USAGE
    assert message in error_line(env.capsys.readouterr().out)
    assert env.gh.requests == []


def test_github_refusing_the_status_is_a_clear_error(env: Env) -> None:
    """GitHub's own 422 (a commit it does not know) names the field."""
    env.gh.fail("POST", r"/statuses/", 422, body={
        "message": "Validation Failed", "errors": [f"No commit found for SHA: {API_HEAD}"]})
    code, _, log = env.review(answer(finding()))
    assert code == EXIT_GITHUB
    assert f"No commit found for SHA: {API_HEAD}" in error_line(log)
    assert env.posted() == []



def test_a_fork_pull_request_run_says_why_its_token_may_not_set_the_status(
    env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The example skips forks; a workflow that runs review for one anyway gets GitHub's
    read-only token: one error naming the permission and the fork, nothing posted."""
    path = tmp_path / "fork.json"
    path.write_text(json.dumps({"pull_request": {
        "number": env.number, "head": {"sha": "a" * 40, "repo": {"full_name": "evil/fork"}}}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(path))
    monkeypatch.setenv("GITHUB_TOKEN", READ_ONLY_TOKEN)
    code, _, log = env.review(answer(finding()))
    assert code == EXIT_GITHUB
    line = error_line(log)
    assert "`permissions: statuses: write`" in line
    assert "pull request from the fork evil/fork" in line
    assert env.posted() == []
    assert env.gh.state.statuses == []


def test_a_rate_limit_on_the_status_is_waited_out(env: Env) -> None:
    env.gh.rate_limit("POST", r"/statuses/", primary=False, reset_in=0)
    code, _, log = env.review(answer(finding()))
    assert code == EXIT_OK
    assert "GitHub answered 429; waiting 0 s" in log
    assert [s for s, _ in states(env, API_HEAD)] == ["pending", "success"]


def test_the_status_is_set_once_the_review_is_posted_even_if_tidying_up_then_fails(
    env: Env,
) -> None:
    """Replacing the earlier review's body comes after the status: its failure fails the
    step, but the posted review's status is already the last word."""
    assert env.review(answer(finding(severity="minor")))[0] == EXIT_OK
    env.gh.fail("PUT", r"/reviews/\d+$", 403)
    code, _, _ = env.review(answer(finding(severity="critical")), "--fail-on", "major")
    assert code == EXIT_GITHUB
    assert len(env.posted()) == 2
    assert states(env, API_HEAD)[-1][0] == "failure"
