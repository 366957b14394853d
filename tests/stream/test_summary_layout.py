"""The job summary read in ten seconds (issue 42): on top the outcome, what changed, what was
refused and the tokens; everything else folded in ``<details>``; each fact once; no line of our
prose over about 200 characters."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from cursor_agent_action.stream.engine import load_report
from cursor_agent_action.stream.record import Cause, Conclusion, Failure, RunReport, StreamResult
from cursor_agent_action.stream.render.blocks import wrap
from cursor_agent_action.stream.render.summary import render_summary
from tests.support.stream import FIXTURES

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FINDINGS = {"summary": "One rename, one risk.", "verdict": "comment", "findings": [
    {"path": "src/cli.py", "line": 1, "severity": "minor", "title": "Callers still read RETRIES",
     "body": "`RETRIES` is gone."},
    {"path": "docs/usage.md", "line": 3, "severity": "minor", "title": "Docs not updated",
     "body": "Still says `--retries`."}]}
ISOLATION = ("contained (user cursor-agent; own PID, mount and IPC namespaces; a private view of "
             "the repository, home and /tmp)")


def _top(summary: str) -> str:
    """What is read before the first fold."""
    return summary.split("<details>", 1)[0]


def _folds(summary: str) -> dict[str, str]:
    """Each fold's label and body (folds are never nested)."""
    found = re.findall(r"<details><summary>(.*?)</summary>\n\n(.*?)\n\n</details>", summary,
                       re.DOTALL)
    return dict(found)


def review_run() -> RunReport:
    """A review run as the code-review example makes it: a long prompt, a final message
    holding the findings JSON, the same JSON as the structured output, the box's limits."""
    message = f"Reviewed the change.\n\n```json\n{json.dumps(FINDINGS)}\n```\n"
    stream = StreamResult(has_result=True, failure="", model="Auto", duration_ms=1200,
                          input_tokens=184_000, output_tokens=900, final_message=message,
                          result_text=message)
    return RunReport(stream, Conclusion.SUCCESS, preset="read-only (writes denied)",
                     prompt="Review this pull request.\n" + "diff line\n" * 18_454,
                     isolation=ISOLATION,
                     isolation_details=("Limits: memory 20.0 GiB, 4096 processes (cgroup v1)",
                                        "The tree: an id-mapped overlay over the repository "
                                        "(nothing copied; 25 entries)"),
                     structured_output=json.dumps(FINDINGS, separators=(",", ":")))


def test_the_top_is_the_outcome_the_change_the_refusals_and_the_tokens() -> None:
    """Before: the header carried model, duration, calls, exit code and a 400-character
    isolation line with the box's memory and storage; the prompt came before the answer."""
    summary = render_summary(review_run(), budget_bytes=1 << 20)
    top = _top(summary)
    assert top == ("## ✅ Cursor agent: success\n\n**Changed:** no file · **Refused:** nothing · "
                   "**Tokens:** 184,000 in · 900 out\n\n")
    folds = _folds(summary)
    labels = list(folds)
    assert labels[0].startswith("The agent&#39;s answer")
    assert labels[1] == "The task: read-only preset, a prompt of 184,566 characters"
    assert labels[2] == "How it ran: 1.2 s, 0 tool calls, isolation contained"
    how = folds[labels[2]]
    assert "- Limits: memory 20.0 GiB, 4096 processes (cgroup v1)" in how
    assert "- The tree: an id-mapped overlay" in how
    assert "*The first 1,500 of 184,566 characters of the prompt.*" in folds[labels[1]]


def test_the_findings_json_appears_once() -> None:
    """Before: once in the final message, once more as the structured output."""
    summary = render_summary(review_run(), budget_bytes=1 << 20)
    assert summary.count("Callers still read RETRIES") == 1
    assert "final-message output" in summary  # where the whole message is


def test_a_long_failure_and_notes_are_wrapped_into_short_lines_of_one_paragraph() -> None:
    reason = ("The agent's box ended without a proper status (a long story " + "word " * 150
              + "). Fix: look at the agent's stderr.")
    run = RunReport(StreamResult(model="Auto"), Conclusion.FAILURE,
                    (Failure(Cause.BOX, reason),), notes=("A note " + "that goes on " * 60,))
    summary = render_summary(run, budget_bytes=1 << 20)
    caution = summary.split("> [!CAUTION]\n", 1)[1].split("\n>\n", 1)[0]
    assert all(line.startswith("> ") and len(line) <= 200 for line in caution.splitlines())
    assert " ".join(line[2:] for line in caution.splitlines()) == reason
    note = summary.split("> [!CAUTION]\n", 1)[1].split("\n>\n", 1)[1].split("\n\n")[0]
    assert len(note.splitlines()) > 1
    assert note.splitlines()[0].startswith("> - A note")
    assert all(line.startswith(">   ") for line in note.splitlines()[1:])


def test_wrapping_never_starts_a_block_nor_breaks_a_code_span() -> None:
    text = "a " * 50 + "- 1. # > ``` <b> | `a span with spaces " + "x " * 80 + "` end " * 40
    lines = wrap(text, 60)
    assert " ".join(lines) == text
    for line in lines[1:]:
        assert line[0].isalpha(), line
    for line in lines:
        assert line.count("`") % 2 == 0 or "`a span" in line or line.endswith("`"), line


def _outside_code(page: str) -> list[str]:
    """The lines of ``page`` that are neither in a fenced block nor a table row."""
    kept, fence = [], ""
    for line in page.splitlines():
        if fence:
            fence = "" if line.strip() == fence else fence
            continue
        if opening := re.match(r"^(`{3,})", line):
            fence = opening.group(1)
            continue
        if not line.startswith("|"):
            kept.append(line)
    return kept


def test_no_line_of_a_golden_summary_runs_over_200_characters() -> None:
    """Outside the agent's own text (fenced) and table rows, every line is short."""
    pages = sorted(GOLDEN.glob("*.summary.md"))
    assert pages
    long = [(page.name, line[:80]) for page in pages for line in _outside_code(page.read_text())
            if len(line) > 200]
    assert long == []


def test_a_long_isolation_warning_is_in_the_fold_not_on_top() -> None:
    warning = "Running the agent without the box, because no sudo. Missing protections: " + (
        "something lost, " * 60) + "Fix: give the runner's user passwordless sudo."
    run = dataclasses.replace(load_report(FIXTURES / "docs-update.jsonl"),
                              isolation="none (the agent ran as the runner's user: no sudo)",
                              isolation_warning=warning)
    summary = render_summary(run, budget_bytes=1 << 20)
    assert "Missing protections" not in _top(summary)
    how = next(body for label, body in _folds(summary).items() if label.startswith("How it ran"))
    assert "Fix: give the runner&#39;s user passwordless sudo." in how.replace("\n", " ") or (
        "Fix: give the runner's user passwordless sudo." in how.replace("\n", " "))
    assert max(len(line) for line in how.splitlines()) <= 200
