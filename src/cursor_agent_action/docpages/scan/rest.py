"""reStructuredText (docutils, Sphinx): directives and roles, found wherever docutils could see
one: at any indentation, inside a list item, a table cell, a field body or a substitution
definition, after backslash escapes are removed (``:fi\\le:`` is ``:file:``)."""

from __future__ import annotations

import re

from cursor_agent_action.docpages.construct import Construct, PathUse
from cursor_agent_action.docpages.inert import PATH_OPTIONS, ROLES, names
from cursor_agent_action.docpages.scan.text import (
    MAX_BLOCK_LINES,
    collapse,
    indent,
    lines,
    unescape,
)

_BLANK = r"[^\S\n]"
_DIRECTIVE = re.compile(
    rf"(?<![\w.\\])\.\.{_BLANK}+(?:\|(?P<sub>[^|]*)\|{_BLANK}+)?"
    rf"(?P<name>[^\s:`|]+(?::[^\s:`|]+)*){_BLANK}*::(?P<rest>.*)$")
_OPTION = re.compile(r"^:(?P<name>[^:\s][^:]*?):(?:\s+(?P<value>.*)|$)")
_ROLE = re.compile(
    r"(?<![\w\\]):(?P<name>[^\s:`]+(?::[^\s:`]+)*):(?P<ticks>`+)(?P<body>[^`]*)(?P=ticks)"
    r"|(?P<ticks2>`+)(?P<body2>[^`]*)(?P=ticks2):(?P<name2>[^\s:`]+(?::[^\s:`]+)*):(?![\w:])")
_TARGET = re.compile(r"<(?P<path>[^<>]*)>\s*$")
_XREF = names(ROLES)
"""Inert roles name no file (cross-references, inline text), but ``download``."""
_READS = {"include": True, "literalinclude": True, "image": False, "figure": False}
"""Directives whose argument is a path, and whether it must name a file (a missing image is
harmless: the build warns and copies nothing)."""


def _cell(line: str) -> str:
    """A line with table borders and blanks round it removed."""
    return line.strip().strip("|").strip()


def directives(text: str, markup: str = "rest") -> list[Construct]:
    """Every directive of ``text`` (reST, or a Markdown page read for ``eval-rst``)."""
    found: list[Construct] = []
    raw = lines(text)
    clean = [unescape(line) for line in raw]
    for number, line in enumerate(clean):
        for match in _DIRECTIVE.finditer(line):
            found.append(_directive(raw, clean, number, match, markup))
    return found


def _directive(raw: list[str], clean: list[str], number: int, match: re.Match[str],
               markup: str) -> Construct:
    name = match.group("name").lower()
    argument = [match.group("rest").strip().rstrip("|").strip()]
    options: list[list[str]] = []
    shown = [raw[number]]
    header = indent(raw[number])
    refused = ""
    at = number + 1
    while at < len(clean):
        line = clean[at]
        body = _cell(line)
        if not body:
            break
        if at - number > MAX_BLOCK_LINES:
            refused = f"its argument and options run over {MAX_BLOCK_LINES} lines"
            break
        if indent(line) <= header and not line.lstrip().startswith("|"):
            break
        at += 1
        shown.append(raw[at - 1])
        if option := _OPTION.match(body):
            options.append([option.group("name").strip().lower(), option.group("value") or ""])
        elif options:
            options[-1][1] += body
        else:
            argument.append(body)
    path = "".join(argument)  # docutils joins a path over lines with nothing between
    values = tuple((key, value.strip()) for key, value in options)
    uses: list[PathUse] = []
    literal = any(key in ("literal", "code") for key, _ in values)
    if name in _READS and path:
        uses.append(PathUse(path, reads=_READS[name], parsed=name == "include" and not literal))
    uses += [PathUse(value) for key, value in values if key in PATH_OPTIONS and value]
    if name not in _READS and name not in ("csv-table", "raw"):  # unknown: what it may name
        uses += [PathUse(value, reads=False) for value in (path, *(v for _, v in values))
                 if value and " " not in value]
    return Construct(number + 1, "directive", name, collapse(*shown), values, tuple(uses),
                     refused, markup,
                     _content(raw, at, header, table=raw[number].lstrip().startswith("|")))


def _content(raw: list[str], at: int, header: int, *, table: bool) -> str:
    """The directive's content from line ``at``: every line up to one as little indented as
    its marker (in a table, one that is no row of it) (an extension may run it:
    ``click:example``, ``jupyter-execute``)."""
    content: list[str] = []
    while at < len(raw) and (not raw[at].strip() or indent(raw[at]) > header
                             or (table and raw[at].lstrip().startswith("|"))):
        content.append(raw[at])
        at += 1
    return collapse(*content)


def roles(text: str, markup: str = "rest") -> list[Construct]:
    """Every role of ``text``: ``:name:`body``` and ```body`:name:``."""
    clean = "\n".join(unescape(line) for line in lines(text))
    found: list[Construct] = []
    for match in _ROLE.finditer(clean):
        name = (match.group("name") or match.group("name2")).lower()
        body = match.group("body") if match.group("name") else match.group("body2")
        target = _TARGET.search(body)
        path = " ".join((target.group("path") if target else body).split())
        uses = ((PathUse(path),) if name == "download" else () if name in _XREF
                else (PathUse(path, reads=False),))  # an unknown role: what it may name
        found.append(Construct(clean.count("\n", 0, match.start()) + 1, "role", name,
                               collapse(match.group(0)), (), uses if path else (), "", markup))
    return found
