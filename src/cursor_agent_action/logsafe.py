"""Text we did not write, made inert for the Actions runner's two workflow-command parsers.

The runner reads every line a step prints, stdout and stderr alike, and tries two parsers on it
(``ActionCommandManager.TryProcessCommand`` in actions/runner, ``src/Runner.Worker``, with the
parsers in ``src/Runner.Common/ActionCommand.cs``):

1. ``TryParseV2``: the line, its leading white space trimmed (.NET ``TrimStart``: any Unicode
   white space), starts with ``::``; the command's name runs to the first space or the next
   ``::``.
2. Only when the first did not give a registered command, ``TryParse``: ``##[`` *anywhere* in
   the line; the name runs from there to the first space or the next ``]``.

A name counts when it is registered (compared without case): :data:`COMMANDS`, plus, while
commands are stopped, the stop token. Either form of ``##[stop-commands]x`` in a line we print
would make the runner ignore every command after it (our ``::error::`` and ``::add-mask::``
lines too); ``##[warning file=...]`` would make an annotation of the agent's choosing.

:func:`neutral` is the one function that keeps foreign text (names, paths, the model, ids,
subtypes, reasons, DNS names, URLs, the agent's own words) out of both: ``Runner`` puts every
such text through it (``runner_io``), and nothing else in the package prints to the log.
"""

from __future__ import annotations

import re

COMMANDS = frozenset({
    "stop-commands", "set-env", "set-output", "save-state", "add-mask", "add-path",
    "add-matcher", "remove-matcher", "debug", "warning", "error", "notice", "group",
    "endgroup", "echo", "internal-set-repo-path",
})
"""Every command the runner registers (``internal-set-repo-path`` while a plugin runs)."""

LEGACY_PREFIX = "##["
_LEGACY = re.compile(r"(?<=##)\[")
# A "::" that starts a line once its leading white space is trimmed: at the text's start or
# after a line break (the runner splits on LF, CR and CRLF).
_LINE_START = re.compile(r"(^|[\r\n])([^\S\r\n]*)::")


def neutral(text: str) -> str:
    """``text`` with no ``##[`` anywhere and no line that starts (after white space) with
    ``::``: a backslash goes before the ``[`` and before the first ``:``. Nothing else
    changes; the reader still sees what was written."""
    if "##[" in text:
        text = _LEGACY.sub(r"\\[", text)
    if "::" in text:
        text = _LINE_START.sub(r"\1\2\\::", text)
    return text
