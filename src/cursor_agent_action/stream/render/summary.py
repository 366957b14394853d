"""The job summary a reviewer reads in ten seconds, and a compact form for PRs and comments.

Everything from the agent or the CLI goes through :mod:`cursor_agent_action.markdown` (fences,
code-span cells, escaped prose). The summary is built section by section within a byte budget:
a section that does not fit is cut with a visible note saying what was left out.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterable, Mapping, Sequence

from cursor_agent_action.markdown import code_cell, cut_utf8, fence, inline, prose, utf8_len
from cursor_agent_action.stream.notices import describe_interaction, describe_notice
from cursor_agent_action.stream.record import ROWS_SHOWN, CallGroups, RunReport, ToolCallRecord
from cursor_agent_action.stream.render import network
from cursor_agent_action.stream.render.livelog import describe_outcome, format_duration

ICONS = {"success": "✅", "failure": "❌", "timeout": "⏱️", "cancelled": "🚫", "budget": "🛑"}
STDERR_TAIL_CHARS = 8 * 1024  # of the CLI stderr shown (the log has all of it)
FINAL_MESSAGE_SHARE = 0.4  # of the whole budget, so the tables still get room
COLLAPSE_ROWS = 25  # tables longer than this are folded into <details>
MAX_ROWS = ROWS_SHOWN  # a reviewer does not scroll further; the transcript has every row
_NOTE_RESERVE = 200  # bytes kept free in a section for its truncation note


def _code(text: str, limit: int) -> str:
    """A code span outside tables."""
    return code_cell(text, limit, in_table=False)


def _headline(run: RunReport, groups: CallGroups) -> str:
    icon = ICONS.get(run.conclusion.value, "❔")
    stream = run.stream
    facts = [f"**Model:** {inline(stream.model, 80) or 'unknown'}"]
    if stream.duration_ms is not None:
        facts.append(f"**Duration:** {format_duration(stream.duration_ms)}")
    counts = (
        (stream.input_tokens, "in"),
        (stream.output_tokens, "out"),
        (stream.cache_read_tokens, "cache read"),
        (stream.cache_write_tokens, "cache write"),
    )
    tokens = [f"{value:,} {label}" for value, label in counts if value is not None]
    if tokens:  # only the counts the CLI reported: never a bare "- out"
        facts.append(f"**Tokens:** {' · '.join(tokens)}")
    facts.append(f"**Tool calls:** {tool_call_counts(run, groups)}")
    facts.append(f"**Files changed:** {len(run.files_changed)}")
    if run.exit_code is not None:
        facts.append(f"**CLI exit code:** {exit_status(run.exit_code)}")
    if run.isolation:
        facts.append(f"**Isolation:** {inline(run.isolation, 400)}")  # ours, whole
    if run.network:
        facts.append(f"**Network:** {network.headline(run.network)}")
    ids = [f"**Session:** {_code(stream.session_id, 80)}"] if stream.session_id else []
    if stream.request_id:
        ids.append(f"**Request:** {_code(stream.request_id, 80)}")
    title = f"## {icon} Cursor agent: {inline(run.conclusion.value, 40)}"
    if run.left_out_count:  # the conclusion says it: nothing is left out in silence
        count = run.left_out_count
        title += f" · {count:,} path{'s' if count > 1 else ''} left out of the patch"
    lines = [title, "", " · ".join(facts)]
    if ids:
        lines += ["", " · ".join(ids)]
    return "\n".join(lines) + "\n\n"


def exit_status(code: int) -> str:
    """``0``, ``1``, or ``stopped (SIGTERM)`` for a process ended by a signal (code < 0)."""
    if code >= 0:
        return str(code)
    try:
        return f"stopped ({signal.Signals(-code).name})"
    except ValueError:
        return f"stopped (signal {-code})"


PROMPT_SHOWN_CHARS = 1500


def _task(run: RunReport) -> str:
    """The permission preset and the start of the prompt: what the agent was asked, how."""
    if not run.prompt and not run.preset:
        return ""
    lines = ["### Task", ""]
    if run.preset:
        lines += [f"**Permissions:** {inline(run.preset, 200)}", ""]
    text = "\n".join(lines) + "\n"
    if run.prompt:
        shown = run.prompt[:PROMPT_SHOWN_CHARS]
        text += fence(shown)
        if len(shown) < len(run.prompt):
            text += (f"*The first {len(shown):,} of {len(run.prompt):,} characters of the "
                     "prompt.*\n")
        text += "\n"
    return text


def _problems(run: RunReport) -> str:
    lines: list[str] = []
    if run.conclusion != "success":
        reason = run.failure_reason or f"The run ended with conclusion {run.conclusion}."
        lines += ["> [!CAUTION]", f"> {prose(reason, 1000)}"]
    if run.notes:
        if lines:
            lines.append(">")
        else:
            lines.append("> [!WARNING]")
        lines += [f"> - {prose(note, 1000)}" for note in run.notes]
    return "\n".join(lines) + "\n\n" if lines else ""


def _fenced(title: str, text: str, budget: int, rest: str, info: str = "text") -> str:
    """A heading and ``text`` in a fence, cut to ``budget`` bytes with a note."""
    head = f"### {title}\n\n"
    # Only what can fit is fenced: a 50 MiB message is never copied whole.
    fitting = cut_utf8(text, budget)
    whole = head + fence(fitting, info) + "\n"
    if len(fitting) == len(text) and utf8_len(whole) <= budget:
        return whole
    room = budget - utf8_len(head) - _NOTE_RESERVE - (utf8_len(whole) - utf8_len(fitting))
    if room <= 0:
        return _left_out(title, budget)
    shown = cut_utf8(fitting, room)
    note = (
        f"*Cut to fit the summary size limit: {utf8_len(shown):,} of {utf8_len(text):,} bytes "
        f"shown; {rest}.*\n\n"
    )
    return head + fence(shown, info) + "\n" + note


def _left_out(title: str, budget: int) -> str:
    note = f"*{title}: left out to stay under the summary size limit.*\n\n"
    return note if utf8_len(note) <= budget else ""


def _table(
    title: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    total: int,
    budget: int,
    *,
    what: str,
    rest: str = "the transcript has all of them",
) -> str:
    """A Markdown table of ``total`` rows (folded when long), cut row by row to ``budget`` bytes
    with a note. ``rows`` is consumed lazily: rows that cannot fit are never rendered."""
    if not total:
        return ""
    head = f"### {title} ({total:,})\n\n"
    folded = total > COLLAPSE_ROWS
    if folded:
        head += f"<details><summary>Show {total:,} {what}</summary>\n\n"
    head += "| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
    tail = "\n</details>\n\n" if folded else "\n"
    used = utf8_len(head) + utf8_len(tail) + _NOTE_RESERVE
    if used > budget:
        return _left_out(title, budget)
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


def _files(run: RunReport, budget: int) -> str:
    files = run.files_changed
    rows = ([code_cell(path, 300)] for path in files)
    return _table("Files changed", ["Path"], rows, len(files), budget, what="files")


def _paths_left_out(run: RunReport, budget: int) -> str:
    """What the agent made that did not come back, each path with its reason."""
    rows = ([code_cell(entry.path, 120), inline(entry.reason, 160)] for entry in run.left_out)
    return _table("Left out of the patch", ["Path", "Why"], rows, run.left_out_count, budget,
                  what="paths", rest="the box lists the first 50 of each kind")


def _detail_table(
    title: str, calls: Sequence[ToolCallRecord], budget: int, *, detail: str, what: str
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
    return _table(title, headers, rows, len(calls), budget, what=what)


def tool_call_counts(run: RunReport, groups: CallGroups | None = None) -> str:
    """``12 (1 failed, 2 denied, 1 blocked by a hook, 1 unknown)``: each call counted once
    (``groups``: the stream's :meth:`~.record.StreamResult.grouped`, when the caller has it)."""
    calls = len(run.stream.tool_calls)
    groups = run.stream.grouped() if groups is None else groups
    parts = [f"{len(groups.failed)} failed", f"{len(groups.denied)} denied"]
    if hooks := len(groups.hook_denied):
        parts.append(f"{hooks} blocked by a hook")
    if unknown := len(groups.unknown):
        parts.append(f"{unknown} with no outcome")
    return f"{calls} ({', '.join(parts)})"


def _denials(groups: CallGroups, budget: int) -> str:
    calls = groups.denied
    table = _detail_table("Permission denials", calls, budget, detail="Reason", what="denials")
    hooks = groups.hook_denied
    budget -= utf8_len(table)
    return table + _detail_table("Blocked by a hook", hooks, budget, detail="Hook's message",
                                 what="calls")


def _interactions(run: RunReport, budget: int) -> str:
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
    table = _table(
        "Questions and prompts from the agent",
        ["Kind", "Asked", "Answer"],
        rows,
        total,
        budget,
        what="questions and prompts",
    )
    budget -= utf8_len(table)
    notices = run.stream.notices
    rows = ([inline(describe_notice(n), 200), code_cell(n.text, 300)] for n in notices)
    total = len(notices) + run.stream.notices_left_out
    return table + _table(
        "Notices from the CLI", ["Notice", "About"], rows, total, budget, what="notices"
    )


def _errors(run: RunReport, groups: CallGroups, budget: int) -> str:
    parts: list[str] = []
    table = _detail_table("Failed tool calls", groups.failed, budget, detail="Detail", what="calls")
    parts.append(table)
    budget -= utf8_len(table)
    pending = len(groups.pending)
    lines = []
    if pending:
        lines.append(f"- {pending} tool call(s) started but never completed.")
    if run.stream.malformed_lines:
        lines.append(
            f"- {run.stream.malformed_lines:,} line(s) of the stream were not JSON events and were "
            "skipped (the log shows the first few)."
        )
    if lines:
        text = "\n".join(lines) + "\n\n"
        if utf8_len(text) <= budget:
            parts.append(text)
            budget -= utf8_len(text)
    if run.stderr:
        tail = run.stderr[-STDERR_TAIL_CHARS:]
        parts.append(_fenced("CLI stderr (last lines)", tail, budget, "the log has all of it"))
    return "".join(parts)


def _tool_calls(run: RunReport, budget: int) -> str:
    calls = run.stream.tool_calls
    rows = (_call_row(i, call) for i, call in enumerate(calls, 1))
    headers = ["#", "Kind", "Target", "Outcome", "Duration"]
    return _table("Tool calls", headers, rows, len(calls), budget, what="tool calls")


def _footer(run: RunReport) -> str:
    if run.transcript_artifact:
        return (f"Full transcript: the artifact {_code(run.transcript_artifact, 200)} of "
                "this workflow run (secrets replaced by `***`).\n")
    if run.transcript_file and run.transcript_temporary:
        return (f"Full transcript: {_code(run.transcript_file, 500)} on the runner, gone "
                "when the job ends; set the `transcript-artifact` input to keep it.\n")
    if run.transcript_file:
        return f"Full transcript: {_code(run.transcript_file, 500)}\n"
    return "The raw transcript was not saved by this step.\n"


def render_summary(
    run: RunReport, *, budget_bytes: int, groups: CallGroups | None = None
) -> str:
    """The job summary, never longer than ``budget_bytes`` UTF-8 bytes (``groups``: the
    stream's :meth:`~.record.StreamResult.grouped`, when the caller has it: one pass over up to
    100,000 calls is enough)."""
    groups = run.stream.grouped() if groups is None else groups
    footer = _footer(run)
    remaining = budget_bytes - utf8_len(footer)
    if remaining <= 0:
        return ""
    out: list[str] = []

    def add(text: str) -> None:
        nonlocal remaining
        size = utf8_len(text)
        if size <= remaining:
            out.append(text)
            remaining -= size

    add(_headline(run, groups))
    add(_problems(run))
    add(_task(run))
    if run.stream.final_message:
        share = min(remaining, int(budget_bytes * FINAL_MESSAGE_SHARE))
        # Without a result event the last segment was written mid-run, not as an answer.
        title = ("Final message" if run.stream.has_result
                 else "Last message (the run did not finish)")
        add(_fenced(title, run.stream.final_message, share,
                    "the result-file output and the transcript have all of it"))
    else:
        add("*The agent wrote no final message.*\n\n")
    if run.structured_output:
        add(_fenced("Structured output", _pretty(run.structured_output), remaining,
                    "the structured-output-file output has all of it", info="json"))
    # Shell commands are in the tool-call table (with their exit codes): no table of their own.
    add(_files(run, remaining))
    add(_paths_left_out(run, remaining))
    add(_denials(groups, remaining))
    add(_interactions(run, remaining))
    add(network.section(run.network, remaining))
    add(_errors(run, groups, remaining))
    add(_tool_calls(run, remaining))
    out.append(footer)
    return "".join(out)


def _pretty(value: str) -> str:
    try:
        return json.dumps(json.loads(value), indent=2, ensure_ascii=False)
    except ValueError:  # redaction can only replace text inside strings; but never fail here
        return value


def _safe_link(label: str, url: str) -> str:
    if not url.startswith(("https://", "http://")) or any(c in url for c in " <>()\n\r\t"):
        return ""
    return f"[{inline(label, 60)}](<{url}>)"


def render_compact(
    run: RunReport, *, max_chars: int = 60000, links: Mapping[str, str] | None = None
) -> str:
    """Short Markdown for PR bodies and sticky comments, never over ``max_chars`` characters.

    Not redacted here: callers pass it through ``Runner.redact`` like everything they write.
    """
    icon = ICONS.get(run.conclusion.value, "❔")
    facts = [f"{icon} **Cursor agent: {inline(run.conclusion.value, 40)}**"]
    if run.stream.model:
        facts.append(f"model {inline(run.stream.model, 80)}")
    if run.stream.duration_ms is not None:
        facts.append(format_duration(run.stream.duration_ms))
    facts.append(f"tool calls: {tool_call_counts(run)}")
    facts += [link for label, url in (links or {}).items() if (link := _safe_link(label, url))]
    head = " · ".join(facts) + "\n\n"
    if run.conclusion != "success" and run.failure_reason:
        head += f"> {inline(run.failure_reason, 600)}\n\n"
    files = ""
    if run.files_changed:
        listed = ", ".join(_code(p, 200) for p in run.files_changed[:50])
        more = len(run.files_changed) - 50
        files = f"**Files changed ({len(run.files_changed)}):** {listed}"
        files += f" and {more} more\n" if more > 0 else "\n"
    room = max_chars - len(head) - len(files) - 200
    message = ""
    if run.stream.final_message and room > 0:
        text = run.stream.final_message[:room]  # only what can fit is fenced
        message = fence(text) + "\n"
        if len(text) < len(run.stream.final_message) or len(message) > room:
            text = text[: max(0, room - (len(message) - len(text)))]
            message = fence(text) + "\n*(final message cut to fit)*\n\n"
    compact = head + message + files
    return compact if len(compact) <= max_chars else compact[:max_chars]
