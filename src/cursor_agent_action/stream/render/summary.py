"""The job summary a reviewer reads in ten seconds, and a compact form for PRs and comments.

Everything from the agent or the CLI goes through :mod:`cursor_agent_action.markdown` (fences,
code-span cells, escaped prose). The summary is built section by section within a byte budget:
a section that does not fit is cut with a visible note saying what was left out.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Mapping

from cursor_agent_action.markdown import (
    code_cell,
    cut_utf8,
    fence,
    inline,
    prose,
    utf8_len,
)
from cursor_agent_action.stream.record import CallGroups, RunReport
from cursor_agent_action.stream.render import tables, wallsection
from cursor_agent_action.stream.render.blocks import (
    FOLD_BYTES,
    NOTE_RESERVE,
    folded,
    left_out_note,
    wrap,
)
from cursor_agent_action.stream.render.livelog import format_duration

ICONS = {"success": "✅", "failure": "❌", "timeout": "⏱️", "cancelled": "🚫", "budget": "🛑"}
STDERR_TAIL_CHARS = 8 * 1024  # of the CLI stderr shown (the log has all of it)
FINAL_MESSAGE_SHARE = 0.4  # of the whole budget, so the tables still get room


def _code(text: str, limit: int) -> str:
    """A code span outside tables."""
    return code_cell(text, limit, in_table=False)


def _headline(run: RunReport, groups: CallGroups) -> str:
    """The ten-second part: the outcome, what changed, what was refused, the tokens."""
    icon = ICONS.get(run.conclusion.value, "❔")
    title = f"## {icon} Cursor agent: {inline(run.conclusion.value, 40)}"
    if run.left_out_count:  # the conclusion says it: nothing is left out in silence
        count = run.left_out_count
        title += f" · {count:,} path{'s' if count > 1 else ''} left out of the patch"
    files = len(run.files_changed)
    facts = [f"**Changed:** {_count(files, 'file') if files else 'no file'}"]
    facts.append(f"**Refused:** {_refused(run, groups)}")
    stream = run.stream
    counts = (
        (stream.input_tokens, "in"),
        (stream.output_tokens, "out"),
        (stream.cache_read_tokens, "cache read"),
        (stream.cache_write_tokens, "cache write"),
    )
    tokens = [f"{value:,} {label}" for value, label in counts if value is not None]
    if tokens:  # only the counts the CLI reported: never a bare "- out"
        facts.append(f"**Tokens:** {' · '.join(tokens)}")
    return title + "\n\n" + "\n".join(wrap(" · ".join(facts))) + "\n\n"


def _count(number: int, what: str) -> str:
    return f"{number:,} {what}{'' if number == 1 else 's'}"


def _refused(run: RunReport, groups: CallGroups) -> str:
    """What the permissions, hooks and the network wall refused, in one line."""
    parts = []
    if denied := len(groups.denied):
        parts.append(f"{_count(denied, 'tool call')} (permissions)")
    if hooks := len(groups.hook_denied):
        parts.append(f"{_count(hooks, 'tool call')} (hooks)")
    if run.network is not None and run.network.walled and run.network.refused_total:
        parts.append(f"{_count(run.network.refused_total, 'connection')} (network)")
    return ", ".join(parts) or "nothing"


def _how_it_ran(run: RunReport, groups: CallGroups) -> str:
    """Model, duration, calls, exit code, ids and the isolation, folded."""
    stream = run.stream
    items = [f"**Model:** {inline(stream.model, 80) or 'unknown'}"]
    if stream.duration_ms is not None:
        items.append(f"**Duration:** {format_duration(stream.duration_ms)}")
    items.append(f"**Tool calls:** {tool_call_counts(run, groups)}")
    if run.exit_code is not None:
        items.append(f"**CLI exit code:** {exit_status(run.exit_code)}")
    if stream.session_id:
        items.append(f"**Session:** {_code(stream.session_id, 80)}")
    if stream.request_id:
        items.append(f"**Request:** {_code(stream.request_id, 80)}")
    if pending := len(groups.pending):
        items.append(f"{pending} tool call(s) started but never completed.")
    if run.stream.malformed_lines:
        items.append(f"{run.stream.malformed_lines:,} line(s) of the stream were not JSON events "
                     "and were skipped (the log shows the first few).")
    if run.api_key_note:
        items.append(f"**API key:** {inline(run.api_key_note, 400)}")
    if run.isolation:
        items.append(f"**Isolation:** {inline(run.isolation, 2000)}")  # ours, whole
    items += [inline(detail, 600) for detail in run.isolation_details]
    body = "".join("\n  ".join(wrap(f"- {item}")) + "\n" for item in items)
    if run.isolation_warning:
        body += "\n" + "\n".join(wrap(prose(run.isolation_warning, 3000))) + "\n"
    label = "How it ran: " + ", ".join(filter(None, (
        format_duration(stream.duration_ms) if stream.duration_ms is not None else "",
        _count(len(stream.tool_calls), "tool call"),
        run.isolation.split(" (", 1)[0] and f"isolation {run.isolation.split(' (', 1)[0]}")))
    return folded(label, body)


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
    """The permission preset and the start of the prompt: what the agent was asked, how;
    folded."""
    if not run.prompt and not run.preset:
        return ""
    text = f"**Permissions:** {inline(run.preset, 200)}\n\n" if run.preset else ""
    if run.prompt:
        shown = run.prompt[:PROMPT_SHOWN_CHARS]
        text += fence(shown)
        if len(shown) < len(run.prompt):
            text += (f"\n*The first {len(shown):,} of {len(run.prompt):,} characters of the "
                     "prompt.*\n")
    size = f"a prompt of {_count(len(run.prompt), 'character')}" if run.prompt else "no prompt"
    label = f"The task: {run.preset.split(' ', 1)[0]} preset, {size}" if run.preset else (
        f"The task: {size}")
    return folded(label, text)


def _problems(run: RunReport) -> str:
    lines: list[str] = []
    if run.conclusion != "success":
        reason = run.failure_reason or f"The run ended with conclusion {run.conclusion}."
        lines += ["> [!CAUTION]", *(f"> {line}" for line in wrap(prose(reason, 1000)))]
    if run.notes:
        if lines:
            lines.append(">")
        else:
            lines.append("> [!WARNING]")
        for note in run.notes:
            first, *rest = wrap(f"- {prose(note, 1000)}")
            lines += [f"> {first}", *(f">   {line}" for line in rest)]
    return "\n".join(lines) + "\n\n" if lines else ""


def _fenced(title: str, text: str, budget: int, rest: str, info: str = "text") -> str:
    """``text`` in a fence folded under ``title``, cut to ``budget`` bytes with a note."""
    wrapper = utf8_len(title) + FOLD_BYTES
    # Only what can fit is fenced: a 50 MiB message is never copied whole.
    fitting = cut_utf8(text, budget - wrapper)
    whole = fence(fitting, info)
    if len(fitting) == len(text) and utf8_len(whole) + wrapper <= budget:
        return folded(title, whole)
    room = budget - wrapper - NOTE_RESERVE - (utf8_len(whole) - utf8_len(fitting))
    if room <= 0:
        return left_out_note(title, budget)
    shown = cut_utf8(fitting, room)
    note = (
        f"\n*Cut to fit the summary size limit: {utf8_len(shown):,} of {utf8_len(text):,} bytes "
        f"shown; {rest}.*\n"
    )
    return folded(title, fence(shown, info) + note)


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


def _errors(run: RunReport, groups: CallGroups, budget: int) -> str:
    parts: list[str] = []
    table = tables.detail_table("Failed tool calls", groups.failed, budget, detail="Detail",
                                what="calls", fold=True)
    parts.append(table)
    budget -= utf8_len(table)
    if run.stderr:
        tail = run.stderr[-STDERR_TAIL_CHARS:]
        parts.append(_fenced("CLI stderr (last lines)", tail, budget, "the log has all of it"))
    return "".join(parts)


def _footer(run: RunReport) -> str:
    return "\n".join(wrap(_transcript(run))) + "\n"


def _transcript(run: RunReport) -> str:
    if run.transcript_artifact:
        return (f"Full transcript: the artifact {_code(run.transcript_artifact, 200)} of "
                "this workflow run (secrets replaced by `***`).")
    if run.transcript_file and run.transcript_temporary:
        return (f"Full transcript: {_code(run.transcript_file, 500)} on the runner, gone "
                "when the job ends; set the `transcript-artifact` input to keep it.")
    if run.transcript_file:
        return f"Full transcript: {_code(run.transcript_file, 500)}"
    return "The raw transcript was not saved by this step."


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
    # What changed and what was refused, in full; then everything else, folded.
    add(tables.files(run, remaining))
    add(tables.paths_left_out(run, remaining))
    add(tables.denials(groups, remaining))
    add(_answer(run, min(remaining, int(budget_bytes * FINAL_MESSAGE_SHARE))))
    add(_task(run))
    add(_how_it_ran(run, groups))
    add(wallsection.section(run.network, remaining))
    add(tables.interactions(run, remaining))
    add(_errors(run, groups, remaining))
    add(tables.tool_calls(run, remaining))
    out.append(footer)
    return "".join(out)


def _answer(run: RunReport, budget: int) -> str:
    """The agent's answer, folded, once: its structured output when it gave one (the JSON in
    its final message is that same value), else its final message."""
    stream = run.stream
    if run.structured_output:
        size = utf8_len(stream.final_message)
        rest = "the structured-output-file output has all of it"
        return _fenced(f"The agent's answer: its structured output (its final message, "
                       f"{size:,} bytes, is in the final-message output)",
                       _pretty(run.structured_output), budget, rest, info="json")
    if not stream.final_message:
        return "*The agent wrote no final message.*\n\n"
    # Without a result event the last segment was written mid-run, not as an answer.
    shown = f"{utf8_len(stream.final_message):,} bytes"
    title = (f"The agent's answer ({shown})" if stream.has_result
             else f"The agent's last message, {shown} (the run did not finish)")
    return _fenced(title, stream.final_message,
                   budget, "the result-file output and the transcript have all of it")


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

    Not redacted here: callers redact the report as text first (``report.redacted``) and put
    the Markdown only through the one-for-one net (``Redactor.net``), never the full redactor.
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
