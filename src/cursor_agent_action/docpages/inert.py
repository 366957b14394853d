"""The constructs known to be inert: what a docs toolchain does with them reads no file but the
ones they name (judged by :mod:`.paths`) and runs no code. Everything else is refused when a
change brings it (unknown names, translated ones included: ``.. inclure::`` is not
``include``). docs/permissions.md lists these tables, generated from here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Group:
    """Names of one kind that are inert, the option names they may carry, and why."""

    names: tuple[str, ...]
    why: str
    options: tuple[str, ...] = ()


_COMMON = ("class", "name")
_CODE = ("linenos", "lineno-start", "emphasize-lines", "caption", "dedent", "force",
         "number-lines", "language", "lineno-match")
_OBJECT = ("noindex", "no-index", "noindexentry", "no-index-entry", "nocontentsentry",
           "no-contents-entry", "no-typesetting", "module", "platform", "synopsis", "deprecated",
           "type", "value", "annotation", "async", "abstractmethod", "final", "canonical",
           "classmethod", "staticmethod", "single-line-parameter-list",
           "single-line-type-parameter-list")
_PY_OBJECTS = ("function", "class", "method", "attribute", "data", "exception", "module",
               "currentmodule", "decorator", "decoratormethod", "staticmethod", "classmethod",
               "property", "type")
_STD_OBJECTS = ("option", "envvar", "program", "describe", "object", "cmdoption", "confval")
_OTHER_DOMAINS = ("c:function", "c:macro", "c:struct", "c:union", "c:member", "c:var",
                  "c:type", "c:enum", "c:enumerator", "cpp:class", "cpp:struct",
                  "cpp:function", "cpp:member", "cpp:var", "cpp:type", "cpp:enum",
                  "cpp:enumerator", "cpp:namespace", "js:function", "js:class", "js:method",
                  "js:data", "js:attribute", "js:module", "rst:directive", "rst:role",
                  "rst:directive:option")

DIRECTIVES: tuple[Group, ...] = (
    Group(("note", "warning", "tip", "important", "caution", "danger", "error", "hint",
           "attention", "admonition", "seealso", "todo", "versionadded", "versionchanged",
           "deprecated", "versionremoved", "topic", "sidebar", "rubric", "epigraph",
           "highlights", "pull-quote", "compound", "container", "centered", "hlist",
           "glossary", "line-block"),
          "admonitions and blocks of prose: their body is markup, judged like the page",
          (*_COMMON, "collapsible", "subtitle", "columns", "sorted", "heading-level")),
    Group(("code-block", "code", "sourcecode", "highlight", "parsed-literal"),
          "code shown, never run", (*_COMMON, *_CODE, "linenothreshold")),
    Group(("toctree", "contents", "sectnum", "section-numbering", "index", "only",
           "tabularcolumns", "table", "list-table", "math", "meta", "title", "header",
           "footer", "replace", "unicode", "date", "productionlist", "eval-rst"),
          "structure, tables, formulas (rendered by MathJax in the reader's browser by "
          "default) and text substitutions; `eval-rst`'s body is scanned as reStructuredText",
          (*_COMMON, "maxdepth", "hidden", "caption", "glob", "titlesonly", "numbered",
           "reversed", "includehidden", "local", "depth", "backlinks", "widths", "width",
           "header-rows", "stub-columns", "align", "label", "nowrap", "prefix", "suffix",
           "start", "trim", "ltrim", "rtrim")),
    Group(tuple(f"{p}{o}" for p in ("", "py:") for o in _PY_OBJECTS)
          + tuple(f"{p}{o}" for p in ("", "std:") for o in _STD_OBJECTS) + _OTHER_DOMAINS,
          "descriptions of code objects (written, never imported: `autoclass` and friends "
          "import code, and are not here)", (*_COMMON, *_OBJECT)),
    Group(("image", "figure"), "an image: copied into the output, so its path is judged",
          (*_COMMON, "alt", "height", "width", "scale", "align", "target", "loading",
           "figclass", "figwidth", "figname", "caption")),
    Group(("include",), "another file read into the page: its path is judged, and a changed "
                        "file it parses is judged as part of the page",
          ("literal", "code", "start-line", "end-line", "start-after", "end-before", "tab-width",
           "number-lines", *_COMMON, "encoding", "heading-offset", "relative-docs")),
    Group(("literalinclude",), "a file shown as code: its path (and `:diff:`'s) is judged",
          (*_COMMON, *_CODE, "tab-width", "pyobject", "lines", "start-after", "end-before",
           "start-at", "end-at", "prepend", "append", "diff", "encoding")),
    Group(("csv-table",), "a table: `:file:` is judged like an include; `:url:` is refused",
          (*_COMMON, "widths", "width", "header-rows", "stub-columns", "header", "delim",
           "quote", "escape", "keepspace", "align", "file", "encoding")),
)
"""reST and MyST directives (MyST fences name the same ones)."""

PATH_OPTIONS = ("file", "diff")
"""Options whose value is a path a directive reads."""
UTF8 = ("utf-8", "utf8", "utf_8")
"""The only values an ``encoding`` option may take (another one hides what the file says)."""
PARSED_INCLUDE = ("include",)
"""Directives that read another file as markup of the page (unless ``literal`` or ``code``)."""

_ROLE_OBJECTS = ("func", "class", "meth", "attr", "mod", "obj", "data", "const", "exc",
                 "type", "member", "macro", "struct", "union", "enum", "enumerator", "var",
                 "expr", "texpr", "dir", "role")
ROLES: tuple[Group, ...] = (
    Group(("ref", "doc", "term", "numref", "any", "keyword", "option", "envvar", "token",
           "abbr", "command", "dfn", "file", "guilabel", "kbd", "mailheader", "makevar",
           "manpage", "menuselection", "mimetype", "newsfeed", "program", "regexp", "samp",
           "pep", "rfc", "code", "math", "eq", "emphasis", "strong", "literal", "sub", "sup",
           "subscript", "superscript", "title-reference", "title", "t", "abbreviation", "ab",
           "ac", "acronym", "pep-reference", "rfc-reference", "std:ref", "std:doc", "std:term",
           "std:option", "std:envvar", "std:token", "std:numref", "std:keyword",
           "confval", "std:confval"),
          "inline text, references and formulas"),
    Group(tuple(f"{p}{o}" for p in ("", "py:", "c:", "cpp:", "js:", "rst:")
                for o in _ROLE_OBJECTS),
          "cross-references to code objects (looked up by name, never imported)"),
    Group(("download",), "a file offered for download: copied into the output, so its path is "
                         "judged"),
)
"""reST roles and MyST roles (``{name}`...```)."""

ASCIIDOC_MACROS: tuple[Group, ...] = (
    Group(("link", "xref", "footnote", "footnoteref", "kbd", "btn", "menu", "pass", "anchor",
           "indexterm", "indexterm2", "http", "https", "ftp", "irc", "mailto", "toc", "stem",
           "latexmath", "asciimath", "ifdef", "ifndef", "endif", "ifeval", "video", "audio"),
          "links, inline text, formulas and conditionals on attributes (no file is read)"),
    Group(("image", "icon"), "an image (embedded in the output under `data-uri`): its path "
                             "is judged"),
    Group(("include",), "another file read into the page: its path is judged, and a changed "
                        "file it reads is judged as part of the page"),
)
"""AsciiDoc block and inline macros."""

ASCIIDOC_ATTRIBUTES: tuple[Group, ...] = (
    Group(("toc", "toclevels", "toc-title", "toc-placement", "toc-class", "sectnums",
           "sectnumlevels", "sectanchors", "sectlinks", "icons", "idprefix", "idseparator",
           "experimental", "hardbreaks", "hide-uri-scheme", "nofooter", "noheader", "notitle",
           "showtitle", "doctype", "lang", "description", "keywords", "author", "authors",
           "email", "revnumber", "revdate", "revremark", "version-label", "last-update-label",
           "table-caption", "figure-caption", "example-caption", "listing-caption",
           "appendix-caption", "caution-caption", "important-caption", "note-caption",
           "tip-caption", "warning-caption", "source-language", "source-highlighter",
           "source-indent", "tabsize", "outlinelevels", "partnums", "chapter-signifier",
           "part-signifier", "xrefstyle", "reproducible", "linkattrs", "compat-mode", "stem",
           "nofooter", "leveloffset", "sectids", "table-stripes", "table-frame", "table-grid"),
          "document settings that change how the page looks, never which file is read "
          "(`stylesheet`, `data-uri`, `docinfo`, `imagesdir` and user attributes are not here)"),
)
"""AsciiDoc attribute entries (``:name: value`` and ``:name!:``)."""


def names(groups: tuple[Group, ...]) -> dict[str, Group]:
    """Every inert name of ``groups``, with its group."""
    return {name: group for group in groups for name in group.names}
