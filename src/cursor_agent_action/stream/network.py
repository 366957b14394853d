"""The network wall's report in the job summary and the step outputs.

The report is the plain dict the wall's relay makes (``agent.box.net.ledger``: ``mode``,
``rules``, ``allowed``, ``refused``, ...) carried on the run report as ``network``; this module
only reads it, defensively (it crossed a process boundary as JSON), and never imports the
agent wing. Every value in it may come from the agent (a refused name is whatever it asked
for): all of it goes through :mod:`cursor_agent_action.markdown`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cursor_agent_action.markdown import code_cell, inline, utf8_len

ROWS = 50  # per table: the wall keeps at most 200 destinations of each kind anyway
_SOURCES = {"default": "Cursor's own domains", "allowed-domains": "`allowed-domains`",
            "mcp-config": "`mcp-config`'s URL servers"}  # fmt: skip


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(report: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = report.get(key)
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def denials(report: dict[str, Any] | None) -> str:
    """The ``network-denials`` output: refusals counted, "" without the wall."""
    if not report or report.get("mode") != "restricted":
        return ""
    return str(_int(report.get("refused_total")))


def headline(report: dict[str, Any]) -> str:
    """``restricted, 2 refused`` for the summary's first line."""
    mode = str(report.get("mode", ""))
    if mode == "landlock":
        return "no wall (Landlock, not the box)"
    if mode != "restricted":
        return inline(mode, 40)
    return f"restricted, {_int(report.get('refused_total')):,} refused"


def _bytes(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def _rules(report: dict[str, Any]) -> str:
    by_source: dict[str, list[str]] = {}
    for rule in _list(report, "rules"):
        ports = ",".join(str(_int(p)) for p in rule.get("ports", []) if _int(p))
        by_source.setdefault(str(rule.get("source", "")), []).append(
            f"{rule.get('pattern', '')}:{ports}")
    parts = [f"{_SOURCES.get(source, inline(source, 40))} "
             f"({', '.join(code_cell(p, 120, in_table=False) for p in patterns[:20])}"
             f"{', …' if len(patterns) > 20 else ''})"
             for source, patterns in by_source.items()]  # fmt: skip
    return "Allowed for this run: " + "; ".join(parts) + ".\n\n" if parts else ""


def _table(title: str, headers: list[str], rows: list[list[str]], total: int) -> str:
    if not rows:
        return ""
    text = (f"**{title} ({total:,}):**\n\n| " + " | ".join(headers) + " |\n|"
            + "---|" * len(headers) + "\n")  # fmt: skip
    text += "".join("| " + " | ".join(row) + " |\n" for row in rows[:ROWS])
    if total > min(len(rows), ROWS):
        text += f"\n*{total - min(len(rows), ROWS):,} more not listed.*\n"
    return text + "\n"


def section(report: dict[str, Any] | None, budget: int) -> str:
    """The summary's Network section within ``budget`` bytes ("" without a report)."""
    if not report:
        return ""
    mode = report.get("mode")
    head = "### Network\n\n"
    if mode == "open":
        text = head + ("The agent had the runner's network (`network: open`): nothing it "
                       "connected to was checked or recorded.\n\n")
    elif mode != "restricted":
        why = inline(str(report.get("why", "")), 300)
        how = ("ran under Landlock, not in the box" if mode == "landlock"
               else "was not contained")
        text = head + f"No network wall: the agent {how}{f' ({why})' if why else ''}"
        text += "; it had the runner's network.\n\n"
    else:
        text = head + _rules(report) + _restricted(report)
    if utf8_len(text) <= budget:
        return text
    note = "*Network: left out to stay under the summary size limit.*\n\n"
    return note if utf8_len(note) <= budget else ""


def _restricted(report: dict[str, Any]) -> str:
    text = ""
    if unreachable := [str(u) for u in report.get("unreachable", []) if isinstance(u, str)]:
        text += ("> [!WARNING]\n> MCP servers the wall cannot let through (an IP address for a "
                 "host; give it a name): " + ", ".join(code_cell(u, 200, in_table=False)
                                                       for u in unreachable[:10]) + "\n\n")
    if error := report.get("error"):
        text += (f"> [!CAUTION]\n> {inline(str(error), 300)}: from then on every connection of "
                 "the agent failed.\n\n")
    refused = _list(report, "refused")
    text += _table("Refused", ["Destination", "Kind", "Attempts", "First attempt"], [
        [code_cell(str(e.get("destination", "")), 160), code_cell(str(e.get("kind", "")), 20),
         f"{_int(e.get('count')):,}",
         f"{code_cell(str(e.get('first', '')), 200)} {inline(str(e.get('first_at', '')), 30)}"]
        for e in refused], len(refused) + _int(report.get("omitted")) if refused else 0)
    allowed = _list(report, "allowed")
    text += _table("Reached", ["Destination", "Connections", "Failed", "Sent", "Received"], [
        [code_cell(str(e.get("destination", "")), 160), f"{_int(e.get('connections')):,}",
         f"{_int(e.get('failed')):,}", _bytes(_int(e.get("bytes_out"))),
         _bytes(_int(e.get("bytes_in")))] for e in allowed], len(allowed))
    if not refused and not allowed:
        text += "The agent connected to nothing and nothing was refused.\n\n"
    elif not refused:
        text += "Nothing was refused.\n\n"
    return text


def redacted(report: dict[str, Any] | None, redact: Callable[[str], str]) -> dict[str, Any] | None:
    """A copy of ``report`` with every string redacted (a refused name may hold a secret)."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return None if report is None else walk(report)
