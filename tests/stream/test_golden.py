"""Golden tests: each transcript in tests/fixtures/ -> log, job summary and step outputs.

The expected files live in tests/golden/ (<fixture>.log, .summary.md, .outputs.json). After an
intended change to the log or summary, regenerate them and review the diff:

    UPDATE_GOLDEN=1 python -m pytest tests/stream/test_golden.py
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from cursor_agent_action.agent.judge import leftout
from cursor_agent_action.gh.review import findings
from cursor_agent_action.gh.review.body import step_summary
from cursor_agent_action.gh.review.diffmap import DiffMap, parse_patch
from cursor_agent_action.gh.review.placement import place
from cursor_agent_action.stream.engine import load_report
from cursor_agent_action.stream.record import (
    Cause,
    Conclusion,
    Failure,
    LeftOut,
    RunReport,
    StreamResult,
)
from cursor_agent_action.stream.render.summary import render_compact, render_summary
from tests.stream.test_summary import DANGEROUS, rendered_markup
from tests.stream.test_summary_layout import FINDINGS, ISOLATION, review_run
from tests.support.stream import FIXTURES, processed_commands, summarize

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
_TOKEN = re.compile(r"\b[0-9a-f]{32}\b")
TRANSCRIPTS = sorted(FIXTURES.glob("*.jsonl"))


def _normalize(text: str) -> str:
    return _TOKEN.sub("<token>", text.replace(str(FIXTURES), "<fixtures>"))


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"{path.name} missing: run UPDATE_GOLDEN=1 python -m pytest {__file__}"
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs from golden"


def test_fixtures_exist() -> None:
    assert len(TRANSCRIPTS) >= 10


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda p: p.stem)
def test_golden(transcript: Path, tmp_path: Path) -> None:
    """Log, summary and outputs match the reviewed golden files; the log is injection-safe."""
    run = summarize(tmp_path, transcript)
    processed_commands(run.log)
    outside = rendered_markup(run.summary)
    assert not [marker for marker in DANGEROUS if marker in outside]
    result_file = Path(run.outputs["result-file"])
    assert result_file.parent == run.result_dir
    if "truncated by cursor-agent-action" not in run.outputs["result"]:
        assert result_file.read_text("utf-8") == run.outputs["result"]
    files_file = Path(run.outputs["files-changed-file"])
    assert json.loads(files_file.read_text("utf-8")) == json.loads(run.outputs["files-changed"])
    outputs = dict(run.outputs, **{"result-file": "<result-file>",
                                   "files-changed-file": "<files-changed-file>"})
    assert run.code == (0 if outputs["conclusion"] == "success" else 1)
    _check(GOLDEN / f"{transcript.stem}.log", _normalize(run.log))
    _check(GOLDEN / f"{transcript.stem}.summary.md", _normalize(run.summary))
    dumped = json.dumps({"exit_code": run.code, **outputs}, indent=2, ensure_ascii=False)
    _check(GOLDEN / f"{transcript.stem}.outputs.json", dumped + "\n")


def test_golden_run_report(tmp_path: Path) -> None:
    """What only `run` knows, rendered: the CLI stopped by SIGTERM on a timeout (not a raw
    -15), the task (preset and a capped, fenced prompt), the last message labelled as mid-run,
    the transcript artifact named in the footer, and the compact form for comments."""
    stopped = Failure(Cause.STOPPED, "The agent did not finish within 0.5 minutes and was "
                      "stopped. Fix: raise timeout-minutes or give the agent a smaller task.")
    record = dataclasses.replace(
        load_report(FIXTURES / "adversarial-cutoff.jsonl"),
        conclusion=Conclusion.TIMEOUT,
        failures=(stopped,),
        exit_code=-15,
        preset="docs (writes allowed)",
        prompt="Update the docs for the new flag.\n```\nignore this fence\n```\n" + "x" * 2000,
        transcript_artifact="agent-transcript",
    )
    summary = render_summary(record, budget_bytes=1024 * 1024)
    _check(GOLDEN / "run-report.summary.md", _normalize(summary))
    _check(GOLDEN / "run-report.compact.md", _normalize(render_compact(record)))
    record = dataclasses.replace(record, transcript_artifact="", transcript_temporary=True)
    # Compared with whitespace collapsed: the footer wraps, and where it wraps depends on the
    # length of the checkout's path (CI clones elsewhere).
    footer = " ".join(render_summary(record, budget_bytes=1024 * 1024).split())
    assert "set the `transcript-artifact` input to keep it" in footer


def test_every_failure_in_a_golden_summary_says_how_to_fix_it() -> None:
    """The reason a run failed always ends with what to do about it."""
    reasons = [line for page in GOLDEN.glob("*.summary.md")
               for block in page.read_text().split("> [!CAUTION]\n")[1:]
               for line in block.splitlines()[:1]]
    assert reasons
    assert [reason for reason in reasons if "Fix:" not in reason] == []


def test_golden_example_runs() -> None:
    """Two runs the examples make, as their summaries show them (issue 42): a code review
    (a long prompt, the findings as structured output: shown once, folded) and an edit run in
    the box that left paths out (named on top, with their reasons; the box's limits folded)."""
    review = review_run()
    # The run's page shows each job's summary in turn: the agent's, then the review step's.
    answer = findings.parse(FINDINGS, "findings")
    diff = DiffMap()
    diff.add(parse_patch("src/cli.py", "@@ -1 +1 @@\n-RETRIES = 3\n+MAX_RETRIES = 3\n"))
    placed, outside = place(answer.findings, diff)
    url = "https://github.com/octo-org/octo-repo/pull/1#pullrequestreview-1003"
    _check(GOLDEN / "code-review.summary.md",
           _normalize(render_summary(review, budget_bytes=1 << 20))
           + step_summary(answer, placed, outside, url))
    long = "build/" + "d/" * 1535 + "d"
    stream = StreamResult(has_result=True, failure="", model="Auto", duration_ms=5300,
                          input_tokens=12_400, output_tokens=310,
                          final_message="Regenerated the docs and the build output.\n",
                          result_text="Regenerated the docs and the build output.\n")
    edit = RunReport(
        stream, Conclusion.SUCCESS, files_changed=("docs/usage.md",),
        isolation=ISOLATION,
        isolation_details=review.isolation_details,
        left_out=(LeftOut(long, leftout.too_long(long)),
                  LeftOut("docs/big.pdf", leftout.TOO_LARGE),
                  LeftOut("docs/pipe", leftout.SPECIAL)),
        left_out_count=3,
        preset="edit (writes allowed)",
        prompt="Regenerate the docs.",
        transcript_artifact="agent-transcript",
    )
    _check(GOLDEN / "left-out.summary.md", _normalize(render_summary(edit, budget_bytes=1 << 20)))
