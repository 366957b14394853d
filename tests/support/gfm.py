"""Markdown as GitHub renders it (cmark-gfm, with its extensions: tables, autolinks,
strikethrough), and what of an attacker's text became live there."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import cmarkgfm  # type: ignore[import-untyped]
from cmarkgfm import Options

OURS = frozenset({
    "p", "code", "pre", "table", "thead", "tbody", "tr", "th", "td", "details", "summary",
    "strong", "em", "blockquote", "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "br", "a", "del", "sup", "div", "input",
})
"""Elements our own Markdown makes; anything else in the HTML came from someone else's text."""
_MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
_ISSUE_REF = re.compile(r"(?<![\w&])#\d")


def render(markdown: str) -> str:
    """``markdown`` as cmark-gfm renders it, raw HTML kept (GitHub keeps most of it)."""
    rendered: str = cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=Options.CMARK_OPT_UNSAFE)
    return rendered


class _Walk(HTMLParser):
    def __init__(self, allowed_href: str) -> None:
        super().__init__(convert_charrefs=True)
        self.allowed_href = allowed_href
        self.stack: list[str] = []
        self.live: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in OURS:
            self.live.append(f"element <{tag}>")
        for name, value in attrs:
            if (name in ("href", "src") and not (value or "").startswith(self.allowed_href)
                    and any(char.isalnum() for char in value or "")):  # masked: nowhere
                self.live.append(f"{tag} {name}={value!r}")
        if tag not in ("br", "hr", "input"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass

    def handle_comment(self, data: str) -> None:
        self.live.append(f"comment <!--{data}-->")

    def handle_data(self, data: str) -> None:
        if "code" in self.stack or "pre" in self.stack:
            return
        if _MENTION.search(data):
            self.live.append(f"mention in {data!r}")
        if _ISSUE_REF.search(data):
            self.live.append(f"issue reference in {data!r}")


def live_parts(markdown: str, allowed_href: str = "https://github.com/") -> list[str]:
    """What in ``markdown``, rendered as GitHub does, is live: an element we never make, a
    link or image leaving ``allowed_href``, an HTML comment, an @mention or #reference outside
    code. Empty for Markdown that holds every foreign text inert."""
    walk = _Walk(allowed_href)
    walk.feed(render(markdown))
    walk.close()
    return walk.live


def hrefs(markdown: str) -> list[str]:
    """Every link's destination, as cmark-gfm decodes it (entities, escapes)."""
    return [html.unescape(found) for found in re.findall(r'<a href="([^"]*)"', render(markdown))]
