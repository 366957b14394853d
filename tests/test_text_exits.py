"""What the agent writes never acts in what GitHub renders: every text we did not write is
redacted as text before it is escaped or fenced, and the Markdown made of it only goes through
the one-for-one net (``Redactor.net``), so no redaction can eat a fence of ours.

Checked as GitHub reads it: rendered by cmark-gfm (tests/support/gfm.py), with nothing of the
agent's live (no element, link, image, HTML comment, @mention or #reference outside code).
The three replays are the ways issue 47 found (a private key block's BEGIN in one text, its END
in another, a tab hiding BEGIN from the first redaction)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cursor_agent_action.gh.bodies import compose_body
from cursor_agent_action.gh.review.body import step_summary as review_summary
from cursor_agent_action.gh.review.findings import Answer, Finding
from cursor_agent_action.gh.review.placement import Outside
from cursor_agent_action.redact import Redactor
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.record import Cause, Conclusion, Failure, RunReport, StreamResult
from cursor_agent_action.stream.render import report as report_mod
from cursor_agent_action.stream.render.summary import render_compact
from tests.support.gfm import live_parts, render

BEGIN_TAB = "-----BEGIN\tPRIVATE KEY-----"  # a tab in the header (both nets catch it now)
END = "-----END PRIVATE KEY-----"
PAYLOAD = ("<img src=https://evil.example/x.png> [phish](https://evil.example/login) "
           "![i](https://evil.example/i.png) @octocat <!-- hidden -->")


def _summary_of(run: RunReport, tmp_path: Path) -> str:
    summary = tmp_path / "summary.md"
    summary.write_text("")
    runner = Runner(stdout=open(tmp_path / "log", "w"), env={},  # noqa: SIM115
                    summary_file=summary, output_file=tmp_path / "out", terminal=False)
    report_mod.report(run, runner, result_dir=tmp_path / "result")
    return summary.read_text()


def test_replay_a_file_name_and_the_final_message_in_the_job_summary(tmp_path: Path) -> None:
    """The box's default set-up: the agent makes ``docs-----BEGIN<TAB>PRIVATE KEY-----.md``
    through the shell (the summary's "changed without a write tool" note names it) and starts
    its final message with the END line; what follows END rendered live."""
    name = f"docs{BEGIN_TAB}.md"
    run = RunReport(
        StreamResult(has_result=True, failure="", model="m",
                     final_message=f"{END}\n{PAYLOAD}\n"),
        Conclusion.SUCCESS, files_changed=(name,),
        notes=(f"1 file(s) changed in the working tree without a write tool (e.g. through "
               f"the shell): {name}.",))
    summary = _summary_of(run, tmp_path)
    assert "evil.example" in summary  # the text is there, inert
    assert live_parts(summary) == []


def test_replay_a_finding_title_and_the_next_finding_s_path_in_the_review_summary() -> None:
    """From the model's JSON alone: BEGIN in one finding's title, END in the next one's path
    (the review job's summary table)."""
    findings = [
        Finding(1, "src/a.py", 3, None, "RIGHT", "major", f"bad {BEGIN_TAB}", "b", None),
        Finding(2, f"{END} {PAYLOAD}", 4, None, "RIGHT", "major", "t", "b", None),
    ]
    answer = Answer("s", "comment", findings)
    redact = Redactor(["ghs_" + "k" * 36])
    markdown = review_summary(answer, [], [Outside(f, "not in the diff") for f in findings],
                              "https://github.com/o/r/pull/1#pullrequestreview-1")
    assert live_parts(redact.net(markdown)) == []


def test_replay_the_review_command_s_job_summary(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The same through the review command itself, against the loopback API."""
    from tests.gh.test_review import answer, finding, open_env

    summary = tmp_path / "summary.md"
    summary.write_text("")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with open_env(tmp_path, monkeypatch, capsys) as env:
        code, _, log = env.review(answer(finding(title=f"bad {BEGIN_TAB}"),
                                         finding(f"{END} {PAYLOAD}", 4)))
        assert code == 0, log
    assert "evil.example" in summary.read_text()
    assert live_parts(summary.read_text(), "https://github.example/octo/widgets/") == []


def test_replay_the_model_and_the_final_message_in_the_sticky_comment(tmp_path: Path) -> None:
    """In the comment and the PR body (where @mentions notify): BEGIN in the transcript's
    model, END in the final message."""
    transcript = tmp_path / "t.jsonl"
    events = [
        {"type": "system", "subtype": "init", "session_id": "s", "model": f"x {BEGIN_TAB}",
         "cwd": "/w", "apiKeySource": "env", "permissionMode": "default"},
        {"type": "assistant", "session_id": "s", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"{END}\n{PAYLOAD}"}]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "ok",
         "session_id": "s", "duration_ms": 5},
    ]
    transcript.write_text("".join(json.dumps(event) + "\n" for event in events))
    body = compose_body(transcript=str(transcript), final_message="", body="", body_file="",
                        links={"Run": "https://github.com/o/r/actions/runs/1"},
                        max_chars=65536, redact=Redactor())
    assert "evil.example" in body
    assert live_parts(body) == []


def test_the_net_replaces_one_for_one_and_never_a_delimiter() -> None:
    redact = Redactor(["s3cr3t-V4lue/x"])
    text = (f"`{BEGIN_TAB.replace(chr(9), ' ')}`\n\n```text\nkey s3cr3t-V4lue/x\n{END}\n```\n"
            "a | b [c](d) <e> & \\ ~")
    netted = redact.net(text)
    assert len(netted) == len(text)
    assert [i for i, c in enumerate(netted) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"]
    for char in "`~|[]()<>&\\!: \n":
        assert netted.count(char) == text.count(char), char
    assert "s3cr3t" not in netted
    assert "BEGIN" not in netted
    assert render(netted).count("<pre") == render(text).count("<pre")


def test_the_full_redactor_over_rendered_markdown_would_eat_the_fence() -> None:
    """Why the net exists: ``***`` over a match from a BEGIN before our fence to an END in
    the agent's text takes the fence with it (the old way; this shows the danger stays
    real, so the tests above check something)."""
    markdown = f"note {BEGIN_TAB.replace(chr(9), ' ')}\n\n```text\n{END}\n{PAYLOAD}\n```\n"
    assert live_parts(Redactor()(markdown)) != []
    assert live_parts(Redactor().net(markdown)) == []


_PIECES = st.sampled_from([
    "-----BEGIN PRIVATE KEY-----", BEGIN_TAB, "-----BEGIN RSA PRIVATE KEY-----", END,
    "-----END RSA PRIVATE KEY-----", "`", "```", "~~~", "\t", "\u00a0", "\u2028", "\u2029",
    "\u3000", "\u2003", "\n", "\r\n", " ", "<img src=https://evil.example/i.png>",
    "[x](https://evil.example/)", "![i](https://evil.example/i)", "@octocat", "#12",
    "https://evil.example/", "www.evil.example", "<!--", "-->", "|", "\\", "*", "_", "&#64;",
    "&lt;b&gt;", "a", "ghp_" + "a" * 36, "sk-" + "b" * 24, "<b>", "</code>", "$x$", ":::",
])
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=12).map("".join)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(texts=st.fixed_dictionaries(dict.fromkeys(
    ("title", "path", "model", "reason", "message", "name"), _TEXT)))
def test_any_agent_text_in_any_field_stays_inert_once_rendered(
    tmp_path: Path, texts: dict[str, str]
) -> None:
    title, path, model = texts["title"], texts["path"], texts["model"]
    reason, message, name = texts["reason"], texts["message"], texts["name"]
    redact = Redactor(["ghp_" + "a" * 36])
    run = RunReport(
        StreamResult(has_result=True, failure=reason, model=model, final_message=message,
                     session_id=title),
        Conclusion.FAILURE, (Failure(Cause.AGENT, reason),), files_changed=(name, path),
        notes=(f"1 file(s) changed in the working tree without a write tool: {name}.",))
    summary = _summary_of(run, tmp_path)
    assert live_parts(summary) == [], summary
    compact = redact.net(render_compact(report_mod.redacted(run, redact), max_chars=20000,
                                        links={"Run": "https://github.com/o/r/actions/runs/1"}))
    assert live_parts(compact) == [], compact
    findings = [Finding(1, path, 1, None, "RIGHT", "major", title, message, None),
                Finding(2, name, 2, None, "RIGHT", "minor", reason, model, None)]
    table = review_summary(Answer(message, "comment", findings), [],
                           [Outside(f, "x") for f in findings],
                           "https://github.com/o/r/pull/1#pullrequestreview-1")
    assert live_parts(redact.net(table)) == [], table
