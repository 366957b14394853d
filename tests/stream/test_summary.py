"""summary: the job summary and the compact form stay within budget and inert."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cursor_agent_action.errors import UsageError
from cursor_agent_action.markdown import utf8_len
from cursor_agent_action.stream.engine import load_report
from cursor_agent_action.stream.record import (
    Cause,
    Conclusion,
    Failure,
    RunReport,
    StreamResult,
    ToolCallRecord,
)
from cursor_agent_action.stream.render.summary import render_compact, render_summary
from tests.support.stream import FIXTURES, summarize

DANGEROUS = ("<script", "<img", "<!--", "<details open", "![img]", "[click]", "# Heading")


def rendered_markup(markdown: str) -> str:
    """What is left of ``markdown`` after removing fenced blocks and code spans: the only
    places where agent text may appear verbatim."""
    kept: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        if fence is not None:
            if line.strip() == fence:
                fence = None
            continue
        opening = re.match(r"^(`{3,})", line)
        if opening:
            fence = opening.group(1)
            continue
        kept.append(line)
    text = "\n".join(kept)
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "", text.replace("\\|", ""))


def _big_record(calls: int = 5000, message_bytes: int = 2_000_000) -> RunReport:
    stream = StreamResult(
        failure="The stream ended without a result event.",
        model="Auto",
        final_message="é" * (message_bytes // 2),
        tool_calls=tuple(
            ToolCallRecord(
                f"id-{i}",
                "shell",
                f"make test-{i} " + "x" * 100,
                "error" if i % 3 else "success",
                "boom " * 50,
                i % 256,
                i,
            )
            for i in range(calls)
        ),
    )
    return RunReport(
        stream,
        Conclusion.FAILURE,
        (Failure(Cause.NO_RESULT, stream.failure),),
        files_changed=tuple(f"src/file_{i}.py" for i in range(3000)),
        stderr="fatal\n" * 10_000,
        notes=("git status shows a file the transcript does not mention",),
    )


@pytest.mark.parametrize("budget", [0, 40, 300, 2_000, 50_000, 1_040_000])
def test_summary_never_exceeds_its_budget(budget: int) -> None:
    summary = render_summary(_big_record(), budget_bytes=budget)
    assert utf8_len(summary) <= budget


def test_cut_sections_say_what_was_left_out() -> None:
    summary = render_summary(_big_record(), budget_bytes=200_000)
    assert "Cut to fit the summary size limit" in summary  # final message
    assert re.search(r"\*[\d,]+ more (tool calls|files|calls|commands) not shown", summary)
    assert summary.startswith("## ❌ Cursor agent: failure")
    assert "The stream ended without a result event" in summary


def test_headline_has_the_ten_second_facts() -> None:
    """On top: the outcome, what changed, what was refused, the tokens (issue 42); the rest
    (model, duration, calls) folded under "How it ran"."""
    record = load_report(FIXTURES / "docs-update.jsonl")
    head = render_summary(record, budget_bytes=100_000).split("\n\n", 3)
    assert head[0] == "## ✅ Cursor agent: success"
    assert head[1] == ("**Changed:** 4 files · **Refused:** 1 tool call (permissions) · "
                       "**Tokens:** 31,877 in · 1,204 out · 118,528 cache read · "
                       "2,048 cache write")
    folded = head[3][head[3].index("<details><summary>How it ran: 48.2 s, 11 tool calls"):]
    for fact in ("GPT-5.4 Mini Low", "Tool calls:** 11 (0 failed, 1 denied)"):
        assert fact in folded.split("</details>")[0]


def test_agent_markup_never_renders() -> None:
    record = load_report(FIXTURES / "adversarial-injection.jsonl")
    summary = render_summary(record, budget_bytes=1_000_000)
    outside = rendered_markup(summary)
    for marker in DANGEROUS:
        assert marker in summary  # present, but only inside fences / code spans
        assert marker not in outside


def test_markup_checker_is_not_vacuous() -> None:
    assert "<script" in rendered_markup("text <script> `<b>` more")


def test_compact_form_fits_and_stays_inert() -> None:
    record = _big_record()
    links = {"job": "https://github.com/o/r/actions/runs/1", "bad": "javascript:alert(1)"}
    compact = render_compact(record, max_chars=5000, links=links)
    assert len(compact) <= 5000
    assert "[job](<https://github.com/o/r/actions/runs/1>)" in compact
    assert "javascript" not in compact
    assert "final message cut to fit" in compact
    injected = render_compact(load_report(FIXTURES / "adversarial-injection.jsonl"))
    for marker in DANGEROUS:
        assert marker not in rendered_markup(injected)


def test_compact_form_of_a_small_run_is_whole() -> None:
    compact = render_compact(load_report(FIXTURES / "docs-update.jsonl"))
    assert compact.startswith("✅ **Cursor agent: success**")
    assert "git is blocked" in compact
    assert "`docs/upgrading.md`" in compact


def test_load_report_reads_silently_and_names_the_transcript(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FIXTURES / "corpus-usage.jsonl"
    record = load_report(path)
    stream = record.stream
    assert (record.conclusion, stream.result_text, stream.input_tokens) == ("success", "ok", 20450)
    assert record.transcript_file == str(path)
    assert capsys.readouterr().out == ""


def test_load_report_of_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_report(tmp_path / "nope.jsonl")
    with pytest.raises(UsageError, match="is a directory"):
        load_report(tmp_path)


def test_long_tables_stop_at_max_rows_or_at_the_size_limit() -> None:
    record = _big_record(calls=600, message_bytes=10)
    roomy = render_summary(record, budget_bytes=1_000_000)
    assert "*100 more tool calls not shown (the summary lists at most 500)" in roomy
    tight = render_summary(record, budget_bytes=60_000)
    assert re.search(r"\*[\d,]+ more [a-z ]+ not shown \(summary size limit\)", tight)


def test_bidi_and_zero_width_characters_are_shown_escaped_in_the_summary(tmp_path: Path) -> None:
    """A file named ``evil<U+202E>gpj.exe`` reads ``evilexe.jpg`` when rendered raw; in every
    part of the summary (model, final message, files, tool calls) it is ``\\u202e``."""
    name = "docs/evil\u202egpj.exe"
    done = {"editToolCall": {"args": {"path": f"/w/{name}"},
                             "result": {"success": {"linesAdded": 1, "linesRemoved": 0}}},
            "startedAtMs": "1", "completedAtMs": "40"}  # fmt: skip
    events = [
        {"type": "system", "subtype": "init", "cwd": "/w", "model": "Auto\u2066",
         "session_id": "s"},
        {"type": "tool_call", "subtype": "completed", "call_id": "c1", "timestamp_ms": 40,
         "tool_call": done},
        {"type": "assistant", "model_call_id": "m", "message": {"content": [
            {"type": "text", "text": f"See {name}, pass\u200bword\ufeff and \U000e0041 tags."}]}},
        {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200,
         "result": f"See {name}, pass\u200bword\ufeff and \U000e0041 tags."},
    ]  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(event) + "\n" for event in events))
    done_run = summarize(tmp_path, transcript)
    assert done_run.code == 0
    text = done_run.summary
    for char in ("\u202e", "\u2066", "\u200b", "\ufeff", "\U000e0041"):
        assert char not in text
    assert text.count("evil\\u202egpj.exe") == 3  # final message, files, tool calls
    assert "pass\\u200bword\\ufeff and \\U000e0041 tags." in text
    assert "Auto\\\\u2066" in text  # prose: the backslash itself escaped for Markdown
    assert "\u202e" not in done_run.log
