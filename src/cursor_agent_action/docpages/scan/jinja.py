"""Jinja tags (``{{ }}``, ``{% %}``, ``{# #}``): read where the repository's docs config names a
macro or template plugin (mkdocs-macros, MyST substitutions...), which render the page as a
template: a tag there can run code."""

from __future__ import annotations

import re

from cursor_agent_action.docpages.construct import Construct
from cursor_agent_action.docpages.scan.text import collapse

_TAG = re.compile(r"\{\{.{0,4000}?\}\}|\{%.{0,4000}?%\}|\{#.{0,4000}?#\}|\{[{%#][^\n]*",
                  re.DOTALL)
TEMPLATE_PLUGINS = re.compile(
    r"macros|jinja|substitution|markdown[-_]exec|fence_as_directive", re.IGNORECASE)
"""What, named in a docs configuration, renders pages as templates (or, MyST's
``fence_as_directive``, makes plain fences directives)."""


def tags(text: str) -> list[Construct]:
    """Every Jinja tag of ``text`` (an unclosed one up to the end of its line)."""
    return [Construct(text.count("\n", 0, match.start()) + 1, "jinja", "jinja tag",
                      collapse(match.group(0)), markup="markdown")
            for match in _TAG.finditer(text)]
