"""Markdown as MyST and MkDocs read it: directive fences (backticks, tildes or colons, at any
nesting: inside ``>`` quotes, list items and definitions) with their option lines and YAML
option blocks, roles (``{name}`body```), images, links and HTML ``src``/``href`` (MyST copies
a linked or shown file of the repository into the output), and fences that ask to be executed
(``exec="on"``, markdown-exec)."""

from __future__ import annotations

import html
import re

from cursor_agent_action.docpages.construct import Construct, PathUse
from cursor_agent_action.docpages.inert import PATH_OPTIONS, ROLES, names
from cursor_agent_action.docpages.scan.text import MAX_BLOCK_LINES, collapse, lines, yaml_block

_CONTAINERS = r"^(?:[ \t]*(?:>|[-*+:](?=[ \t])|\d{1,9}[.)](?=[ \t])))*[ \t]*"
"""Quotes, list items and definitions around a fence, at any nesting."""
_FENCE = re.compile(_CONTAINERS + r"(?P<fence>`{3,}|~{3,}|:{3,})[ \t]*\{(?P<name>[^{}\s]*)\}"
                    r"(?P<rest>.*)$")
_PLAIN_FENCE = re.compile(_CONTAINERS + r"(?P<fence>`{3,}|~{3,})[ \t]*(?P<name>[^\s{`~][^\s`]*)"
                          r"(?P<rest>.*)$")
FENCE_AS_DIRECTIVE = "fence_as_directive"
"""Named in a MyST configuration, it makes plain fences (```` ```mermaid ````) directives."""
_EXEC = re.compile(r"^[ \t>*+\-\d.]*(?:`{3,}|~{3,})(?P<info>[^\n]*\bexec\b[^\n]*)$")
_OPTION = re.compile(r"^:(?P<name>[^:\s][^:]*?):(?:\s+(?P<value>.*)|$)")
_PREFIX = re.compile(r"^[ \t>]*")
_ROLE = re.compile(r"\{(?P<name>[^{}\s`]+)\}(?P<ticks>`+)(?P<body>[^`]*)(?P=ticks)")
_TARGET = re.compile(r"<(?P<path>[^<>]*)>\s*$")
_XREF = names(ROLES)
_INLINE = re.compile(
    r"(?P<bang>!?)\[(?:[^\]\\\n]|\\.)*\]\(\s*(?:<(?P<angle>[^>\n]*)>|(?P<plain>[^)\s]+))")
_DEFINITION = re.compile(r"^[ \t>]*\[[^\]\n]+\]:[ \t]*(?:<(?P<angle>[^>\n]*)>|(?P<plain>\S+))",
                         re.MULTILINE)
_HTML = re.compile(r"""\b(?:src|href|data|poster|srcset)\s*=\s*"""
                   r"""(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s>"']+))""",
                   re.IGNORECASE)
_READS = {"include": True, "literalinclude": True, "image": False, "figure": False}
_PUNCTUATION_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def fences(text: str, plain: bool = False) -> list[Construct]:
    """Every MyST directive fence of ``text`` (with ``plain``, every fence: the repository's
    MyST configuration makes some plain fences directives), and every fence that asks to be
    executed."""
    raw = lines(text)
    found: list[Construct] = []
    for number, line in enumerate(raw):
        if (match := _FENCE.match(line)) or (plain and (match := _PLAIN_FENCE.match(line))):
            found.append(_fence(raw, number, match))
        elif match := _EXEC.match(line):
            found.append(Construct(number + 1, "fence", "exec", collapse(line), (), (),
                                   "", "markdown"))
    return found


def _fence(raw: list[str], number: int, match: re.Match[str]) -> Construct:
    name = match.group("name").strip().lower()
    argument = match.group("rest").strip()
    body = [_PREFIX.sub("", line).rstrip() for line in raw[number + 1:number + 2 + MAX_BLOCK_LINES]]
    shown = [raw[number]]
    options: list[tuple[str, str]] = []
    refused = ""
    at = 0
    if body and body[0] == "---":  # a YAML option block
        end = next((i for i in range(1, len(body)) if body[i] == "---"), None)
        if end is None:
            refused = f"its YAML option block runs over {MAX_BLOCK_LINES} lines"
        else:
            shown += raw[number + 1:number + 2 + end]
            block, refused = yaml_block("\n".join(body[1:end]))
            if isinstance(block, dict):
                options += [(str(key).lower(), str(value)) for key, value in block.items()]
            elif block is not None and not refused:
                refused = "its YAML option block is not a mapping of option names"
            at = end + 1
    while at < len(body) and (option := _OPTION.match(body[at])):
        options.append((option.group("name").strip().lower(), (option.group("value") or "")))
        shown.append(raw[number + 1 + at])
        at += 1
    if at >= MAX_BLOCK_LINES and not refused:
        refused = f"its options run over {MAX_BLOCK_LINES} lines"
    values = tuple((key, value.strip()) for key, value in options)
    uses: list[PathUse] = []
    literal = any(key in ("literal", "code") for key, _ in values)
    if name in _READS and argument:
        uses.append(PathUse(argument, reads=_READS[name],
                            parsed=name == "include" and not literal))
    uses += [PathUse(value) for key, value in values if key in PATH_OPTIONS and value]
    if name not in _READS and name not in ("csv-table", "raw"):
        uses += [PathUse(value, reads=False) for value in (argument, *(v for _, v in values))
                 if value and " " not in value]
    return Construct(number + 1, "directive", name, collapse(*shown), values, tuple(uses),
                     refused, "markdown", _content(raw, number, match.group("fence")))


