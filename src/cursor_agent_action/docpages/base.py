"""The base version of a page: what it already holds is the repository's own. A construct
whose text (blanks collapsed) is already in the base version of the same page passes whatever
its name: real docs are full of their own extensions' directives (``.. autoclass::``,
``.. click:example::``), and an agent that fixes a typo on such a page must not be refused.
Its content counts too: a changed ``click:example`` body is new code the build runs. Its paths
are judged all the same (:mod:`.paths`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cursor_agent_action.docpages.construct import Construct


def own(base: bytes | None, scan: Callable[[str], Iterable[Construct]]) -> frozenset[
        tuple[str, str, str]]:
    """The keys of the constructs in the base version ``base`` (None: the page is new), as
    ``scan`` finds them; a base that is not UTF-8 holds nothing of its own."""
    if base is None:
        return frozenset()
    try:
        text = base.decode("utf-8-sig")
    except UnicodeDecodeError:
        return frozenset()
    return frozenset(construct.key for construct in scan(text))
