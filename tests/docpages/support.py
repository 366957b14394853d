"""A tree in memory for the page judge: files, links, ignore rules, and a base version."""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping

from cursor_agent_action.docpages.judge import Judgement, judge
from cursor_agent_action.docpages.view import TreeView


def view(new: Mapping[str, str | bytes], base: Mapping[str, str | bytes] | None = None, *,
         links: Mapping[str, str] | None = None, ignore: tuple[str, ...] = ()) -> TreeView:
    """The tree ``new`` (plus ``links``, path -> target) against ``base`` (default: the same
    tree without the changed pages, i.e. every page of ``new`` is new); ``ignore``: fnmatch
    patterns the ignore rules name."""
    base = {} if base is None else base

    def data(value: str | bytes) -> bytes:
        return value.encode() if isinstance(value, str) else value

    modes = dict.fromkeys(new, "100644") | dict.fromkeys(links or {}, "120000")
    changed = frozenset(path for path, value in new.items()
                        if path not in base or data(base[path]) != data(value))

    def ignored(paths: Collection[str]) -> set[str]:
        return {p for p in paths if any(fnmatch.fnmatch(p, pat) for pat in ignore)}

    return TreeView(modes, changed,
                    lambda path: data(new[path]) if path in new else None,
                    lambda path: data(base[path]) if path in base else None, ignored)


def judged(new: Mapping[str, str | bytes], base: Mapping[str, str | bytes] | None = None,
           **kwargs: object) -> Judgement:
    """The judgement of every changed path of ``new``."""
    tree = view(new, base, **kwargs)  # type: ignore[arg-type]
    return judge(tree, sorted(tree.changed))


def refused(new: Mapping[str, str | bytes], base: Mapping[str, str | bytes] | None = None,
            **kwargs: object) -> list[str]:
    return judged(new, base, **kwargs).refused
