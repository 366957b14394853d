"""Documentation pages, judged fail-closed: one decision for the run step and for publish.

A documentation file passes only when every construct a docs toolchain could act on in it is
known to be inert (:mod:`.inert`) or is already present, with the same text, in the base
version of the page (the repository's own, :mod:`.base`); and every path any construct names
stays inside the repository, on a regular file that is tracked or added by the change, not
under ``.git``, not ignored, not a link and not on the executed list (:mod:`.paths`), judged
every time. Constructs are found by scans that over-approximate, one per markup
(:mod:`.scan`). A page that is not UTF-8, or starts with a UTF-16 or UTF-32 byte order mark,
is refused; so is one over :data:`.judge.MAX_PAGE_BYTES`. What counts as documentation and
which files are usually executed is :mod:`.kinds`.
"""