def _body(raw: list[str], number: int, fence: str) -> list[str]:
    """The lines of the fence opened on line ``number``: up to a line (container prefix
    removed) that is a fence of the same character at least as long, or the end."""
    content: list[str] = []
    for line in raw[number + 1:]:
        bare = _PREFIX.sub("", line).rstrip()
        if bare and set(bare) == {fence[0]} and len(bare) >= len(fence):
            break
        content.append(line)
    return content


def _content(raw: list[str], number: int, fence: str) -> str:
    return collapse(*_body(raw, number, fence))


def restructured(text: str) -> list[tuple[int, str]]:
    """The reStructuredText MyST reads in ``text``: each ``{eval-rst}`` fence's content
    (container prefix removed), with the number of the line before it."""
    raw = lines(text)
    found: list[tuple[int, str]] = []
    for number, line in enumerate(raw):
        if (match := _FENCE.match(line)) and match.group("name").strip().lower() == "eval-rst":
            width = len(line) - len(line.lstrip(" \t>"))
            body = [item[width:] if _PREFIX.match(item[:width]) else item.lstrip(" \t>")
                    for item in _body(raw, number, match.group("fence"))]
            found.append((number + 1, "\n".join(body)))
    return found


_AUTOLINK = re.compile(r"<(?P<bare>[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>")
"""A CommonMark autolink (``<path:../x>``: MyST reads its scheme as any link's)."""
_RUN = re.compile(r"(?<!\\)`+")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s inline code spans are, as CommonMark pairs backtick runs of one length
    within a paragraph; none in a paragraph that holds a ``<`` (an HTML tag or an autolink
    outranks a code span: a backtick in one opens none)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for end in [m.start() for m in _PARAGRAPH.finditer(text)] + [len(text)]:
        paragraph = text[start:end]
        if "<" not in paragraph:
            runs = list(_RUN.finditer(paragraph))
            at = 0
            while at < len(runs):
                closing = next((i for i in range(at + 1, len(runs))
                                if len(runs[i].group(0)) == len(runs[at].group(0))), None)
                if closing is None:
                    at += 1
                    continue
                spans.append((start + runs[at].end(), start + runs[closing].start()))
                at = closing + 1
        start = end
    return spans


def roles(text: str) -> list[Construct]:
    """Every MyST role of ``text`` (but inside an inline code span: `` `docs/{name}` ``)."""
    found: list[Construct] = []
    spans = _code_spans(text)
    for match in _ROLE.finditer(text):
        if any(begin <= match.start() < end for begin, end in spans):
            continue
        name = match.group("name").lower()
        target = _TARGET.search(match.group("body"))
        path = " ".join((target.group("path") if target else match.group("body")).split())
        uses = (() if not path or (name in _XREF and name != "download")
                else (PathUse(path, reads=name == "download"),))
        found.append(Construct(text.count("\n", 0, match.start()) + 1, "role", name,
                               collapse(match.group(0)), (), uses, "", "markdown"))
    return found


def links(text: str) -> list[Construct]:
    """Images, links, link definitions and HTML attributes naming a file: inert, their paths
    judged (MyST copies an existing file a link or an image names)."""
    found: list[Construct] = []
    for pattern, kind in ((_INLINE, "link"), (_DEFINITION, "link"), (_AUTOLINK, "link"),
                          (_HTML, "html")):
        for match in pattern.finditer(text):
            groups = match.groupdict()
            target = next((groups[key] for key in ("angle", "plain", "dq", "sq", "bare")
                           if groups.get(key) is not None), "")
            target = target.split()[0] if target.split() else ""
            name = "image" if groups.get("bang") else kind
            # As a reader decodes it: character references (&#46;&#46;/) and escapes (\.\./).
            decoded = html.unescape(_PUNCTUATION_ESCAPE.sub(r"\1", target))
            uses = tuple(PathUse(path, reads=False) for path in dict.fromkeys((target, decoded))
                         if path)
            found.append(Construct(text.count("\n", 0, match.start()) + 1, "link", name,
                                   collapse(match.group(0)), (), uses, "", "markdown"))
    return found

