"""A triage fanned out over the matrix: ci-context writes one file per failed job (bounded by
max-jobs, the rest listed as not triaged) and the matrix; comment makes ONE comment of the
jobs' transcripts, one section per job, a job without an answer said so, agent text inert."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_USAGE
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import GitHubServer

T = "2026-11-22T01:00:{:02d}.0000000Z "


def job(name: str, error: str) -> dict[str, object]:
    log = "".join(T.format(s) + t + "\n" for s, t in (
        (1, "##[group]Run pytest"), (2, f"FAILED {error}"),
        (3, "##[error]Process completed with exit code 1.")))
    return {"name": name, "conclusion": "failure", "log": log.encode(),
            "steps": [("Run pytest", "failure", "2026-11-22T01:00:01Z", "2026-11-22T01:00:03Z")]}


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    with GitHubServer() as server:
        for key, value in server.env(GITHUB_EVENT_NAME="workflow_run").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
        yield server


def run(tmp_path: Path, *args: str) -> tuple[int, dict[str, str], str]:
    out = tmp_path / "out.txt"
    out.write_text("")
    code = cli.main([*args[:1], "--output-file", str(out), *args[1:]])
    return code, parse_output_file(out.read_text()), ""


def transcript(text: str) -> str:
    events = [{"type": "system", "subtype": "init", "session_id": "s", "model": "Auto"},
              {"type": "assistant", "session_id": "s",
               "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}},
              {"type": "result", "subtype": "success", "is_error": False, "result": text,
               "session_id": "s", "duration_ms": 10}]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_one_file_per_failed_job_bounded_and_one_comment_of_their_answers(
        gh: GitHubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issue = gh.add_issue()  # the comment's target (a pull request's conversation is one)
    run_id = gh.add_run([job("lint", "E501 line too long"),
                         job("tests (3.11)", "test_a - KeyError"),
                         job("tests `3.12`\n## Injected", "test_b - ValueError"),
                         job("docs", "sphinx warning")], pull_numbers=(issue,))
    jobs_dir = tmp_path / "jobs"
    code, out, _ = run(tmp_path, "ci-context", "--run-id", str(run_id), "--max-jobs", "3",
                       "--jobs-dir", str(jobs_dir))
    assert code == 0
    assert json.loads(out["matrix"]) == {"job": [1, 2, 3]}
    assert [j["name"] for j in json.loads(out["not-triaged"])] == ["docs"]
    assert "over max-jobs (3): not triaged" in capsys.readouterr().out
    for number, error in ((1, "E501"), (2, "KeyError"), (3, "ValueError")):
        text = (jobs_dir / f"job-{number}.md").read_text()
        assert error in text  # its own log, with the whole budget
        assert f"Yours is job {number}" in text
        assert sum(e in text for e in ("E501", "KeyError", "ValueError")) == 1
    # Two triage jobs answered; the third failed and left nothing; a forged extra folder.
    found = tmp_path / "found"
    for number, text in ((1, "Line 12 is too long."),
                         (2, "KeyError: <img src=x> @octocat ## heading")):
        (found / f"ci-triage-job-{number}").mkdir(parents=True)
        (found / f"ci-triage-job-{number}" / "transcript.jsonl").write_text(transcript(text))
    (found / "ci-triage-job-9").mkdir()
    (found / "ci-triage-job-9" / "transcript.jsonl").write_text(transcript("forged"))
    code, out, _ = run(tmp_path, "comment", "--number", str(issue), "--marker", "ci-triage",
                       "--jobs-file", out["jobs-file"], "--transcripts-dir", str(found))
    assert code == 0
    (posted,) = gh.requests_to("POST", rf"/issues/{issue}/comments$")
    body = posted.body["body"]
    assert body.count("#### Job ") == 3
    assert "#### Job 1: `lint` (failure)" in body
    assert "Line 12 is too long." in body
    # The agent's text is fenced (inert); a job name cannot open a heading of its own.
    assert "```text\nKeyError: <img src=x> @octocat ## heading\n```" in body
    assert "#### Job 3: ``tests `3.12`⏎## Injected`` (failure)" in body
    assert "\n## Injected" not in body
    assert "*No answer: its triage job failed, timed out, was cancelled or left no " \
           "transcript.*" in body
    assert "#### Not triaged (1 more failed job(s), over max-jobs)" in body
    assert "`docs`" in body
    assert "forged" not in body


def test_jobs_file_and_transcripts_dir_go_together(gh: GitHubServer, tmp_path: Path) -> None:
    code, _, _ = run(tmp_path, "comment", "--number", "7", "--jobs-file", "x.json")
    assert code == EXIT_USAGE
    code, _, _ = run(tmp_path, "comment", "--number", "7", "--jobs-file", "x.json",
                     "--transcripts-dir", ".", "--body", "mine")
    assert code == EXIT_USAGE
    assert gh.requests == []
