"""Whether Docusaurus compiles a Markdown page as MDX (code): front matter ``format: mdx``
(which overrides the site's ``detect``), or a top-level ``import``/``export`` line outside a
fenced code block, where a block starts."""

from __future__ import annotations

import re

from cursor_agent_action.docpages.scan.text import lines, yaml_block

_FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_ESM = re.compile(r"^(?:import|export)(?=[\s{*'\"]|$)")
_PROSE = re.compile(r"^ {0,3}[^\W\d_]")
"""A paragraph's line: an ``import`` line right below it continues the paragraph (MDX reads
ESM only where a block starts: after a blank line, a heading, a fence...)."""


def compiled_as_mdx(text: str) -> tuple[int, str] | None:
    """The line and reason that make ``text`` a page Docusaurus compiles as MDX, or None."""
    raw = lines(text)
    start = 0
    if raw and raw[0].strip() == "---":
        end = next((i for i in range(1, len(raw)) if raw[i].strip() in ("---", "...")), None)
        if end is not None:
            matter, unread = yaml_block("\n".join(raw[1:end]))
            if isinstance(matter, dict) and str(matter.get("format", "")).lower() == "mdx":
                return 1, "its front matter says `format: mdx`"
            if unread and "mdx" in "\n".join(raw[1:end]).lower():  # fail closed
                return 1, f"its front matter names mdx, and {unread.removeprefix('its ')}"
            start = end + 1
    fence = ""
    for number in range(start, len(raw)):
        line = raw[number]
        if match := _FENCE.match(line):
            mark = match.group("fence")
            if not fence and not (mark[0] == "`" and "`" in match.group("info")):
                fence = mark
                continue
            if fence and mark[0] == fence[0] and len(mark) >= len(fence) and (
                    not match.group("info").strip()):
                fence = ""
                continue
        if not fence and _ESM.match(line) and not (
                number > start and _PROSE.match(raw[number - 1])):
            return number + 1, f"a top-level `{line.split()[0]}` line"
    return None
