"""Where a symbolic link in a tree really leads: followed through every link on the way, as a
checkout's file system would, within the tree alone (nothing on disk is read).

A link is checked by where it ends, not by its own text: ``docs/y -> ..`` plus
``docs/x -> y/docs/y/../../etc/passwd`` each look harmless alone, together ``docs/x`` leaves
the repository. :func:`verdict` names what is wrong with one link, or says nothing.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from cursor_agent_action.protected import protected_name
from cursor_agent_action.worktree import shown_path

MAX_HOPS = 40
"""Links followed for one path at most (Linux's MAXSYMLINKS); more is a loop."""
LEAVES = "leaves the repository"
LOOP = f"goes through more than {MAX_HOPS} links (a loop)"
UNKNOWN = "goes up from a directory the repository does not hold (on disk it may lead anywhere)"


@dataclass(frozen=True)
class TreeLinks:
    """A tree's links (path to target) and every path in it (for what a link reaches)."""

    links: dict[str, str]
    paths: tuple[str, ...]

    @functools.cached_property
    def directories(self) -> frozenset[str]:
        """Every directory of the tree (``a`` and ``a/b`` for ``a/b/c``)."""
        found: set[str] = set()
        for path in self.paths:
            parts = path.split("/")[:-1]
            found.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
        return frozenset(found)

    def resolve(self, path: str) -> tuple[str | None, str]:
        """Where the link at ``path`` ends, as a tree path (``""``: the root), or None and
        why: it leaves the repository (an absolute target, ``..`` past the root) or loops."""
        done = path.split("/")[:-1]  # the link's directory (no link in a tree's directories)
        pending = deque([self.links[path]])
        hops = 0
        while pending:
            part = pending.popleft()
            if "/" in part:  # a link's target: its components, in front of what is left
                if part.startswith("/"):
                    return None, LEAVES
                hops += 1
                if hops > MAX_HOPS:
                    return None, LOOP
                pending.extendleft(reversed(part.split("/")))
            elif part == "..":
                if not done:
                    return None, LEAVES
                if "/".join(done) not in self.directories:
                    # Not a directory of the tree: on disk it may be anything (an untracked
                    # link an earlier step left, to the runner's home), and ".." from there
                    # leads wherever that is.
                    return None, UNKNOWN
                done.pop()
            elif part not in ("", "."):
                done.append(part)
                if (target := self.links.get("/".join(done))) is not None:
                    done.pop()
                    pending.appendleft(target if "/" in target else f"{target}/.")
        return "/".join(done), ""

    def verdict(self, path: str, protected: Callable[[str], bool]) -> str:
        """What is wrong with the link at ``path`` (``""``: nothing). ``protected`` says
        whether a tree path is protected (publish's protected paths)."""
        target = self.links[path]
        if not target or "\\" in target or "\0" in target:
            return "has an empty or odd target"
        end, why = self.resolve(path)
        if end is None:
            return why
        if end == "" or path.startswith(end + "/"):
            return "points at a directory that holds it (a loop)"
        if name := protected_name(end):
            return f"leads into {name}"
        if protected(end):
            return "leads into a protected path"
        inside = end + "/"
        for other in self.paths:
            if other.startswith(inside) and (protected_name(other[len(inside):])
                                             or protected(other)):
                return f"leads to a directory holding {other}"
        return ""


def parse_ls_tree(raw: bytes, read: Callable[[str], bytes]) -> TreeLinks:
    """A :class:`TreeLinks` from ``git ls-tree -r -z`` output; ``read`` gives a blob's bytes."""
    links: dict[str, str] = {}
    paths: list[str] = []
    for record in raw.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        path = name.decode("utf-8", "surrogateescape")
        paths.append(path)
        mode, _kind, oid = meta.decode().split(" ")
        if mode == "120000":
            links[path] = read(oid).decode("utf-8", "surrogateescape")
    return TreeLinks(links, tuple(paths))


def judge(tree: TreeLinks, changed: list[str],
          protected: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """The new or changed links ``changed`` of ``tree``: ``(refused, kept)``, each one
    ``"path -> target"`` (refused ones with why). A link is refused when its target is absolute,
    resolves outside the repository, loops, or leads into ``.git`` or a protected path: the run
    step's rule (the box's finish) and publish's with ``allow-links`` (:func:`TreeLinks.
    verdict` decides for both)."""
    refused: list[str] = []
    kept: list[str] = []
    for path in sorted(changed):
        shown = f"{shown_path(path)} -> {shown_path(tree.links[path])}"
        if why := tree.verdict(path, protected):
            refused.append(f"{shown} ({why})")
        else:
            kept.append(shown)
    return refused, kept
