"""A path left out of the patch is named by the agent: when it holds the API key, the
``left-out`` output and the summary's table withhold it like ``files-changed`` (issue 42's new
output must not be a way out for the key)."""

from __future__ import annotations

from pathlib import Path

from cursor_agent_action.agent.judge import leftout
from cursor_agent_action.agent.judge.verdict import Described, Verdict
from cursor_agent_action.agent.judge.withheld import withhold_key
from cursor_agent_action.keyscan import KeyScan
from cursor_agent_action.stream.record import LeftOut, StreamResult
from cursor_agent_action.stream.render.report import left_out_output
from cursor_agent_action.stream.render.summary import render_summary

KEY = "key_leftout_0123456789abcdef"


def test_a_left_out_path_holding_the_key_is_withheld(tmp_path: Path) -> None:
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("{}\n")
    verdict = Verdict(StreamResult(has_result=True, failure=""))
    verdict.leave_out([LeftOut(f"docs/{KEY[::-1]}", leftout.SPECIAL)], 1)
    withhold_key(verdict, KeyScan([KEY]), transcript, {})
    assert not verdict.succeeded
    report = verdict.report(Described())
    assert left_out_output(report) == "[]"
    summary = render_summary(report, budget_bytes=1 << 20)
    assert KEY[::-1] not in summary
    assert "1 path left out of the patch" in summary  # still said, with no name
