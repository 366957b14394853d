"""AsciiDoc (Asciidoctor): attribute entries, block macros and preprocessor directives
(``include::``, whose target runs to the ``[`` whatever blanks it holds), and inline macros
(``image:``, ``link:``...)."""

from __future__ import annotations

import re

from cursor_agent_action.docpages.construct import Construct, PathUse
from cursor_agent_action.docpages.inert import UTF8
from cursor_agent_action.docpages.scan.text import collapse, lines

_ATTRIBUTE = re.compile(r"^[ \t]*:(?P<name>!?\w[\w.-]*!?):(?:[ \t]+(?P<value>.*))?$")
_BLOCK = re.compile(r"^[ \t]*\\?(?P<name>\w[\w-]*)::(?P<target>[^\[\n]*)\[(?P<attrs>[^\n]*)")
_INLINE = re.compile(r"(?<![\w:])(?P<name>[A-Za-z][\w+-]*):(?P<target>(?:[^\s\[:][^\[\n]*?)?)"
                     r"\[(?P<attrs>[^\]\n]*)")
_ENCODING = re.compile(r"\bencoding\s*=\s*\"?(?P<value>[^,\"\]]*)", re.IGNORECASE)
_READS = {"include": True, "image": False, "icon": False}
_PATH_ATTRIBUTES = ("stylesheet", "docinfodir", "stylesdir", "imagesdir", "includedir",
                    "iconsdir")


def constructs(text: str) -> list[Construct]:
    """Every attribute entry and macro of ``text``."""
    found: list[Construct] = []
    for number, line in enumerate(lines(text), start=1):
        if match := _ATTRIBUTE.match(line):
            name = match.group("name").strip("!").lower()
            value = (match.group("value") or "").strip()
            uses = (PathUse(value, reads=False, absolute=False),) if (
                name in _PATH_ATTRIBUTES and value) else ()
            found.append(Construct(number, "attribute", name, collapse(line), (), uses, "",
                                   "asciidoc"))
            continue
        block = _BLOCK.match(line)
        if block:
            found.append(_macro(number, line, block))
        for match in _INLINE.finditer(line):
            if block and match.start() < block.end():
                continue
            found.append(_macro(number, line, match))
    return found


def _macro(number: int, line: str, match: re.Match[str]) -> Construct:
    name = match.group("name").lower()
    target = match.group("target").strip()
    refused = ""
    options: tuple[tuple[str, str], ...] = ()
    if encoding := _ENCODING.search(match.group("attrs")):
        options = (("encoding", encoding.group("value").strip()),)
    uses: tuple[PathUse, ...] = ()
    if name in _READS and target:
        if "{" in target:
            refused = "its target holds an attribute ({name}): the builder resolves it"
        uses = (PathUse(target, reads=_READS[name], parsed=name == "include",
                        absolute=False),)
    elif target and " " not in target:
        uses = (PathUse(target, reads=False, absolute=False),)
    if options and options[0][1].lower() not in UTF8:
        refused = refused or f"it reads its file as {options[0][1]!r}, not UTF-8"
    return Construct(number, "macro", name, collapse(match.group(0)), options, uses, refused,
                     "asciidoc")
