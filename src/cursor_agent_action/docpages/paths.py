"""Where a path a construct names leads: it must stay inside the repository, on a regular file
the new tree tracks (or the change adds), never under ``.git``, never through a link, never on
a file the ignore rules name (an untracked file a build or CI may leave there: a token, a
``.env``) and never on a file builds execute that the change brings or that the page parses.
Judged from the page's directory and, where the builder reads from a docs root, from every
directory above the page. Read from the tree, never from disk."""

from __future__ import annotations

import dataclasses
import functools
import posixpath
import re
import urllib.parse
from dataclasses import dataclass

from cursor_agent_action.docpages.construct import PathUse
from cursor_agent_action.docpages.kinds import usually_executed
from cursor_agent_action.docpages.scan.text import url_scheme
from cursor_agent_action.docpages.view import TreeView
from cursor_agent_action.protected import fold

SYSTEM_ROOTS = frozenset((
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt",
    "opt", "proc", "root", "run", "sbin", "snap", "srv", "sys", "tmp", "usr", "var", "nix",
    "private", "users", "volumes", "system", "library", "applications", "cores", "github",
    "__w", "actions-runner", "runner", "workspace", "builds", "data",
))
"""Top directories of runners' file systems: an absolute path starting with one is read from
there by a plain docutils build (Sphinx reads ``/x`` from its source directory)."""
_STANDARD_INCLUDE = re.compile(r"<[\w.-]+>")


@dataclass(frozen=True)
class Found:
    """Where one use of a path leads: the files it reaches (to check against the ignore rules),
    the files it parses as markup, and the reasons it is refused."""

    reached: tuple[str, ...]
    parsed: tuple[str, ...]
    refused: tuple[str, ...]


def follow(view: TreeView, page: str, use: PathUse) -> Found:
    """Judge one path ``use`` of the page ``page`` in ``view`` (the ignore rules apart): its
    form, then each way it can be read from each start, then what it reached."""
    target = use.path.strip()
    if not use.reads and url_scheme(target) == "path":  # MyST: a download, the file copied
        target = target.split(":", 1)[1]  # into the build's output (a read, not a link)
        use = dataclasses.replace(use, path=target, reads=True)
    why = _refused_form(target, use)
    if why is not None:
        return Found((), (), (why,) if why else ())
    targets = [target] if use.reads else _link_targets(target)
    reached: list[str] = []
    parsed: list[str] = []
    refused: list[str] = []
    good = False
    for one in targets:
        for start in _starts(page, one, use):
            path, why = _walk(view, start, one.lstrip("/") if one.startswith("/") else one)
            if not why:
                reached.append(path)
                why = _reached_refusal(view, path, use)
                if why is None:
                    good = True
                    if use.parsed:
                        parsed.append(path)
            if why:
                refused.append(why)
    if use.reads and not good and not refused:
        refused.append(f"{target!r} names no file the repository tracks or the change adds")
    return Found(tuple(reached), tuple(parsed), tuple(dict.fromkeys(refused)))


def _link_targets(target: str) -> list[str]:
    """The paths a link's target can name: its fragment and query name no file, and %2e%2e is
    ".." (none for a link to a fragment of its own page)."""
    target = target.replace("\\", "/").split("#", 1)[0].split("?", 1)[0]
    return list(dict.fromkeys([target, urllib.parse.unquote(target)])) if target else []


def _reached_refusal(view: TreeView, path: str, use: PathUse) -> str | None:
    """Why the path a walk reached is refused to ``use``; None when it is a file ``use`` may
    take, "" when it is no file but harmless (a link to a directory, a path nothing tracks)."""
    mode = view.modes.get(path)
    if mode in ("100644", "100755"):
        if _executed(path) and (use.parsed or (use.reads and path in view.changed)):
            return f"{path} is a file builds execute (the executed list)"
        return None
    if mode == "160000":
        return f"{path} is a submodule"
    if mode is None and (path in view.directories or not path) and use.reads:
        return f"{path or '.'} is a directory"
    return ""


@functools.lru_cache(maxsize=4096)
def _executed(path: str) -> bool:
    return bool(usually_executed([path]))


def _refused_form(target: str, use: PathUse) -> str | None:
    """Why ``target``'s form alone is refused ("" when it is harmless as it is), or None when
    it is to be followed. A path a construct reads must be a plain relative one (or, where the
    builder reads from a docs root, absolute); a link's target that is no path is harmless."""
    if not target:
        return ""
    if any(ch in target for ch in "\0\n\r"):
        return "its path holds a control character"
    if target.startswith("<"):
        if not use.reads or (_STANDARD_INCLUDE.fullmatch(target) and ".." not in target):
            return ""  # no path; docutils' own standard include files (<isonum.txt>)
        return "a docutils standard include path that leaves its directory"
    scheme = url_scheme(target)
    if scheme:
        if use.reads:
            return f"its path is a URL ({scheme}:): the builder would fetch it"
        return "a file: URL" if scheme == "file" else ""
    if use.reads and target.startswith("~"):
        return "its path starts at a home directory"
    if use.reads and "\\" in target:
        return "its path holds a backslash (a separator on Windows runners)"
    if target.startswith("/"):
        if not use.absolute:
            return "its path is absolute: the builder reads it from the file system's root"
        first = target.lstrip("/").split("/", 1)[0]
        if fold(first) in SYSTEM_ROOTS:
            return (f"its absolute path starts at {first}/ (docutils alone reads it from the "
                    "file system's root)")
    return None


def _starts(page: str, target: str, use: PathUse) -> list[str]:
    """The directories ``target`` is read from: the page's, or every one above it."""
    here = posixpath.dirname(page)
    above = [here]
    while above[-1]:
        above.append(posixpath.dirname(above[-1]))
    return above if use.from_roots or target.startswith("/") else [here]


def _walk(view: TreeView, start: str, target: str) -> tuple[str, str]:
    """``target`` followed from the directory ``start`` component by component, as the file
    system would (a ``..`` after a link leaves from where the link leads): the path reached, or
    why it is refused."""
    parts = start.split("/") if start else []
    for part in target.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return "", f"{target!r} leaves the repository"
            parts.pop()
            continue
        if fold(part) == ".git":
            return "", f"{target!r} leads into .git"
        parts.append(part)
        if view.modes.get("/".join(parts)) == "120000":
            return "", f"{target!r} goes through the symbolic link {'/'.join(parts)}"
    return "/".join(parts), ""
