"""The texts of a review: one comment per finding on its line, and the review body (summary,
findings outside the diff, findings over ``max-comments``, what is still open from an earlier
review). Agent text goes through :class:`reviewtext.Prose`; our own text is trusted Markdown.
Hidden markers let a re-run find the review and each finding again."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cursor_agent_action.gh.review.findings import SEVERITIES, Answer, Finding
from cursor_agent_action.gh.review.placement import Outside, Placed
from cursor_agent_action.gh.review.text import Prose, title
from cursor_agent_action.markdown import code_cell, fence

BODY_LIMIT = 65536
"""GitHub's limit for a review body and for a comment."""
ICONS = {"critical": "🔴", "major": "🟠", "minor": "🟡", "nit": "⚪"}
_FINDING_TAG = re.compile(r"<!-- cursor-agent-action:finding:([0-9a-f]{16}) -->")
_LIVE_TAG = re.compile(r"<!-- cursor-agent-action:live:([0-9,]*) -->")
SUPERSEDED_TAG = "<!-- cursor-agent-action:superseded -->"


def finding_tag(finding: Finding) -> str:
    return f"<!-- cursor-agent-action:finding:{finding.fingerprint} -->"


def fingerprint_of(body: str) -> str:
    match = _FINDING_TAG.search(body or "")
    return match.group(1) if match else ""


def live_ids(body: str) -> list[int]:
    match = _LIVE_TAG.search(body or "")
    return [int(n) for n in match.group(1).split(",") if n] if match else []


def where(finding: Finding) -> str:
    lines = (f"{finding.start_line}-{finding.line}" if finding.start_line
             else str(finding.line))
    side = " (old file)" if finding.side == "LEFT" else ""
    return f"{code_cell(finding.path, 300, in_table=False)} line {lines}{side}"


def headline(finding: Finding) -> str:
    return f"{ICONS[finding.severity]} **{finding.severity}** · {title(finding.title)}"


