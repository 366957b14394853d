"""Path globs as the permission tokens and publish's lists write them: one matcher for the run
step's write check, the permission policy and publish.

Syntax (minimatch's, which the CLI's own matcher follows): ``*`` and ``?`` stay within one path
segment and match dot files too; ``**`` alone in a segment matches any number of directories
(also none), elsewhere it is ``*``; ``{a,b}`` is either alternative (braces nest; an unclosed
or comma-less brace is literal); ``[`` and ``\\`` are literal. A leading ``/`` anchors nothing
more (every pattern is relative to the repository's top).

Two ways to read a list, on purpose different:

- an **allow-list** (:func:`names`: ``allowed-paths``, ``Write()`` allow tokens) names *files*:
  ``**/*.md`` is every Markdown file and nothing below a directory called ``notes.md``; a
  directory's contents are named by ``dir/`` (short for ``dir/**``) or ``dir/**``;
- a **deny-list** (:func:`covers`: ``protected-paths``, deny tokens) covers what it names *and
  everything below it*: ``secrets`` protects ``secrets/key`` too.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

MAX_ALTERNATIVES = 256
"""Brace alternatives one pattern may expand to; more is an error, not a slow match."""


class GlobError(ValueError):
    """A pattern this matcher will not take (too many brace alternatives)."""


def _brace_end(glob: str, start: int) -> tuple[int, list[str]] | None:
    """For the ``{`` at ``start``: the index of its ``}`` and its top-level alternatives, or
    None when it is literal (unclosed, or no comma at its own level)."""
    depth = 0
    parts: list[str] = []
    begin = start + 1
    for index in range(start, len(glob)):
        char = glob[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                parts.append(glob[begin:index])
                return (index, parts) if len(parts) > 1 else None
        elif char == "," and depth == 1:
            parts.append(glob[begin:index])
            begin = index + 1
    return None


def expand_braces(glob: str) -> list[str]:
    """Every alternative of ``glob`` with its braces expanded, at most
    :data:`MAX_ALTERNATIVES`. Raises :class:`GlobError` past that."""
    for start, char in enumerate(glob):
        if char != "{":
            continue
        found = _brace_end(glob, start)
        if found is None:
            continue
        end, parts = found
        head, tail = glob[:start], glob[end + 1:]
        out: list[str] = []
        for tail_part in expand_braces(tail):
            for part in parts:
                for inner in expand_braces(part):
                    out.append(head + inner + tail_part)
                    if len(out) > MAX_ALTERNATIVES:
                        raise GlobError(f"the pattern {glob!r} expands to more than "
                                        f"{MAX_ALTERNATIVES} alternatives")
        return out
    return [glob]


def _segment(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            while index < len(segment) and segment[index] == "*":  # ** inside a segment is *
                index += 1
            out.append("[^/]*")
            continue
        out.append("[^/]" if char == "?" else re.escape(char))
        index += 1
    return "".join(out)


def _one(glob: str) -> str:
    """The regex of one brace-free glob."""
    segments = glob.split("/")
    out = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out += ".*" if last else "(?:[^/]*/)*"  # any directories, also none
        else:
            out += _segment(segment) + ("" if last else "/")
    return out


@functools.lru_cache(maxsize=1024)  # the same few globs, checked against every changed file
def glob_to_regex(glob: str) -> re.Pattern[str]:
    """The regex of a glob (see the module docstring), for a whole path (``fullmatch``)."""
    alternatives = sorted(set(expand_braces(glob)))
    return re.compile("|".join(f"(?:{_one(alt)})" for alt in alternatives), re.DOTALL)


def file_pattern(pattern: str) -> str:
    """A list entry as a glob: stripped, relative, and ``dir/`` read as ``dir/**``."""
    pattern = pattern.strip().lstrip("/")
    return pattern + "**" if pattern.endswith("/") else pattern


@functools.lru_cache(maxsize=256)  # a run checks every changed file against the same lists
def _list_regex(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for a whole list (None for an empty one): a path matches it exactly when it
    matches one entry's regex. They are joined as alternatives, as :func:`glob_to_regex` joins
    a glob's braces (they hold no groups), so a path is matched once, not once per entry."""
    regexes = [glob_to_regex(file_pattern(p)).pattern for p in patterns if p.strip()]
    return re.compile("|".join(f"(?:{r})" for r in regexes), re.DOTALL) if regexes else None


def names(patterns: Iterable[str], path: str) -> bool:
    """Whether an allow-list names the file ``path`` (a pattern names files, not what is below
    a directory of that name: see the module docstring)."""
    regex = _list_regex(tuple(patterns))
    return regex is not None and regex.fullmatch(path) is not None


def covers(patterns: Iterable[str], path: str) -> bool:
    """Whether a deny-list covers ``path``: a pattern names it or a directory above it."""
    regex = _list_regex(tuple(patterns))
    if regex is None:
        return False
    parts = path.split("/")
    return any(regex.fullmatch("/".join(parts[:end])) for end in range(1, len(parts) + 1))


def names_directory_only(pattern: str, path: str) -> bool:
    """Whether ``pattern`` names a directory above ``path`` but not ``path`` itself (to tell
    a user who wrote ``docs`` that it names a file: ``docs/`` names what is below)."""
    return not names([pattern], path) and covers([pattern], path)


def _segments_overlap(a: str, b: str) -> bool:
    """Whether two one-segment globs (``*``, ``?`` and literals) match a common name."""

    @functools.cache
    def meet(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*":  # a's star matches nothing more, or eats b's next
            return meet(i + 1, j) or (j < len(b) and meet(i, j + 1))
        if j < len(b) and b[j] == "*":
            return meet(i, j + 1) or (i < len(a) and meet(i + 1, j))
        if i == len(a) or j == len(b):
            return False
        return (a[i] == b[j] or "?" in (a[i], b[j])) and meet(i + 1, j + 1)

    return meet(0, 0)


def _path_segments(glob: str) -> tuple[str, ...]:
    """A brace-free file pattern's segments; a trailing ``**`` names at least one more
    segment (``docs/**`` names files below ``docs``, not ``docs`` itself)."""
    segments = tuple(file_pattern(glob).split("/"))
    return (*segments, "*") if segments[-1] == "**" else segments


def _paths_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    @functools.cache
    def meet(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "**":  # any directories: none, or one more of b's
            return meet(i + 1, j) or (j < len(b) and meet(i, j + 1))
        if j < len(b) and b[j] == "**":
            return meet(i, j + 1) or (i < len(a) and meet(i + 1, j))
        if i == len(a) or j == len(b):
            return False
        return _segments_overlap(a[i], b[j]) and meet(i + 1, j + 1)

    return meet(0, 0)


def overlap(a: str, b: str) -> bool:
    """Whether the allow-list patterns ``a`` and ``b`` name a common file (braces expanded;
    raises :class:`GlobError` past :data:`MAX_ALTERNATIVES`)."""
    return any(_paths_overlap(_path_segments(x), _path_segments(y))
               for x in expand_braces(a.strip()) for y in expand_braces(b.strip()))


def literal_prefix(pattern: str) -> str:
    """The leading directories of ``pattern`` without a wildcard (``docs/api`` of
    ``docs/api/*.md``), every one of its segments when it has none."""
    kept = []
    for segment in file_pattern(pattern).split("/"):
        if re.search(r"[*?{]", segment):
            break
        kept.append(segment)
    return "/".join(kept)


def never_matches(pattern: str) -> str:
    """Why ``pattern`` can name no path of a repository (a path is written relative to its
    top, with ``/``, without ``.`` or ``..`` or empty segments), or "" when it can."""
    text = pattern.strip()
    if text.startswith("~"):
        return "`~` is not expanded: patterns are relative to the repository's top"
    if "\\" in text:
        return "`\\` is a literal character here: paths are written with `/`"
    segments = file_pattern(text).split("/")
    if any(segment in (".", "..") for segment in segments):
        return "paths have no `.` or `..` segments: patterns are relative to the repository's top"
    if "" in segments:
        return "an empty segment (`//`) never matches"
    try:
        expand_braces(text)
    except GlobError as exc:
        return str(exc)
    return ""
