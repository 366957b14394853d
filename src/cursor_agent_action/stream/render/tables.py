"""The summary's tables: what changed, what was left out and refused (in full, on top), and the
calls, questions and notices (folded). Each table is cut row by row to its byte budget, with a
note saying how many rows are not shown and where they are."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cursor_agent_action.markdown import code_cell, inline, utf8_len
from cursor_agent_action.stream.notices import describe_interaction, describe_notice
from cursor_agent_action.stream.record import ROWS_SHOWN, CallGroups, RunReport, ToolCallRecord
from cursor_agent_action.stream.render.blocks import NOTE_RESERVE, left_out_note
from cursor_agent_action.stream.render.livelog import describe_outcome, format_duration

COLLAPSE_ROWS = 25  # tables longer than this are folded into <details>
MAX_ROWS = ROWS_SHOWN  # a reviewer does not scroll further; the transcript has every row


def table(
    title: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    total: int,
    budget: int,
    *,
    what: str,
    rest: str = "the transcript has all of them",
    fold: bool = False,
) -> str:
    """A Markdown table of ``total`` rows (folded when long), cut row by row to ``budget`` bytes
    with a note. ``rows`` is consumed lazily: rows that cannot fit are never rendered."""
    if not total:
        return ""
    head = f"### {title} ({total:,})\n\n"
    folded = fold or total > COLLAPSE_ROWS
    if folded:  # our words and a number: nothing to escape
        head = f"<details><summary>{title} ({total:,})</summary>\n\n"
    head += "| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
    tail = "\n</details>\n\n" if folded else "\n"
    used = utf8_len(head) + utf8_len(tail) + NOTE_RESERVE
    if used > budget:
        return left_out_note(title, budget)
    body: list[str] = []
    why = ""  # rows ran out before the total: only ``rest`` says where the others are
    for row in rows:
        line = "| " + " | ".join(row) + " |\n"
        size = utf8_len(line)
        if used + size > budget:
            why = " (summary size limit)"
            break
        if len(body) == MAX_ROWS:
            why = f" (the summary lists at most {MAX_ROWS})"
            break
        body.append(line)
        used += size
    note = ""
    if len(body) < total:
        note = f"\n*{total - len(body):,} more {what} not shown{why}; {rest}.*\n"
    return head + "".join(body) + note + tail


def _call_row(number: int, call: ToolCallRecord) -> list[str]:
    return [
        str(number),
        code_cell(call.kind, 40),
        code_cell(call.target, 120),
        code_cell(describe_outcome(call), 60),
        format_duration(call.duration_ms),
    ]


def files(run: RunReport, budget: int) -> str:
    files = run.files_changed
    rows = ([code_cell(path, 300)] for path in files)
    return table("Files changed", ["Path"], rows, len(files), budget, what="files")


def paths_left_out(run: RunReport, budget: int) -> str:
    """What the agent made that did not come back, each path with its reason."""
    rows = ([code_cell(entry.path, 72), inline(entry.reason, 160)] for entry in run.left_out)
    return table("Left out of the patch", ["Path", "Why"], rows, run.left_out_count, budget,
                  what="paths", rest="the box lists the first 50 of each kind")


def detail_table(
    title: str, calls: Sequence[ToolCallRecord], budget: int, *, detail: str, what: str,
    fold: bool = False,
) -> str:
    rows = (
        [
            code_cell(c.kind, 40),
            code_cell(c.target, 160),
            code_cell(describe_outcome(c), 60),
            code_cell(c.detail, 300),
        ]
        for c in calls
    )
    headers = ["Kind", "Target", "Outcome", detail]
    return table(title, headers, rows, len(calls), budget, what=what, fold=fold)


def denials(groups: CallGroups, budget: int) -> str:
    calls = groups.denied
    denied = detail_table("Permission denials", calls, budget, detail="Reason", what="denials")
    hooks = groups.hook_denied
    budget -= utf8_len(denied)
    return denied + detail_table("Blocked by a hook", hooks, budget, detail="Hook's message",
                                 what="calls")


def interactions(run: RunReport, budget: int) -> str:
    """The questions and prompts the agent raised and how each was answered, then the CLI's
    system notices (a background command stopped, a task notification, newer kinds by name)."""
    items = run.stream.interactions
    rows = (
        [
            inline(item.label, 60),
            code_cell(item.text, 300),
            code_cell(describe_interaction(item), 300),
        ]
        for item in items
    )
    total = len(items) + run.stream.interactions_left_out
    asked = table(
        "Questions and prompts from the agent",
        ["Kind", "Asked", "Answer"],
        rows,
        total,
        budget,
        what="questions and prompts",
        fold=True,
    )
    budget -= utf8_len(asked)
    notices = run.stream.notices
    rows = ([inline(describe_notice(n), 200), code_cell(n.text, 300)] for n in notices)
    total = len(notices) + run.stream.notices_left_out
    return asked + table(
        "Notices from the CLI", ["Notice", "About"], rows, total, budget, what="notices",
        fold=True,
    )


def tool_calls(run: RunReport, budget: int) -> str:
    calls = run.stream.tool_calls
    rows = (_call_row(i, call) for i, call in enumerate(calls, 1))
    headers = ["#", "Kind", "Target", "Outcome", "Duration"]
    return table("Tool calls", headers, rows, len(calls), budget, what="tool calls",
                  fold=True)


