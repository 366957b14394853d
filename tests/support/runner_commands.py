"""The Actions runner's workflow-command parsing, ported from its source (actions/runner:
``src/Runner.Common/ActionCommand.cs`` TryParseV2 and TryParse, and
``src/Runner.Worker/ActionCommandManager.cs`` TryProcessCommand), to read our log as the runner
does: which lines act, and which are ignored while commands are stopped."""

from __future__ import annotations

import re
from collections.abc import Set

from cursor_agent_action.logsafe import COMMANDS

DOTNET_WHITE = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
"""What .NET's ``char.IsWhiteSpace`` (so ``string.TrimStart()``) trims."""
_LINES = re.compile(r"\r\n|\r|\n")  # the runner reads its steps' output a line at a time


def _name(info: str) -> str:
    return info.split(" ", 1)[0]


def parse(line: str, registered: Set[str]) -> tuple[str, str] | None:
    """``(command, data)`` for a line, or None: ``::name ...::data`` once leading white space
    is trimmed, else ``##[name ...]data`` anywhere; the name must be registered (any case)."""
    known = {name.casefold() for name in registered}
    message = line.lstrip(DOTNET_WHITE)
    if message.startswith("::"):
        end = message.find("::", 2)
        if end >= 0 and _name(message[2:end]).casefold() in known:
            return _name(message[2:end]), message[end + 2:]
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0 and _name(line[start + 3:end]).casefold() in known:
            return _name(line[start + 3:end]), line[end + 1:]
    return None


def processed(log: str) -> list[tuple[str, str]]:
    """Every command the runner would carry out from ``log``, in order (the stop and resume
    lines included): while commands are stopped, only the stop token resumes them."""
    registered = set(COMMANDS)
    stop_token = ""
    done: list[tuple[str, str]] = []
    for line in _LINES.split(log):
        command = parse(line, registered)
        if command is None:
            continue
        name, data = command
        if stop_token:
            if name.casefold() == stop_token.casefold():
                registered.discard(stop_token)
                stop_token = ""
                done.append(command)
            continue
        if name.casefold() == "stop-commands":
            stop_token = data
            registered.add(stop_token)
        done.append(command)
    return done
