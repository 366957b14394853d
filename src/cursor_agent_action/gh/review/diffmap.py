"""A pull request's diff as line maps per side, read from the API's per-file patches.

GitHub accepts a review comment only on a line of the pull request's diff: on the ``RIGHT``
side a line of the new file that is added or shown as context in a hunk, on the ``LEFT`` side
a line of the old file that is deleted or shown as context. A multi-line comment (and so a
suggestion) must lie within one hunk. The patches come from ``GET /pulls/{n}/files``
(https://docs.github.com/en/rest/pulls/pulls#list-pull-requests-files): a binary file, or a
file whose diff is too large, has no ``patch``; then none of its lines can hold a comment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
RIGHT = "RIGHT"
LEFT = "LEFT"


@dataclass
class FileDiff:
    """One changed file: which line of each side lies in which hunk (0-based index)."""

    path: str
    status: str = "modified"
    previous_path: str = ""
    readable: bool = True  # False: no patch (binary, too large) or over our reading cap
    why_unreadable: str = ""
    right: dict[int, int] = field(default_factory=dict)
    left: dict[int, int] = field(default_factory=dict)

    def side(self, side: str) -> dict[int, int]:
        return self.left if side == LEFT else self.right

    def hunk_of(self, side: str, line: int) -> int | None:
        return self.side(side).get(line)

    def one_hunk(self, side: str, start: int, end: int) -> bool:
        """Lines ``start``..``end`` of ``side`` all lie in one hunk of the diff."""
        lines = self.side(side)
        first = lines.get(start)
        return first is not None and all(lines.get(n) == first for n in range(start, end + 1))


def parse_patch(path: str, patch: str, *, status: str = "modified",
                previous_path: str = "") -> FileDiff:
    """The line maps of one file's patch (hunks only, as the files endpoint gives them; a
    ``diff --git`` header before the first hunk is skipped)."""
    diff = FileDiff(path, status, previous_path)
    hunk = -1
    old = new = 0
    for raw in patch.split("\n"):
        match = _HUNK.match(raw)
        if match:
            hunk += 1
            old, new = int(match.group(1)), int(match.group(3))
            continue
        if hunk < 0 or not raw:
            continue  # a header line, or the empty string after the final newline
        kind = raw[0]
        if kind == "+":
            diff.right[new] = hunk
            new += 1
        elif kind == "-":
            diff.left[old] = hunk
            old += 1
        elif kind == " ":
            diff.right[new] = hunk
            diff.left[old] = hunk
            old += 1
            new += 1
        # "\ No newline at end of file" and anything else: no line of either side
    return diff


def unreadable(path: str, why: str, *, status: str = "modified",
               previous_path: str = "") -> FileDiff:
    return FileDiff(path, status, previous_path, readable=False, why_unreadable=why)


@dataclass
class DiffMap:
    """Every changed file of the pull request, by its path (a renamed file also by its old
    path, which findings may name)."""

    files: dict[str, FileDiff] = field(default_factory=dict)
    truncated: str = ""  # why not every file was read ("" when all were)

    def add(self, diff: FileDiff) -> None:
        self.files[diff.path] = diff

    def find(self, path: str) -> FileDiff | None:
        path = normalize_path(path)
        found = self.files.get(path)
        if found is None:
            found = next((f for f in self.files.values() if f.previous_path == path), None)
        return found


def normalize_path(path: str) -> str:
    """A finding's path as GitHub names files: relative, ``/``-separated, no leading ``./``."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.lstrip("/")
