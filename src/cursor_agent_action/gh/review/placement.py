"""Where each finding goes: on its line of the diff, or in the review body ("Outside the
diff"), and whether its suggestion can be offered as a one-click suggestion."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from cursor_agent_action.gh.review.diffmap import LEFT, DiffMap
from cursor_agent_action.gh.review.findings import Finding
from cursor_agent_action.gh.review.text import has_controls


@dataclass(frozen=True)
class Placed:
    """A finding on its line (``finding.path`` is the file's path in the pull request)."""

    finding: Finding
    start_line: int | None  # the first line of a multi-line comment, else None
    suggestion_ok: bool
    refusal: str = ""  # why the suggestion is shown as plain code ("" when offered or none)
    note: str = ""  # e.g. why a range became a single line


@dataclass(frozen=True)
class Outside:
    finding: Finding
    reason: str


def place(findings: list[Finding], diff: DiffMap) -> tuple[list[Placed], list[Outside]]:
    placed: list[Placed] = []
    outside: list[Outside] = []
    for finding in findings:
        spot = _place(finding, diff)
        if isinstance(spot, Placed):
            placed.append(spot)
        else:
            outside.append(spot)
    return placed, outside


def _place(finding: Finding, diff: DiffMap) -> Placed | Outside:
    file = diff.find(finding.path)
    if file is None:
        why = (f"not among the files read ({diff.truncated})" if diff.truncated
               else "not a file this pull request changes")
        return Outside(finding, why)
    if not file.readable:
        return Outside(finding, file.why_unreadable)
    side = finding.side
    if file.hunk_of(side, finding.line) is None:
        which = "old" if side == LEFT else "new"
        return Outside(finding, f"line {finding.line} of the {which} file is not in the diff")
    finding = dataclasses.replace(finding, path=file.path)
    first = finding.start_line
    one_hunk = first is None or file.one_hunk(side, first, finding.line)
    note = "" if one_hunk else (f"lines {first}-{finding.line} are not all in one hunk of "
                                f"the diff: shown on line {finding.line}")
    refusal = ""
    if finding.suggestion is not None:
        if side == LEFT:
            refusal = "a suggestion changes the new file, and this finding is on the old one"
        elif not one_hunk:
            refusal = f"lines {first}-{finding.line} are not all in one hunk of the diff"
        elif has_controls(finding.suggestion):
            refusal = ("it holds direction, control or other invisible characters, which are "
                       "shown escaped: accepting it would commit other text than shown")
    return Placed(finding, first if one_hunk else None,
                  finding.suggestion is not None and not refusal, refusal, note)
