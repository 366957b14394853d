"""Every shard's answer merged into one, for one review and one status.

The agent jobs of a sharded review (:mod:`shards`) each leave their answer in a folder of
``findings-dir`` whose name ends in ``shard-N`` (``actions/download-artifact`` with a
``pattern`` puts each artifact in a folder of its name), as ``findings.json``. Merging:

- a shard of the plan whose folder is missing, holds no readable answer, or is named twice is
  a :class:`Gap`: its files were not reviewed (the review and its status say so, naming it);
  a folder for a shard the plan does not have is ignored, with a warning;
- a shard answers for its own files only: a finding on a changed file of another shard is set
  aside (:attr:`Merged.foreign`), so one shard can neither post nor suppress findings on
  another's files; findings on files the pull request does not change are kept (any shard may
  find a caller its change breaks), and go in the body as outside the diff;
- findings the same by fingerprint (path, side, line range, title with case, spacing and
  punctuation normalised) are posted once, keeping the most severe;
- the verdict is the strictest (``request-changes`` over ``comment``; ``approve`` only when
  every shard approves) and the summary each shard's, labelled.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action.errors import UsageError
from cursor_agent_action.gh.review import findings as findings_mod
from cursor_agent_action.gh.review.findings import Answer, Finding
from cursor_agent_action.gh.review.text import title
from cursor_agent_action.gh.shards import NotReviewed, Plan, PlanError, from_json
from cursor_agent_action.markdown import code_cell, shorten
from cursor_agent_action.options import read_input_file

FINDINGS_FILE = "findings.json"
_FOLDER = re.compile(r"(?:^|[-_.])shard-([1-9][0-9]{0,2})$")
BODY_FILES = 50
"""Files in no shard listed in the review body at most (the output and plan file: all)."""
SUMMARY_CHARS = 24_000
"""The merged summary's share of the review body, split among the shards."""


@dataclass(frozen=True)
class Gap:
    """A shard with no answer: its files were not reviewed."""

    shard: int
    files: int
    reason: str


@dataclass(frozen=True)
class Merged:
    plan: Plan
    answer: Answer
    gaps: tuple[Gap, ...]
    foreign: tuple[tuple[int, Finding], ...]  # (the shard that named it, the finding)
    duplicates: int
    warnings: tuple[str, ...]

    def not_reviewed(self, *, shards_only: bool = False) -> list[NotReviewed]:
        """Every changed file nobody reviewed: in no shard (unless ``shards_only``), or in a
        shard with no answer."""
        out = [] if shards_only else list(self.plan.not_reviewed)
        for gap in self.gaps:
            out += [NotReviewed(p, 0, f"shard {gap.shard}: {gap.reason}")
                    for p in self.plan.shards[gap.shard - 1].files]
        return out

    def body_lines(self, redact: Callable[[str], str] = str) -> list[str]:
        """The review body's "Not reviewed" lines (our Markdown; the agent's text inert, each
        text put through ``redact`` first, as text)."""
        lines = [f"- **Shard {g.shard}** of {len(self.plan.shards)} ({g.files} file(s)): "
                 f"{title(redact(g.reason), 400)}" for g in self.gaps]
        gaps = self.plan.not_reviewed
        lines += [f"- {code_cell(redact(g.path), 300, in_table=False)} ({g.size:,} bytes): "
                  f"{title(redact(g.reason), 300)}" for g in gaps[:BODY_FILES]]
        if len(gaps) > BODY_FILES:
            lines.append(f"- {len(gaps) - BODY_FILES} more file(s) in no shard: the step's "
                         "not-reviewed output and the plan file list them all")
        if self.foreign:
            lines.append(f"- {len(self.foreign)} finding(s) of a shard named another shard's "
                         "files and were left out: each shard answers for its own files")
        return lines

    def all_warnings(self) -> list[str]:
        """What the step warns of: folders ignored, findings on another shard's files."""
        foreign = ([f"{len(self.foreign)} finding(s) named changed files of another shard and "
                    "were left out (each shard answers for its own files)."]
                   if self.foreign else [])
        return [*self.warnings, *foreign]

    def status_text(self, *, shards_only: bool = False) -> str:
        """What a failing status says of the files nobody reviewed ("" when none did)."""
        count = len(self.not_reviewed(shards_only=shards_only))
        if not count:
            return ""
        named = ", ".join(str(g.shard) for g in self.gaps)
        return f"{count} file(s) not reviewed" + (
            f" (shard {named} of {len(self.plan.shards)} did not answer)" if named else "")


OUTPUT_LIST = 200
"""Files named in the ``not-reviewed`` output at most (the count has all)."""


def outputs(merged: Merged | None) -> dict[str, str]:
    """The review step's outputs about what nobody reviewed (none without a plan)."""
    missing = merged.not_reviewed() if merged else []
    return {"not-reviewed-count": str(len(missing)),
            "not-reviewed": json.dumps([{"path": n.path, "bytes": n.size, "reason": n.reason}
                                        for n in missing[:OUTPUT_LIST]]),
            "missing-shards": ",".join(str(g.shard) for g in (merged.gaps if merged else ()))}


