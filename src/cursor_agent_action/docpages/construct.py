"""What the scans find and the judge reads: one construct of a page, and a path it names."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PathUse:
    """A path a construct names, and how a build uses it.

    ``reads``: the build reads the file into its output (include, literalinclude, image,
    download, snippet...), so it must name a file of the repository; otherwise (a link, an
    unknown construct's argument) a path that names nothing is harmless. ``parsed``: the file's
    text is read as markup of the including page (its constructs are judged in that markup
    too). ``from_roots``: a relative path is read from the docs root (any directory above the
    page) rather than from the page's directory. ``absolute``: an absolute path is read from
    the docs root, as Sphinx reads it (otherwise, as docutils alone, Asciidoctor and snippets
    read it, from the file system's root: refused)."""

    path: str
    reads: bool = True
    parsed: bool = False
    from_roots: bool = False
    absolute: bool = True


@dataclass(frozen=True)
class Construct:
    """One construct a docs toolchain could act on.

    ``kind`` names the markup's kind of construct (``directive``, ``role``, ``fence``...),
    ``name`` what the toolchain looks up (the directive's name), ``options`` its option names,
    ``text`` the construct as written (whitespace collapsed), ``content`` the block it holds
    (a directive's body, collapsed: an extension may run it), both compared with the base,
    ``refused`` a reason it can never pass (a page's own rule), ``paths`` what it reads."""

    line: int
    kind: str
    name: str
    text: str
    options: tuple[tuple[str, str], ...] = ()
    paths: tuple[PathUse, ...] = ()
    refused: str = ""
    markup: str = field(default="", compare=False)
    content: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """What a base version must hold, the same, for this construct to be its own: its
        text and its content (a changed example body is new code)."""
        return self.kind, self.text, self.content
