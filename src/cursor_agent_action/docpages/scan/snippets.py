"""MkDocs snippets (pymdownx.snippets): every marker, wherever it stands. A line marker names
one file in quotes (any quote inside the name is part of it); a block marker opens a list of
file names, one a line, closed only by a line that is exactly a marker (``--8<-- `` with a
blank after it closes nothing for pymdownx, so it is read as a file name here too)."""

from __future__ import annotations

import re

from cursor_agent_action.docpages.construct import Construct, PathUse
from cursor_agent_action.docpages.scan.text import collapse, lines

MAX_BLOCK_NAMES = 256
"""A snippet block naming more files than this is refused."""
_INLINE = re.compile(r"-+8<-+[ \t]+(?P<q>[\"'])(?P<name>.*)(?P=q)")
_BLOCK = re.compile(r"[ \t>]*;*-+8<-+[ \t]*")
_CLOSE = re.compile(r"[ \t>]*;*-+8<-+")
_MARK = re.compile(r"-+8<-+")


def snippets(text: str) -> list[Construct]:
    """Every snippet marker of ``text`` with the files it names."""
    found: list[Construct] = []
    raw = lines(text)
    number = 0
    while number < len(raw):
        line = raw[number]
        number += 1
        if not _MARK.search(line):
            continue
        if match := _INLINE.search(line):
            found.append(_construct(number, [line], [match.group("name")]))
        elif _BLOCK.fullmatch(line):
            names: list[str] = []
            shown = [line]
            while number < len(raw) and not _CLOSE.fullmatch(raw[number]):
                if raw[number].strip():
                    names.append(raw[number].strip())
                shown.append(raw[number])
                number += 1
                if len(names) > MAX_BLOCK_NAMES:
                    break
            refused = (f"its block names over {MAX_BLOCK_NAMES} files"
                       if len(names) > MAX_BLOCK_NAMES else "")
            found.append(_construct(number - len(shown) + 1, shown, names, refused))
            number += 1  # the closing marker
        else:
            found.append(Construct(number, "snippet", "unreadable snippet marker",
                                   collapse(line), (), (), "", "markdown"))
    return found


def _construct(number: int, shown: list[str], names: list[str], refused: str = "") -> Construct:
    uses: list[PathUse] = []
    for name in names:
        # A line range or a section ("file.md:2:5", "file.md:name") names the file before it.
        uses.append(PathUse(name, reads=":" not in name, from_roots=True, absolute=False,
                            parsed=True))
        if ":" in name:
            uses.append(PathUse(name.split(":")[0], from_roots=True, absolute=False,
                                parsed=True))
    return Construct(number, "snippet", "snippet", collapse(*shown), (), tuple(uses), refused,
                     "markdown")
