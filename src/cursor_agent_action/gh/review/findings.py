"""The agent's review answer (``review/findings.schema.json``), read and checked.

The answer usually is the run's ``structured-output``, already checked against the schema by
the agent step; it is checked again here because ``findings`` may come from anywhere. Every
violation is one :class:`UsageError` naming the input and the finding.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from cursor_agent_action.errors import UsageError
from cursor_agent_action.gh.review.diffmap import LEFT, RIGHT, normalize_path
from cursor_agent_action.markdown import shorten
from cursor_agent_action.options import json_input, read_input_file

SEVERITIES = ("critical", "major", "minor", "nit")
"""Most severe first."""
VERDICTS = ("approve", "comment", "request-changes")
MAX_FINDINGS_BYTES = 4 * 1024 * 1024
LIMITS = {"summary": 8000, "path": 1000, "title": 300, "body": 8000, "suggestion": 20000}
"""Longest text accepted per key (the schema's maxLength)."""
_KEYS = {"path", "line", "start_line", "side", "severity", "title", "body", "suggestion"}


@dataclass(frozen=True)
class Finding:
    index: int  # 1-based position in the answer, for messages
    path: str
    line: int
    start_line: int | None
    side: str
    severity: str
    title: str
    body: str
    suggestion: str | None

    @property
    def rank(self) -> int:
        return SEVERITIES.index(self.severity)

    @property
    def fingerprint(self) -> str:
        """Same finding, wherever its line moved and however its body is worded this time:
        path, side, severity and title."""
        text = "\x00".join((self.path, self.side, self.severity, " ".join(self.title.split())))
        return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


@dataclass(frozen=True)
class Answer:
    summary: str
    verdict: str
    findings: list[Finding]

    def highest(self) -> str:
        return min(self.findings, key=lambda f: f.rank).severity if self.findings else ""


def load(text: str, file: str) -> Answer:
    """The answer from the ``findings`` input (JSON text) or ``findings-file``."""
    if text.strip() and file.strip():
        raise UsageError("findings and findings-file were both given.",
                         "Pass the agent's answer one way only.")
    label = "findings"
    if file.strip():
        label = "findings-file"
        text = read_input_file(file, label, "UTF-8 JSON")
    if not text.strip():
        raise UsageError("no findings: findings and findings-file are empty.",
                         "Pass the agent step's structured-output (run with "
                         "output-schema-file: review/findings.schema.json) as findings, or its "
                         "structured-output-file as findings-file. Did the agent run fail?")
    data = json_input(text, label, limit=MAX_FINDINGS_BYTES,
                      hint="Pass the agent step's structured-output, JSON that matches "
                      "review/findings.schema.json.")
    return parse(data, label)


def redacted(answer: Answer, redact: Callable[[str], str]) -> Answer:
    """``answer`` with every text the model wrote redacted, as text, before anything escapes,
    fences or places it (the review body, its comments, the job summary's table)."""
    return Answer(redact(answer.summary), answer.verdict, [
        dataclasses.replace(finding, path=redact(finding.path), title=redact(finding.title),
                            body=redact(finding.body),
                            suggestion=None if finding.suggestion is None
                            else redact(finding.suggestion))
        for finding in answer.findings])


def parse(data: Any, label: str) -> Answer:
    if not isinstance(data, dict):
        _bad(label, "", "must be a JSON object with summary, verdict and findings")
    extra = set(data) - {"summary", "verdict", "findings"}
    if extra:
        _bad(label, "", f"has unknown keys {sorted(extra)}")
    summary = _text(data, "summary", label, "", required=True)
    verdict = data.get("verdict")
    if verdict not in VERDICTS:
        _bad(label, "", f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    items = data.get("findings")
    if not isinstance(items, list):
        _bad(label, "", "findings must be a list")
    findings: list[Finding] = []
    seen: set[tuple[str, int, int | None]] = set()
    for index, item in enumerate(items, 1):
        finding = _finding(item, index, label)
        key = (finding.fingerprint, finding.line, finding.start_line)
        if key not in seen:  # the same finding on the same lines twice is posted once
            seen.add(key)
            findings.append(finding)
    return Answer(summary or "", str(verdict), findings)


def _finding(item: Any, index: int, label: str) -> Finding:
    where = f"finding {index}"
    if not isinstance(item, dict):
        _bad(label, where, "must be an object")
    extra = set(item) - _KEYS
    if extra:
        _bad(label, where, f"has unknown keys {sorted(extra)}")
    line = _line(item, "line", label, where, required=True) or 0
    start = _line(item, "start_line", label, where, required=False)
    side = item.get("side", RIGHT)
    if side not in (RIGHT, LEFT):
        _bad(label, where, f"side must be RIGHT or LEFT, not {side!r}")
    severity = item.get("severity")
    if severity not in SEVERITIES:
        _bad(label, where, f"severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
    if start is not None and start > line:
        _bad(label, where, f"start_line {start} is after line {line}")
    path = normalize_path(_text(item, "path", label, where, required=True) or "")
    if not path:
        _bad(label, where, "path is empty")
    heading = _text(item, "title", label, where, required=True) or ""
    if not heading.strip():
        _bad(label, where, "title is empty")
    return Finding(index, path, line, None if start == line else start, str(side),
                   str(severity), heading,
                   _text(item, "body", label, where, required=True) or "",
                   _text(item, "suggestion", label, where, required=False))


def _text(data: dict[str, Any], key: str, label: str, where: str, *,
          required: bool) -> str | None:
    if key not in data and not required:
        return None
    value = data.get(key)
    if not isinstance(value, str):
        _bad(label, where, f"{key} must be a string")
    if len(value) > LIMITS[key]:
        _bad(label, where, f"{key} is over {LIMITS[key]} characters")
    return value


def _line(data: dict[str, Any], key: str, label: str, where: str, *,
          required: bool) -> int | None:
    if key not in data and not required:
        return None
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _bad(label, where, f"{key} must be a line number (1 or more), not {value!r}")
    return int(value)


def _bad(label: str, where: str, problem: str) -> NoReturn:
    what = f"{label}: {where} " if where else f"{label} "
    # The agent's value is quoted in the problem: cut, so a huge one makes no huge log line.
    raise UsageError(f"{what}{shorten(problem, 300)}.",
                     "The answer must match review/findings.schema.json: run the agent with "
                     "output-schema-file set to it and pass its structured-output.")
