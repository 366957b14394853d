"""The repository as the judge sees it: the tree the change makes, read from git's objects (not
from disk), and the base version of each page. The run step and publish each build one."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field


@dataclass
class TreeView:
    """``modes``: every path of the new tree with its git mode (``100644``, ``120000``...);
    ``changed``: the paths the change adds or modifies; ``read_new``/``read_base``: a file's
    bytes in the new tree or the base (None: not a regular file there); ``ignored``: which of
    some paths the repository's ignore rules name."""

    modes: Mapping[str, str]
    changed: frozenset[str]
    read_new: Callable[[str], bytes | None]
    read_base: Callable[[str], bytes | None]
    ignored: Callable[[Collection[str]], set[str]]
    directories: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        found: set[str] = set()
        for path in self.modes:
            parts = path.split("/")[:-1]
            found.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
        self.directories = frozenset(found)


def parse_tree(raw: bytes) -> dict[str, tuple[str, str]]:
    """``path -> (mode, oid)`` from ``git ls-tree -r -z --full-tree`` output."""
    found: dict[str, tuple[str, str]] = {}
    for record in raw.split(b"\0"):
        if record:
            meta, _, name = record.partition(b"\t")
            mode, _kind, oid = meta.decode().split(" ")
            found[name.decode("utf-8", "surrogateescape")] = (mode, oid)
    return found


def from_trees(list_tree: Callable[[str], bytes], read_blob: Callable[[str], bytes], *,
               new_tree: str, base_tree: str, changed: Collection[str],
               ignored: Callable[[Collection[str]], set[str]]) -> TreeView:
    """A view of ``new_tree`` against ``base_tree`` (any tree-ish), both listed with
    ``list_tree`` (``git ls-tree -r -z --full-tree``) and read with ``read_blob``
    (``git cat-file blob``): the hardened git of the caller, nothing from disk."""
    new = parse_tree(list_tree(new_tree))
    base = parse_tree(list_tree(base_tree))

    def reader(entries: dict[str, tuple[str, str]]) -> Callable[[str], bytes | None]:
        def read(path: str) -> bytes | None:
            mode, oid = entries.get(path, ("", ""))
            return read_blob(oid) if mode in ("100644", "100755") else None
        return read

    return TreeView({path: mode for path, (mode, _) in new.items()}, frozenset(changed),
                    reader(new), reader(base), ignored)
