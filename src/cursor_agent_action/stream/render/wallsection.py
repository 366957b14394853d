"""The network wall's section of the job summary, and its ``network-denials`` output.

It shows the wall's report: the :class:`~cursor_agent_action.stream.wallreport.NetReport`
(the data) the wall's relay makes (``agent.contain.box.net.ledger``), carried on the run report
as ``network``; this module only reads it and never imports the agent wing. Every value in it
may come from the agent (a refused name is whatever it asked for): all of it goes through
:mod:`cursor_agent_action.markdown`.
"""

from __future__ import annotations

from cursor_agent_action.markdown import code_cell, inline, utf8_len
from cursor_agent_action.stream.render.blocks import folded, wrap
from cursor_agent_action.stream.wallreport import Destination, NetReport, Refusal

ROWS = 50  # per table: the wall keeps at most 200 destinations of each kind anyway
_SOURCES = {
    "default": "Cursor's own domains",
    "allowed-domains": "`allowed-domains`",
    "mcp-config": "`mcp-config`'s URL servers",
}


def denials(report: NetReport | None) -> str:
    """The ``network-denials`` output: refusals counted, "" without the wall."""
    if report is None or not report.walled:
        return ""
    return str(report.refused_total)


def headline(report: NetReport) -> str:
    """``restricted, 2 refused`` for the summary's first line."""
    if report.mode == "landlock":
        return "no wall (Landlock, not the box)"
    if not report.walled:
        return inline(report.mode, 40)
    return f"restricted, {report.refused_total:,} refused"


def _bytes(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def _rules(report: NetReport) -> str:
    by_source: dict[str, list[str]] = {}
    for rule in report.rules:
        ports = ",".join(str(p) for p in rule.ports if p)
        by_source.setdefault(rule.source, []).append(f"{rule.pattern}:{ports}")
    parts = [
        f"{_SOURCES.get(source, inline(source, 40))} "
        f"({', '.join(code_cell(p, 120, in_table=False) for p in patterns[:20])}"
        f"{', …' if len(patterns) > 20 else ''})"
        for source, patterns in by_source.items()
    ]
    line = "Allowed for this run: " + "; ".join(parts) + "."
    return "\n".join(wrap(line)) + "\n\n" if parts else ""


def _table(title: str, headers: list[str], rows: list[list[str]], total: int) -> str:
    if not rows:
        return ""
    header = "| " + " | ".join(headers) + " |\n|" + "---|" * len(headers) + "\n"
    text = f"**{title} ({total:,}):**\n\n" + header
    text += "".join("| " + " | ".join(row) + " |\n" for row in rows[:ROWS])
    if total > min(len(rows), ROWS):
        text += f"\n*{total - min(len(rows), ROWS):,} more not listed.*\n"
    return text + "\n"


def section(report: NetReport | None, budget: int) -> str:
    """The summary's Network section within ``budget`` bytes ("" without a report)."""
    if report is None:
        return ""
    mode = report.mode
    if mode == "open":
        text = "\n".join(wrap(
            "The agent had the runner's network (`network: open`): nothing it "
            "connected to was checked or recorded.")) + "\n\n"
    elif not report.walled:
        why = inline(report.why, 300)
        how = "ran under Landlock, not in the box" if mode == "landlock" else "was not contained"
        line = f"No network wall: the agent {how}{f' ({why})' if why else ''}"
        text = "\n".join(wrap(line + "; it had the runner's network.")) + "\n\n"
    else:
        text = _rules(report) + _restricted(report)
    text = folded(f"Network: {headline(report)}", text)
    if utf8_len(text) <= budget:
        return text
    note = "*Network: left out to stay under the summary size limit.*\n\n"
    return note if utf8_len(note) <= budget else ""


def _restricted(report: NetReport) -> str:
    text = ""
    if unreachable := report.unreachable:
        text += (
            "> [!WARNING]\n> MCP servers the wall cannot let through (an IP address for a "
            "host; give it a name): "
            + ", ".join(code_cell(u, 200, in_table=False) for u in unreachable[:10])
            + "\n\n"
        )
    if error := report.error:
        text += (
            f"> [!CAUTION]\n> {inline(error, 300)}: from then on every connection of "
            "the agent failed.\n\n"
        )
    refused = report.refused
    headers = ["Destination", "Kind", "Attempts", "First attempt"]
    total = len(refused) + report.omitted if refused else 0
    text += _table("Refused", headers, [_refusal_row(e) for e in refused], total)
    allowed = report.allowed
    headers = ["Destination", "Connections", "Failed", "Sent", "Received"]
    text += _table("Reached", headers, [_reached_row(e) for e in allowed], len(allowed))
    if not refused and not allowed:
        text += "The agent connected to nothing and nothing was refused.\n\n"
    elif not refused:
        text += "Nothing was refused.\n\n"
    return text


def _refusal_row(entry: Refusal) -> list[str]:
    return [
        code_cell(entry.destination, 160),
        code_cell(entry.kind, 20),
        f"{entry.count:,}",
        f"{code_cell(entry.first, 200)} {inline(entry.first_at, 30)}",
    ]


def _reached_row(entry: Destination) -> list[str]:
    return [
        code_cell(entry.destination, 160),
        f"{entry.connections:,}",
        f"{entry.failed:,}",
        _bytes(entry.bytes_out),
        _bytes(entry.bytes_in),
    ]
