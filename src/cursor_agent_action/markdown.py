"""Markdown building blocks that keep agent-authored text inert in a job summary or comment.

GitHub renders summaries and comments as GitHub Flavored Markdown with some HTML allowed
(https://github.github.com/gfm/). Text from the agent or the CLI must never become a heading,
link, image, HTML element or comment there, so it goes into one of three containers:

- :func:`fence`: a fenced code block whose fence is longer than any backtick run inside;
- :func:`code_cell`: a code span for a table cell (``|`` escaped, newlines shown as ``⏎``);
- :func:`inline`: prose with every Markdown/HTML meta character escaped and autolinks broken.

In all three, invisible characters are shown escaped (:func:`escape_invisible`): a bidi
override could make a file name read backwards, a zero-width character hide a word.
"""

from __future__ import annotations

import re

_BACKTICKS = re.compile(r"`+")
_NEWLINES = re.compile(r"\r\n|\r|\n")
# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones with meaning.
_MD_META = re.compile(r"([\\`*_{}\[\]#!|~])")
# "-", "+" and "1." / "1)" only mean something at the start of a line (list items).
_LIST_START = re.compile(r"^([-+]|\d+(?=[.)]))")
# GFM's autolink extension links bare URLs, www. hosts and e-mail addresses
# (https://github.github.com/gfm/#autolinks-extension-), and GitHub links (and notifies) @names
# and references to issues (#12, GH-12, owner/repo#12, which also leave a back-reference on
# the issue named); a zero-width space defeats each.
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)|(?<=#)(?=\d)|(?<=\bGH)(?=-\d)",
                       re.IGNORECASE)
_ZWSP = "\u200b"
_MATH = re.compile(r"\$")  # GitHub renders $...$ and $$...$$ as math
NEWLINE_MARK = "⏎"
# Characters that show as nothing or change how their neighbours show: Unicode's format
# characters (Cf: bidi embeddings, overrides and isolates, zero-width space and joiners, the
# word joiner, the byte order mark, tags...), the line and paragraph separators (Zl, Zp) and
# the rest of Default_Ignorable_Code_Point (variation selectors, Hangul fillers, the combining
# grapheme joiner). tests/test_markdown.py checks the Cf, Zl and Zp part against unicodedata.
INVISIBLE = re.compile(
    "[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
    "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape_invisible(text: str, keep: str = "") -> str:
    """``text`` with every :data:`INVISIBLE` character written out as ``\\u202e`` (astral ones
    as ``\\U000e0041``), but those in ``keep`` (the zero-width space :func:`inline` inserts
    itself, for the last pass over a whole summary)."""
    if text.isascii():  # most text: nothing to look for
        return text
    if keep:
        return INVISIBLE.sub(lambda m: m.group(0) if m.group(0) in keep else _escaped(m), text)
    return INVISIBLE.sub(_escaped, text)


def html_escape(text: str) -> str:
    """Escape ``&``, ``<``, ``>`` and quotes for HTML text or attribute values."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


def _longest_backtick_run(text: str) -> int:
    if "`" not in text:  # the common case, without the regex
        return 0
    return max(len(m) for m in _BACKTICKS.findall(text))


def fence(text: str, info: str = "text") -> str:
    """A fenced code block that ``text`` cannot close, followed by a newline."""
    text = escape_invisible(text)
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}\n"


def shorten(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def code_cell(text: str, limit: int = 200, *, in_table: bool = True) -> str:
    """``text`` verbatim as a code span, for a table cell (empty text gives an empty cell).

    Inside a code span nothing renders as Markdown or HTML; the span's backtick string is
    longer than any run inside, newlines become ``⏎`` and, in a table, ``|`` is escaped
    because GFM splits table rows on it even inside code spans.
    """
    flat = shorten(_NEWLINES.sub(NEWLINE_MARK, escape_invisible(text)), limit)
    if not flat:
        return ""
    ticks = "`" * (_longest_backtick_run(flat) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or flat.strip(" ") == "" else ""
    span = f"{ticks}{pad}{flat}{pad}{ticks}"
    return span.replace("|", "\\|") if in_table else span


def inline(text: str, limit: int = 500) -> str:
    """One line of prose that renders as the characters of ``text`` (plus zero-width spaces):
    no Markdown, HTML, math, autolink, mention or issue reference."""
    flat = shorten(" ".join(escape_invisible(text).split()), limit)
    return _LIST_START.sub(
        lambda m: m.group(1) + "\\" if m.group(1)[0].isdigit() else "\\" + m.group(1),
        escape(flat),
    )


_URL = re.compile(r"\bhttps?://[^\s`]+?(?=[.,;:!?)\]]*(?:\s|$))")


def prose(text: str, limit: int = 500) -> str:
    """As :func:`inline`, but each ``http(s)://`` URL is a code span, verbatim: copied from the
    page it is the URL itself, with no zero-width space in it (nor is it a link)."""
    flat = shorten(" ".join(text.split()), limit)
    parts = _URL.split(flat)
    urls = _URL.findall(flat)
    pieces = [inline(parts[0], limit) + (" " if parts[0].endswith(" ") else "")]
    for url, rest in zip(urls, parts[1:], strict=True):
        lead = " " if rest.startswith(" ") else ""
        tail = " " if rest.endswith(" ") and rest.strip() else ""
        text_part = inline(rest, limit) if rest.strip() else ""
        pieces += [code_cell(url, limit, in_table=False), lead + text_part + tail]
    return "".join(pieces)


_PIECE_CHARS = 1024 * 1024


def utf8_len(text: str) -> int:
    """Bytes of ``text`` in UTF-8, without encoding a long text all at once (tens of MiB)."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[start : start + _PIECE_CHARS].encode("utf-8"))
        for start in range(0, len(text), _PIECE_CHARS)
    )


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that fits in ``max_bytes`` UTF-8 bytes."""
    if len(text) * 4 <= max_bytes:  # cheap exit: cannot be too long
        return text
    max_bytes = max(0, max_bytes)
    if text.isascii():
        return text[:max_bytes]
    # A character is at least one byte: only the first max_bytes characters can fit.
    return text[:max_bytes].encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def escape(text: str) -> str:
    """``text`` (one line) with every Markdown/HTML meta character escaped, autolinks and
    @mentions broken and ``$`` (GitHub's math) escaped; spaces kept, nothing shortened. What
    starts a line (list markers, setext underlines) is the caller's to handle. Invisible
    characters are shown escaped, as everywhere else."""
    broken = _AUTOLINK.sub(_ZWSP, escape_invisible(text))
    escaped = _MATH.sub(r"\\$", _MD_META.sub(r"\\\1", broken))
    return escaped.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
