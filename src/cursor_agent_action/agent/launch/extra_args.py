"""``extra-args``: more arguments for the CLI, one per line, never parsed by a shell, and never
one that widens the agent's rights or fights the action.

:data:`REFUSED` is the one table of refusals (a test per row): each entry is the option (all of
its spellings), the value that makes it refused (``None``: refused whatever the value), and why.
"""

from __future__ import annotations

from collections.abc import Sequence

from cursor_agent_action.errors import UsageError

REFUSED: tuple[tuple[tuple[str, ...], str | None, str], ...] = (
    (
        ("--force", "-f", "--yolo"),
        None,
        "it lifts the allow list; the permissions preset decides (edit and docs pass --force)",
    ),
    (
        ("--api-key", "-a"),
        None,
        "argv is readable by every process on the runner; the key goes in CURSOR_API_KEY",
    ),
    (("--output-format",), None, "the action reads stream-json and sets it itself"),
    (("--print", "-p"), None, "the action always runs in print mode and sets it itself"),
    (("--resume",), None, "use the resume input"),
    (("--model", "-m"), None, "use the model input"),
    (("--trust",), None, "the action passes it when the CLI supports it"),
    (("--workspace",), None, "use the working-directory input"),
    (("--sandbox",), "disabled", "it turns the CLI's own sandbox off"),
    (
        ("--approve-mcps",),
        None,
        "the action passes it when mcp-config is given, for those servers alone; otherwise it "
        "would start servers nobody configured for this run",
    ),
    (("--add-dir",), None, "it widens what the agent can reach beyond the workspace"),
    (("--worktree",), None, "it moves the agent's work out of the checked workspace"),
)
"""(spellings, refused value or None for any, reason)."""

_BY_NAME = {name: (value, reason) for names, value, reason in REFUSED for name in names}


def parse_extra_args(text: str) -> tuple[str, ...]:
    """One argument per non-blank line (stripped), checked against :data:`REFUSED`."""
    args = tuple(line.strip() for line in text.splitlines() if line.strip())
    for index, arg in enumerate(args):
        if any(ord(char) < 32 for char in arg):
            raise UsageError(f"extra-args: {arg!r} holds a control character.",
                             "Give one plain argument per line.")
        name, eq, inline = arg.partition("=")
        if name == "--":
            raise UsageError("extra-args: '--' would end the options before the prompt.",
                             "Remove it; the action puts the prompt after '--' itself.")
        if name not in _BY_NAME:
            continue
        value, reason = _BY_NAME[name]
        given = inline if eq else (args[index + 1] if index + 1 < len(args) else "")
        if value is None or given == value:
            shown = f"{name} {value}" if value else name
            raise UsageError(f"extra-args: {shown} is refused: {reason}.",
                             "Remove it from extra-args.")
    return args


def with_extra_args(argv: Sequence[str], extra: Sequence[str]) -> list[str]:
    """``argv`` (ending in ``--`` and the prompt) with ``extra`` before the ``--``."""
    if not extra:
        return list(argv)
    cut = len(argv) - 2
    return [*argv[:cut], *extra, *argv[cut:]]
