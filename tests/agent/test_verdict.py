"""The run's verdict: the conclusion follows from how the agent was stopped and the failures
(never set by hand), failures are typed and listed newest first, and what the renderers get
is one read-only report."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from cursor_agent_action.agent.guards.permissions import build_policy
from cursor_agent_action.agent.judge.changes import check_policy
from cursor_agent_action.agent.judge.verdict import STOPPED, Described, Verdict
from cursor_agent_action.stream.record import Cause, Conclusion, Failure, RunReport, StreamResult

SRC = Path(__file__).resolve().parents[2] / "src" / "cursor_agent_action"
OK = StreamResult(has_result=True, failure="", session_id="s1", files_changed=("a.md",))
ERRORED = StreamResult(has_result=True, failure="cursor-agent reported an error.")
CUT_OFF = StreamResult(has_result=False, failure="The stream ended without a result event.")


@pytest.mark.parametrize(
    ("stream", "stopped", "failures", "expected"),
    [
        (OK, None, 0, Conclusion.SUCCESS),
        (OK, None, 1, Conclusion.FAILURE),
        (ERRORED, None, 0, Conclusion.FAILURE),
        (CUT_OFF, None, 0, Conclusion.FAILURE),
        (OK, Conclusion.TIMEOUT, 0, Conclusion.TIMEOUT),
        (OK, Conclusion.TIMEOUT, 2, Conclusion.TIMEOUT),
        (CUT_OFF, Conclusion.CANCELLED, 1, Conclusion.CANCELLED),
        (ERRORED, Conclusion.BUDGET, 1, Conclusion.BUDGET),
    ],
)
def test_the_conclusion_follows_from_the_stop_and_the_failures(
    stream: StreamResult, stopped: Conclusion | None, failures: int, expected: Conclusion
) -> None:
    verdict = Verdict.of(stream)
    if stopped is not None:
        verdict.stop(stopped, "stopped.")
    for number in range(failures):
        verdict.fail(Cause.POLICY, f"failure {number}.")
    assert verdict.conclusion is expected
    assert verdict.report(Described()).conclusion is expected


def test_every_way_the_agent_is_stopped_is_a_conclusion_of_its_own() -> None:
    assert set(STOPPED.values()) == {Conclusion.TIMEOUT, Conclusion.CANCELLED, Conclusion.BUDGET}
    assert {conclusion.value for conclusion in Conclusion} == {
        "success", "failure", "timeout", "budget", "cancelled"}


def test_a_stop_replaces_the_streams_own_verdict_and_later_failures_come_first() -> None:
    verdict = Verdict.of(ERRORED)
    assert verdict.failures == [Failure(Cause.AGENT, ERRORED.failure)]
    verdict.no_result("The CLI ended without a result. Fix: read its stderr.")
    verdict.fail(Cause.TAMPERED, ".cursor/cli.json was changed.")
    verdict.fail(Cause.GUARDED_FILES, "The agent changed the git configuration.")
    report = verdict.report(Described())
    assert [failure.cause for failure in report.failures] == [
        Cause.GUARDED_FILES, Cause.TAMPERED, Cause.NO_RESULT]
    assert report.failure_reason == (
        "The agent changed the git configuration. .cursor/cli.json was changed. The CLI ended "
        "without a result. Fix: read its stderr.")


def test_the_report_and_the_stream_result_are_read_only() -> None:
    report = Verdict.of(OK).report(Described(prompt="p"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.conclusion = Conclusion.FAILURE  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.stream.result_text = "x"  # type: ignore[misc]
    assert isinstance(report.notes, tuple)
    assert isinstance(report.failures, tuple)
    assert isinstance(report.files_changed, tuple)


def test_a_report_of_a_transcript_alone_is_the_streams_verdict() -> None:
    assert RunReport.of_stream(OK).conclusion is Conclusion.SUCCESS
    failed = RunReport.of_stream(CUT_OFF)
    assert failed.conclusion is Conclusion.FAILURE
    assert failed.failures == (Failure(Cause.NO_RESULT, CUT_OFF.failure),)


def test_a_policy_failure_after_a_timeout_is_in_the_reason_not_demoted_to_a_note() -> None:
    """A run stopped at its timeout that also wrote where docs may not: both are said as
    failures (the reason leads with the later one), and the conclusion stays timeout."""
    verdict = Verdict.of(StreamResult(has_result=False, failure="cut off"))
    verdict.stop(Conclusion.TIMEOUT, "The agent did not finish within 1 minute.")
    verdict.files_changed = ["src/app.py"]
    check_policy(verdict, build_policy("docs"))
    report = verdict.report(Described())
    assert report.conclusion is Conclusion.TIMEOUT
    assert [failure.cause for failure in report.failures] == [Cause.POLICY, Cause.STOPPED]
    assert "src/app.py" in report.failure_reason
    assert not any("src/app.py" in note for note in report.notes)


def test_a_follow_up_turn_keeps_both_turns_calls_and_notes_and_the_seconds_verdict() -> None:
    first = Verdict.of(dataclasses.replace(OK, input_tokens=10, files_changed=("a.md",)))
    first.notes.append("first note")
    first.isolation = "contained"
    second = Verdict.of(dataclasses.replace(ERRORED, input_tokens=5, files_changed=("b.md",)))
    second.notes.append("second note")
    both = first.followed_by(second)
    assert both.conclusion is Conclusion.FAILURE
    assert both.stream.input_tokens == 15
    assert both.stream.session_id == "s1"
    assert both.files_changed == ["a.md", "b.md"]
    assert both.notes == ["first note", "second note"]
    assert both.isolation == "contained"


def test_nothing_in_the_package_sets_a_conclusion_by_hand() -> None:
    """The conclusion is a property of the verdict: no assignment to any ``.conclusion`` (nor
    to the old ``failure_reason``) exists in the source."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign)
                       else [])
            found += [f"{path.name}:{target.lineno}" for target in targets
                      if isinstance(target, ast.Attribute)
                      and target.attr in ("conclusion", "failure_reason")]
    assert not found
