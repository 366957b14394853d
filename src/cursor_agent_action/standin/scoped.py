"""The stand-in's review of the scope its prompt gives it (scenario ``review_scope``).

A sharded review hands each agent job one shard's diff as its scope (``pr-context`` with
``max-shards``: "Your scope is part N"). The stand-in reads that diff from its prompt (or from
the file a long prompt was saved to) and answers as the review schema asks: a finding on the
first added line of each of the first files of its scope, and a summary naming its part and
how many files it read. Only the standard library: it runs inside the box.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_PROMPT_FILE = re.compile(r"Your task is in the file (/\S+?) \(it was too long")
_PART = re.compile(r"Your scope is part (\d+)")
_FILE = re.compile(r"^\+\+\+ b/(.+)$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
MAX_PROMPT_BYTES = 64 << 20


def prompt_text(prompt: str) -> str:
    """The prompt, or the file it names when the CLI was given a long one that way."""
    found = _PROMPT_FILE.search(prompt)
    if found:
        try:
            with open(found.group(1), encoding="utf-8", errors="replace") as handle:
                return handle.read(MAX_PROMPT_BYTES)
        except OSError:
            return prompt
    return prompt


def added_lines(prompt: str) -> list[tuple[str, int, str]]:
    """(file, line and text of its first added line that is not blank) per file of the diff
    in the prompt, in order."""
    found: dict[str, tuple[int, str]] = {}
    path, line = "", 0
    for text in prompt.split("\n"):
        if match := _FILE.match(text):
            path = match.group(1)
            continue
        if match := _HUNK.match(text):
            line = int(match.group(1))
            continue
        if not path or path in found:
            continue
        if text.startswith("+") and text[1:].strip():
            found[path] = (line, text[1:])
        elif text.startswith(("+", " ")):  # a blank added line, or context
            line += 1
    return [(path, line, text) for path, (line, text) in found.items()]


def scoped_review(prompt: str, per_shard: int = 2) -> str:
    """A review answer (text ending in the findings JSON) about the diff in ``prompt``."""
    text = prompt_text(prompt)
    part = _PART.search(text)
    name = f"part {part.group(1)}" if part else "the whole pull request"
    files = added_lines(text)
    findings = [{"path": path, "line": line, "severity": "minor",
                 "title": f"Check {Path(path).name} ({name})",
                 "body": f"The stand-in agent reviewed {name} ({len(files)} file(s) with added "
                         f"lines) and picked this added line (`{_shown(text)}`) to show where a "
                         "finding lands; the real agent says what is wrong with it, if anything."}
                for path, line, text in files[:per_shard]]
    value = {"summary": f"Reviewed {name}: {len(files)} file(s) with added lines.",
             "verdict": "comment", "findings": findings}
    return f"Reviewed {name}.\n\n```json\n{json.dumps(value)}\n```"


def _shown(text: str, limit: int = 80) -> str:
    text = " ".join(text.replace("`", "'").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def context_delay(prompt: str, ms_per_kib: float) -> float:
    """Seconds a stand-in whose time grows with its context waits for ``prompt``."""
    return len(prompt_text(prompt).encode("utf-8")) / 1024 * ms_per_kib / 1000
