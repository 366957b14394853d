"""The agent's review text as a small, inert Markdown subset.

A review is read on GitHub, so a finding may keep a little formatting; everything else the
agent wrote stays literal text. What survives:

- paragraphs and line breaks; bullet items (``- `` or ``* `` at the start of a line);
- inline code (`` `x` ``) and fenced code blocks (re-fenced by us, so they cannot be closed
  early; an info string other than a plain word, and the ones GitHub renders as something
  else (``suggestion``, ``math``, ``mermaid``, ``geojson``, ``topojson``, ``stl``), becomes
  ``text``);
- links whose target lies in this repository on this GitHub (``[text](SERVER/OWNER/REPO/...)``).

Everything else renders as the characters typed: HTML and comments, images, other links (bare
URLs included), headings, tables, quotes, emphasis, math, @mentions and issue references
(#12, GH-12, owner/repo#12: no notification, no back-reference), thematic breaks and setext
underlines. Direction controls (bidi) are shown as ``⟨U+202E⟩``, other control characters as
``�``, other invisible characters escaped (``\u200b``). A suggestion is code inside a
``suggestion`` block we write, offered only when it holds no such character.
"""

from __future__ import annotations

import re
from html.entities import html5

from cursor_agent_action.markdown import INVISIBLE, code_cell, escape, fence, inline, shorten

_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\(([^()\s<>]{1,2000})\)")
_URL_REST = re.compile(r"[A-Za-z0-9._~/?#&=+%:@,;!*'-]*")
# What cmark-gfm (GitHub's parser) decodes in a link destination, in two passes (its
# cmark_clean_url): first entity and numeric character references (with their semicolon), then
# a backslash before ASCII punctuation in what that gave, so ``&#92;.`` and ``\\&#46;`` are
# both ``.`` there.
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_REFERENCE = re.compile(r"&(?:#[xX][0-9A-Fa-f]{1,8}|#[0-9]{1,8}|[A-Za-z][A-Za-z0-9]{1,31});")
_BULLET = re.compile(r"^[-*+] +(?=\S)")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")
_INFO = re.compile(r"[A-Za-z0-9_+.-]{1,30}")
# Info strings GitHub renders as something other than code (a formula, a diagram, a map, a
# 3D model, a one-click change): such a block is shown as text.
RENDERED_INFO = frozenset({"suggestion", "math", "mermaid", "geojson", "topojson", "stl"})
MAX_LINES = 400


def has_controls(text: str) -> bool:
    """Direction, control or other invisible characters: a suggestion holding one is refused,
    since it could only be shown escaped (accepting it would commit other text than shown)."""
    return bool(INVISIBLE.search(text) or _CONTROL.search(text.replace("\r", "")))


def clean(text: str) -> str:
    """Newlines normalised; bidi controls shown by name, other controls as U+FFFD."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _BIDI.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", text)
    return _CONTROL.sub("\ufffd", text)


def title(text: str, limit: int = 300) -> str:
    """One line of escaped prose (a finding's title)."""
    return inline(clean(text), limit) or "(untitled)"


class Prose:
    """Renders agent text into the subset; links survive only under ``repo_url``."""

    def __init__(self, repo_url: str) -> None:
        self.repo_url = repo_url.rstrip("/") + "/"

    def render(self, text: str) -> str:
        lines = clean(text).split("\n")
        out: list[str] = []
        i = 0
        while i < len(lines) and len(out) < MAX_LINES:
            opened = _FENCE_OPEN.match(lines[i])
            info = opened.group("info").strip() if opened else ""
            if opened and not (opened.group("fence")[0] == "`" and "`" in info):
                closing = re.compile(rf"^ {{0,3}}{re.escape(opened.group('fence')[0])}"
                                     rf"{{{len(opened.group('fence'))},}}\s*$")
                body: list[str] = []
                i += 1
                while i < len(lines) and not closing.match(lines[i]):
                    body.append(lines[i])
                    i += 1
                i += 1  # the closing fence (or the end)
                word = info.split()[0] if info.split() else ""
                plain = _INFO.fullmatch(word) and word.casefold() not in RENDERED_INFO
                kind = word if plain else "text"
                out.append(fence("\n".join(body), kind).rstrip("\n"))
                continue
            out.append(self.line(lines[i]))
            i += 1
        if i < len(lines):
            out.append(f"*(cut: more than {MAX_LINES} lines)*")
        return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")

    def line(self, raw: str) -> str:
        text = raw.strip()
        if not text:
            return ""
        bullet = _BULLET.match(text)
        if bullet:  # one level of bullet; what follows it starts nothing more
            return "- " + self._lead(self._inline(text[bullet.end():]))
        return self._lead(self._inline(text))

    @staticmethod
    def _lead(rendered: str) -> str:
        """A list marker, thematic break or setext underline at the start made literal."""
        if rendered[:1] in ("-", "+", "="):
            return "\\" + rendered
        return _ORDERED.sub(r"\1\\\2", rendered)

    def _inline(self, text: str) -> str:
        out: list[str] = []
        pos = 0
        for span in _SPAN.finditer(text):
            out.append(self._links(text[pos:span.start()]))
            out.append(code_cell(span.group(2), limit=2000, in_table=False))
            pos = span.end()
        out.append(self._links(text[pos:]))
        return "".join(out)

    def _links(self, text: str) -> str:
        out: list[str] = []
        pos = 0
        for link in _LINK.finditer(text):
            out.append(escape(text[pos:link.start()]))
            label, url = link.group(1), link.group(2)
            if self.in_repo(url):
                out.append(f"[{escape(label)}]({url})")
            else:
                out.append(f"{escape(label)} ({escape(shorten(url, 200))})")
            pos = link.end()
        out.append(escape(text[pos:]))
        return "".join(out)

    def in_repo(self, url: str) -> bool:
        """``url`` lies under this repository: judged as GitHub's Markdown reads it
        (:func:`destination`: ``&#46;&#46;`` is ``..``), with no dot segments, no percent
        escape (a browser reads ``%2e%2e`` as ``..``), plain characters only."""
        url = destination(url)
        if not url.casefold().startswith(self.repo_url.casefold()):
            return False
        rest = url[len(self.repo_url):]
        segments = re.split(r"[/?#]", rest)
        return (bool(_URL_REST.fullmatch(rest)) and "%" not in rest
                and not any(s in (".", "..") for s in segments))


def destination(url: str) -> str:
    """A link destination as cmark-gfm (so GitHub) reads it: entity and numeric character
    references decoded, then backslash escapes removed (``&#46;``, ``\\&#46;`` and ``&#92;.``
    are all ``.``); an unknown entity stays as written."""
    if "&" in url:
        url = _REFERENCE.sub(_reference, url)
    return _ESCAPE.sub(r"\1", url) if "\\" in url else url


def _reference(found: re.Match[str]) -> str:
    """One character reference as cmark decodes it: a number (0, a surrogate or past U+10FFFF
    is U+FFFD; any other, a noncharacter too, is itself) or an HTML5 entity name."""
    text = found.group(0)
    if text[1] != "#":
        return html5.get(text[1:], text)
    code = int(text[3:-1], 16) if text[2] in "xX" else int(text[2:-1])
    return "\ufffd" if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)
