"""Every path the agent made (or changed) that does not come back to the working tree, named
with its real reason: too deep or too long to read, too large, a special file, a link out, a
protected file, inside a nested repository. The box's status lists them by kind
(:class:`~cursor_agent_action.agent.contain.box.contract.BoxStatus`); an uncontained run's
changes list them the same way (:class:`~cursor_agent_action.changeset.Changeset`). The summary
and the ``left-out`` output show what is made here; nothing is left out in silence."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cursor_agent_action.agent.contain.box.contract import BoxStatus
from cursor_agent_action.stream.record import LeftOut
from cursor_agent_action.worktree import MAX_PATH_BYTES

DEEP = 256
"""Path components from which a path past :data:`MAX_PATH_BYTES` is called too deep (below:
too long); the reason gives both figures either way."""
TOO_LARGE = "too large: over the 100 MiB a file in the patch may hold (apparent size)"
SPECIAL = "a special file (a fifo, socket or device): never opened"
NESTED = ("inside a nested git repository (a submodule's checkout), or below a path left out "
          "of the box")
PROTECTED = "a protected file (the CLI's, git's or the workflows' configuration)"


def too_long(path: str) -> str:
    """Why a path past :data:`MAX_PATH_BYTES` is left out: its depth and size."""
    size = len(path.encode("utf-8", "surrogateescape"))
    depth = path.count("/") + 1
    what = "too deep" if depth >= DEEP else "too long"
    return (f"{what}: {depth:,} levels, {size:,} bytes, past the {MAX_PATH_BYTES:,} bytes "
            "read; nothing at or below it came back")


def link_out(entry: str) -> LeftOut:
    """A refused link as the box names it (``path -> target (why)``)."""
    path, _, target = entry.partition(" -> ")
    return LeftOut(path, f"a link out of the repository: -> {target}" if target else
                   "a link out of the repository")


def gather(kinds: Iterable[tuple[Iterable[str], Callable[[str], str]]],
           shown: Callable[[str], str]) -> list[LeftOut]:
    """``(paths, reason of a path)`` pairs as :class:`LeftOut` entries, each path ``shown``
    as ``files-changed`` shows it."""
    return [LeftOut(shown(path), why(path)) for paths, why in kinds for path in paths]


def of_box(status: BoxStatus, shown: Callable[[str], str]) -> tuple[list[LeftOut], int]:
    """What the box's status says stayed in it: the entries (the first of each kind), and how
    many paths there were in all."""
    kinds: list[tuple[Iterable[str], Callable[[str], str]]] = [
        (status.too_long.paths, too_long),
        (status.too_large_files.paths, lambda _: TOO_LARGE),
        (status.special.paths, lambda _: SPECIAL),
        (status.skipped.paths, lambda _: NESTED),
        (status.protected.paths, lambda _: PROTECTED),
    ]
    found = gather(kinds, shown)
    found += [LeftOut(shown(entry.path), entry.reason)
              for entry in map(link_out, status.links_refused.paths)]
    count = sum(listed.count for listed in (
        status.too_long, status.too_large_files, status.special, status.skipped,
        status.protected, status.links_refused))
    return found, count
