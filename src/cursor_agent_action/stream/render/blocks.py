"""Layout blocks the summary's sections share: a fold (``<details>``) and the wrapping that
keeps every line of our prose short. Neither escapes anything: what goes in is Markdown made
by :mod:`cursor_agent_action.markdown` (a fold's label is our own words, HTML-escaped here)."""

from __future__ import annotations

import re

from cursor_agent_action.markdown import html_escape, utf8_len

LINE_CHARS = 160
"""Our prose is wrapped at this width: no line of the summary outside a table or a code block
runs over about 200 characters (a word longer than the width stays whole)."""
FOLD_BYTES = 60
"""What :func:`folded` adds besides its label and body."""
NOTE_RESERVE = 200
"""Bytes a section keeps free for its truncation note."""
_BREAKABLE = re.compile(r" (?=[A-Za-z])")


def wrap(text: str, width: int = LINE_CHARS) -> list[str]:
    """``text`` (one line of Markdown) as lines of at most ``width`` characters that render
    as the same paragraph: broken only at a space before a letter (no line can then start a
    list, heading, quote, fence, table or HTML block) and outside code spans."""
    lines: list[str] = []
    while len(text) > width:
        cut = 0
        for match in _BREAKABLE.finditer(text, 0, width + 1):
            if text.count("`", 0, match.start()) % 2 == 0:
                cut = match.start()
        if not cut:
            break
        lines.append(text[:cut])
        text = text[cut + 1:]
    return [*lines, text]


def folded(label: str, body: str) -> str:
    """``body`` (Markdown) folded under ``label`` (our own words: HTML-escaped)."""
    return (f"<details><summary>{html_escape(label)}</summary>\n\n{body.rstrip()}\n\n"
            "</details>\n\n")


def left_out_note(title: str, budget: int) -> str:
    note = f"*{title}: left out to stay under the summary size limit.*\n\n"
    return note if utf8_len(note) <= budget else ""
