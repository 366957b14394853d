"""The one decision on changed documentation pages, for the run step and for publish."""

from __future__ import annotations

import codecs
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from cursor_agent_action.docpages.base import own
from cursor_agent_action.docpages.construct import Construct
from cursor_agent_action.docpages.inert import (
    ASCIIDOC_ATTRIBUTES,
    ASCIIDOC_MACROS,
    DIRECTIVES,
    ROLES,
    UTF8,
    Group,
    names,
)
from cursor_agent_action.docpages.kinds import is_documentation
from cursor_agent_action.docpages.paths import follow
from cursor_agent_action.docpages.scan import asciidoc, jinja, markdown, mdx, rest, snippets
from cursor_agent_action.docpages.view import TreeView

MAX_PAGE_BYTES = 4 << 20
"""A page over this size is refused: it is not read past it, so it cannot be judged."""
MAX_CONFIG_BYTES = 1 << 20
CONFIGS = ("mkdocs.yml", "mkdocs.yaml", "conf.py", "zensical.toml", "_config.yml")
"""Docs configurations read for a template plugin (Jinja tags in pages then count)."""
MAX_PARSED = 256
"""Files read through parsed includes, at most (more: refused)."""

_INERT: dict[str, dict[str, Group]] = {
    "directive": names(DIRECTIVES), "role": names(ROLES), "macro": names(ASCIIDOC_MACROS),
    "attribute": names(ASCIIDOC_ATTRIBUTES), "snippet": {"snippet": Group(("snippet",), "")},
    "link": {name: Group((name,), "") for name in ("link", "image", "html")},
}
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


@dataclass
class Judgement:
    """``refused``: ``"page:line: construct: reason"``, each a reason to refuse the change;
    ``code``: ``"page:line: reason"``, pages a docs toolchain compiles as code (MDX), which the
    ``docs`` preset never writes and publish warns about, as it does for executed files."""

    refused: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)


def markup_of(path: str) -> str:
    """How a page is read, by its extension: ``rest``, ``markdown`` or ``asciidoc``."""
    extension = posixpath.splitext(path)[1].lower()
    return {".md": "markdown", ".markdown": "markdown", ".adoc": "asciidoc",
            ".asciidoc": "asciidoc"}.get(extension, "rest")


def judge(view: TreeView, pages: Iterable[str]) -> Judgement:
    """Judge every documentation file among ``pages`` (changed paths of ``view``'s new tree),
    and every file they parse through an include: a changed one that an include of the base
    names, against its own base; any one a new include names, whole (its constructs are new
    to the page that now reads them)."""
    verdict = Judgement()
    reached: list[tuple[str, str]] = []  # (construct as shown, a path it reaches)
    templates = _templates(view)
    queue = [(page, markup_of(page), False) for page in sorted(pages)
             if is_documentation(page) and view.modes.get(page) in ("100644", "100755")]
    seen = set(queue)
    while queue:
        page, markup, whole = queue.pop(0)
        for target, new in _page(view, page, markup, whole=whole, templates=templates,
                                 verdict=verdict, reached=reached):
            item = (target, markup, new)
            if item not in seen and (new or target in view.changed):
                seen.add(item)
                if len(seen) > MAX_PARSED:
                    verdict.refused.append(f"{page}: includes over {MAX_PARSED} files")
                    return verdict
                queue.append(item)
    ignored = view.ignored(sorted({path for _, path in reached})) if reached else set()
    verdict.refused += [f"{shown}: {path} is ignored by git (an untracked file a build or CI "
                        "may leave there)" for shown, path in reached if path in ignored]
    return verdict