def from_inputs(plan_file: str, findings_dir: str, findings: str, findings_file: str
                ) -> Merged | None:
    """The shards' answers merged when ``plan_file`` is given, else None."""
    if not plan_file.strip():
        if findings_dir.strip():
            raise UsageError("findings-dir was given without plan-file.",
                             "Pass the plan-file of the pr-context step that planned the "
                             "shards, or give findings or findings-file instead.")
        return None
    if findings.strip() or findings_file.strip():
        raise UsageError("plan-file merges the shards' answers from findings-dir: findings and "
                         "findings-file are not taken with it.",
                         "Remove findings / findings-file, and pass findings-dir.")
    if not findings_dir.strip():
        raise UsageError("plan-file was given without findings-dir.",
                         "Download the shards' artifacts (download-artifact with pattern) and "
                         "pass that directory as findings-dir.")
    try:
        plan = from_json(read_input_file(plan_file, "plan-file", "JSON"))
    except PlanError as exc:
        raise UsageError(f"plan-file {plan_file} is not a review plan: {exc}.",
                         "Pass pr-context's plan-file output (plan.json), downloaded "
                         "in this job.") from None
    answers, gaps, warnings = read(plan, findings_dir)
    return merge(plan, answers, gaps, warnings)


def fingerprint(finding: Finding) -> tuple[str, str, int, int, str]:
    """Path, side, line range and the title normalised (case, spacing, punctuation)."""
    text = unicodedata.normalize("NFKC", finding.title).casefold()
    words = "".join(c if c.isalnum() else " " for c in text).split()
    return (finding.path, finding.side, finding.start_line or finding.line, finding.line,
            " ".join(words))


def read(plan: Plan, directory: str) -> tuple[dict[int, Answer], list[Gap], list[str]]:
    """Each shard's answer from its folder of ``directory``; the gaps; warnings."""
    root = Path(directory)
    folders: dict[int, list[Path]] = {}
    warnings = []
    if root.exists() and not root.is_dir():
        raise UsageError(f"findings-dir {directory} is not a directory.",
                         "Download the shards' artifacts there (download-artifact with "
                         "pattern), and pass that path.")
    if not root.exists():  # no shard left an artifact: each is named as not answering
        warnings.append(f"findings-dir {directory} does not exist: no shard answered")
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        match = _FOLDER.search(path.name)
        if not match or not path.is_dir() or path.is_symlink():
            continue
        number = int(match.group(1))
        if not 1 <= number <= len(plan.shards):
            warnings.append(f"{path.name}: the plan has no shard {number} (it has "
                            f"{len(plan.shards)}); ignored")
            continue
        folders.setdefault(number, []).append(path)
    answers: dict[int, Answer] = {}
    gaps = []
    for shard in plan.shards:
        found = folders.get(shard.number, [])
        reason = ""
        if not found:
            reason = "no answer: the job failed, timed out, was cancelled or left no artifact"
        elif len(found) > 1:
            reason = (f"{len(found)} folders claim it ({', '.join(p.name for p in found)}): "
                      "none is taken")
        else:
            file = found[0] / FINDINGS_FILE
            try:
                if file.is_symlink() or not file.is_file():
                    raise UsageError(f"no {FINDINGS_FILE} in {found[0].name}", "")
                answers[shard.number] = findings_mod.load("", str(file))
            except UsageError as exc:
                reason = f"its answer is unusable: {shorten(exc.message, 300)}"
        if reason:
            gaps.append(Gap(shard.number, len(shard.files), reason))
    return answers, gaps, warnings


def merge(plan: Plan, answers: dict[int, Answer], gaps: list[Gap],
          warnings: list[str] | None = None) -> Merged:
    kept: dict[tuple[str, str, int, int, str], Finding] = {}
    foreign: list[tuple[int, Finding]] = []
    duplicates = 0
    for number in sorted(answers):
        for finding in answers[number].findings:
            owner = plan.shard_of(finding.path)
            if owner and owner != number:
                foreign.append((number, finding))
                continue
            key = fingerprint(finding)
            earlier = kept.get(key)
            if earlier is not None:
                duplicates += 1
                if finding.rank >= earlier.rank:
                    continue
            kept[key] = finding
    ordered = sorted(kept.values(), key=lambda f: f.rank)  # stable: shard, then agent order
    merged = [dataclasses.replace(f, index=i) for i, f in enumerate(ordered, 1)]
    return Merged(plan, Answer(_summary(plan, answers), _verdict(answers, gaps), merged),
                  tuple(gaps), tuple(foreign), duplicates, tuple(warnings or ()))


def _verdict(answers: dict[int, Answer], gaps: list[Gap]) -> str:
    verdicts = {a.verdict for a in answers.values()}
    if "request-changes" in verdicts:
        return "request-changes"
    return "approve" if verdicts == {"approve"} and not gaps else "comment"


def _summary(plan: Plan, answers: dict[int, Answer]) -> str:
    if len(plan.shards) == 1:
        return next(iter(answers.values())).summary if answers else ""
    share = max(500, SUMMARY_CHARS // max(1, len(answers)))
    parts = []
    for number in sorted(answers):
        files = len(plan.shards[number - 1].files)
        text = answers[number].summary.strip() or "(no summary)"
        parts.append(f"Part {number} ({files} file(s)): {shorten(text, share)}")
    return "\n\n".join(parts)
