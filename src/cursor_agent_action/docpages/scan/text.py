"""What every scan shares: lines, escapes removed, text collapsed for comparison."""

from __future__ import annotations

import re

MAX_BLOCK_LINES = 64
"""A construct's argument and option lines are read up to this many lines; a construct that
runs on past them is refused."""

_ESCAPE = re.compile(r"\\(\s|.)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def lines(text: str) -> list[str]:
    """The lines of ``text`` (any line break a reader takes: LF, CRLF, CR, and the form feed
    and vertical tab docutils treats as white space stay inside the line)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def unescape(line: str) -> str:
    """``line`` with backslash escapes removed as docutils removes them: an escaped blank goes,
    any other escaped character stays without its backslash."""
    return _ESCAPE.sub(lambda m: "" if m.group(1).isspace() else m.group(1), line)


def collapse(*parts: str) -> str:
    """The text of a construct as compared with the base version: blanks collapsed."""
    return " ".join(" ".join(parts).split())


def indent(line: str) -> int:
    """The width of ``line``'s leading blanks (tabs to 8 columns, as docutils reads them)."""
    return len(line.expandtabs()) - len(line.expandtabs().lstrip())


def url_scheme(target: str) -> str:
    """The scheme of a URL-like ``target`` (``https``, ``file``), lower case, or ""."""
    match = _SCHEME.match(target)
    return match.group(0)[:-1].lower() if match else ""

def yaml_block(text: str) -> tuple[object, str]:
    """A YAML block's value (a MyST option block, a page's front matter), or why it is
    refused (fail closed: what cannot be read is not passed). PyYAML is imported here, not
    with the module: the run set has it, and a page without such a block needs none."""
    try:
        import yaml  # noqa: PLC0415
    except ImportError:
        return None, "its YAML option block cannot be read here (PyYAML is not installed)"
    try:
        return yaml.safe_load(text), ""
    except yaml.YAMLError:
        return None, "its YAML option block is not valid YAML"