def _page(view: TreeView, page: str, markup: str, *, whole: bool, templates: bool,
          verdict: Judgement, reached: list[tuple[str, str]]) -> list[tuple[str, bool]]:
    """Judge one page read as ``markup`` (``whole``: nothing of it counts as its own; the
    paths it reaches, for the ignore rules, added to ``reached``); the files it parses, each
    with whether a new include names it."""
    data = view.read_new(page)
    text = _text(page, data, verdict)
    if text is None:
        return []

    def scan(source: str) -> list[Construct]:
        return constructs(source, markup, templates)

    if markup == "markdown" and (esm := mdx.compiled_as_mdx(text)):
        verdict.code.append(f"{page}:{esm[0]}: {esm[1]} (Docusaurus compiles it as MDX)")
    base = frozenset() if whole else own(view.read_base(page), scan)
    parsed: list[tuple[str, bool]] = []
    for construct in scan(text):
        why = _not_inert(construct, base)
        shown = f"{page}:{construct.line}: {construct.text[:160]}"
        if why:
            verdict.refused.append(f"{shown}: {why}")
        for use in construct.paths:
            found = follow(view, page, use)
            verdict.refused += [f"{shown}: {reason}" for reason in found.refused]
            parsed += [(path, whole or construct.key not in base) for path in found.parsed]
            reached += [(shown, path) for path in found.reached]
    return parsed


def _text(page: str, data: bytes | None, verdict: Judgement) -> str | None:
    """The page's text, or None (and why it is refused)."""
    if data is None:
        verdict.refused.append(f"{page}: could not be read as a regular file")
        return None
    if len(data) > MAX_PAGE_BYTES:
        verdict.refused.append(f"{page}: over {MAX_PAGE_BYTES >> 20} MiB: too large to judge")
        return None
    for bom, name in _BOMS:
        if data.startswith(bom):
            verdict.refused.append(f"{page}:1: starts with a {name} byte order mark: a reader "
                                   "may decode it so, and the check reads UTF-8 only")
            return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        verdict.refused.append(f"{page}:{line}: not valid UTF-8 (byte {exc.start}): what a "
                               "reader makes of it cannot be judged")
        return None
    if "\0" in text:
        line = text.count("\n", 0, text.index("\0")) + 1
        verdict.refused.append(f"{page}:{line}: holds a NUL byte (UTF-16 without a byte order "
                               "mark reads so): what a reader makes of it cannot be judged")
        return None
    return text


def constructs(text: str, markup: str, templates: bool) -> list[Construct]:
    """Every construct of ``text`` read as ``markup`` (with ``templates``, what the docs
    configuration turns into constructs too: Jinja tags, plain fences MyST runs as
    directives)."""
    if markup == "asciidoc":
        return asciidoc.constructs(text)
    if markup == "rest":
        return [*rest.directives(text), *rest.roles(text)]
    found = [replace(construct, line=construct.line + before)  # MyST's {eval-rst} content
             for before, block in markdown.restructured(text)
             for construct in [*rest.directives(block), *rest.roles(block)]]
    if markup == "markdown":
        found += [*markdown.fences(text, templates), *markdown.roles(text),
                  *markdown.links(text), *snippets.snippets(text),
                  *(jinja.tags(text) if templates else ())]
    return found


def _not_inert(construct: Construct, base: frozenset[tuple[str, str, str]]) -> str:
    """Why ``construct`` is refused ("" when it passes): never when its text is the base's."""
    if construct.refused:
        return construct.refused
    group = _INERT.get(construct.kind, {}).get(construct.name)
    why = ""
    if group is None:
        why = (f"{construct.kind} {construct.name!r} is not on the inert list (a docs "
               "toolchain could act on it)")
    else:
        for option, value in construct.options:
            if option == "encoding" and value.lower() not in UTF8:
                why = f"it reads its file as {value!r}, not UTF-8"
            elif option not in group.options and construct.kind == "directive":
                why = f"option :{option}: of {construct.name} is not on the inert list"
    if why and construct.key in base:
        return ""
    return why


def _templates(view: TreeView) -> bool:
    """Whether a docs configuration of the new tree names a template plugin (or makes MyST
    read plain fences as directives)."""
    for path, mode in view.modes.items():
        if posixpath.basename(path) in CONFIGS and mode in ("100644", "100755"):
            data = view.read_new(path) or b""
            if jinja.TEMPLATE_PLUGINS.search(data[:MAX_CONFIG_BYTES].decode("utf-8", "replace")):
                return True
    return False