def comment_body(spot: Placed, prose: Prose) -> str:
    """The inline comment of a placed finding (its marker first), within GitHub's limit: the
    agent's body is cut (before rendering, so no block is cut open) until it fits."""
    body = spot.finding.body
    for _ in range(20):
        text = _comment_body(spot, prose, body)
        if len(text) <= BODY_LIMIT:
            return text
        body = body[: len(body) // 2] + " … (cut to fit GitHub's size limit)"
    return _comment_body(spot, prose, "(too long to show)")


def _comment_body(spot: Placed, prose: Prose, body: str) -> str:
    finding = spot.finding
    parts = [finding_tag(finding), headline(finding)]
    if spot.note:
        parts.append(f"*({spot.note})*")
    parts.append(prose.render(body))
    if finding.suggestion is not None:
        text = finding.suggestion.replace("\r\n", "\n").rstrip("\n")
        if spot.suggestion_ok:
            parts.append(fence(text, "suggestion").rstrip("\n"))
        else:
            parts.append(f"Proposed replacement (not offered as a suggestion: {spot.refusal}):")
            parts.append(prose.render(fence(text, "text")))
    return "\n\n".join(p for p in parts if p)


@dataclass
class BodyParts:
    head: str  # the review's marker line
    answer: Answer
    event_note: str
    outside: Sequence[Outside]
    over_cap: Sequence[Placed]
    kept: Sequence[tuple[Placed, str]]  # (finding, URL of the earlier comment)
    live: Sequence[int]
    run_url: str
    counts: dict[str, int] = field(default_factory=dict)
    not_reviewed: Sequence[str] = ()  # our own lines: shards that did not answer, files in none


def review_body(parts: BodyParts, prose: Prose) -> str:
    """The review body, within GitHub's limit: details while they fit, then one line each,
    then a count of what was left out."""
    answer = parts.answer
    live = ",".join(str(n) for n in parts.live)
    counts = " · ".join(f"{ICONS[s]} {n} {s}" for s, n in parts.counts.items() if n)
    out = [parts.head, f"<!-- cursor-agent-action:live:{live} -->",
           "### Code review", prose.render(answer.summary) or "*(no summary)*",
           f"**Findings:** {counts or 'none'}" + (f" · {parts.event_note}"
                                                   if parts.event_note else "")]
    if parts.not_reviewed:
        out.append("#### Not reviewed\n\nThis review does not cover everything the pull "
                   "request changes:\n\n" + "\n".join(parts.not_reviewed))
    if parts.over_cap:
        count = len(parts.over_cap)
        out.append(f"*{count} more finding{'s' if count != 1 else ''}, not placed on lines: "
                   "see \"More findings\" below.*")
    footer = f"\n\n[Workflow run]({parts.run_url})" if parts.run_url else ""
    budget = BODY_LIMIT - 2000 - len(footer)
    sections: list[tuple[str, list[tuple[Finding, str]]]] = [
        ("Outside the diff", [(o.finding, o.reason) for o in parts.outside]),
        ("More findings (over max-comments)", [(p.finding, "") for p in parts.over_cap]),
    ]
    text = "\n\n".join(out)
    left_out = 0
    for heading, entries in sections:
        if not entries:
            continue
        text += f"\n\n#### {heading}"
        for finding, reason in entries:
            short = f"\n\n- {headline(finding)}: {where(finding)}" + (
                f" ({reason})" if reason else "")
            full = short + "\n\n" + _quote(prose.render(finding.body))
            if finding.suggestion is not None:
                full += "\n>\n" + _quote("Proposed replacement:\n\n"
                                         + fence(finding.suggestion.rstrip("\n"), "text"))
            if len(text) + len(full) <= budget:
                text += full
            elif len(text) + len(short) <= budget:
                text += short
            else:
                left_out += 1
    if parts.kept:
        text += "\n\n#### Still open from the earlier review"
        for spot, url in parts.kept:
            entry = f"\n- [{headline(spot.finding)}]({url})"
            if len(text) + len(entry) <= budget:
                text += entry
            else:
                left_out += 1
    if left_out:
        text += f"\n\n*{left_out} more finding(s) not shown: over GitHub's size limit.*"
    return text + footer


def _quote(markdown: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in markdown.split("\n"))


def is_superseded(body: str, head: str) -> bool:
    """``body`` is one of ours that a newer review already replaced: the tag is its second
    line, right under the marker (a tag quoted in the agent's text further down is not it)."""
    return (body or "").startswith(f"{head}\n{SUPERSEDED_TAG}\n")


def superseded_body(head: str, url: str) -> str:
    return (f"{head}\n{SUPERSEDED_TAG}\n*This review was replaced by [a newer one]({url}); "
            "its comments that no longer hold are hidden as outdated, those that still hold are "
            "listed there.*")


def step_summary(answer: Answer, placed: list[Placed], outside: list[Outside], url: str) -> str:
    """The review step's job summary: the findings by severity and where they went, on top;
    then one row per finding."""
    rows = ["| Severity | Where | Finding | Placed |", "| --- | --- | --- | --- |"]
    spots = [(p.finding, "on the line") for p in placed] + [(o.finding, "body")
                                                            for o in outside]
    for finding, where in sorted(spots, key=lambda s: s[0].index)[:100]:
        rows.append(f"| {finding.severity} | {code_cell(f'{finding.path}:{finding.line}')} | "
                    f"{title(finding.title, 120)} | {where} |")
    more = f"\n\n{len(spots) - 100} more not shown." if len(spots) > 100 else ""
    total = len(answer.findings)
    counts = " · ".join(f"{ICONS[s]} {n} {s}" for s in SEVERITIES
                        if (n := sum(f.severity == s for f in answer.findings)))
    head = f"## Code review: {total} finding{'' if total == 1 else 's'}"
    where = (f"[The review]({url}): {len(placed)} on the diff's lines, {len(outside)} in the "
             "review body")
    if not spots:
        return f"{head}\n\n[The review]({url})\n\n"
    return (f"{head} ({counts})\n\n{where}\n\n" + "\n".join(rows) + more + "\n\n")
