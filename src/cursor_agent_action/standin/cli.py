"""The stand-in's command line: the real CLI's print-mode flags, help text and errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_VALUE_OPTIONS = {
    "--output-format": "output-format",
    "-m": "model",
    "--model": "model",
    "--workspace": "workspace",
    "--mode": "mode",
    "--sandbox": "sandbox",
    "--api-key": "api-key",
}
_FLAG_OPTIONS = {
    "-p": "print",
    "--print": "print",
    "-f": "force",
    "--force": "force",
    "--yolo": "force",
    "--trust": "trust",
    "--stream-partial-output": "stream-partial-output",
    "--approve-mcps": "approve-mcps",
    "-h": "help",
    "--help": "help",
}
_OUTPUT_FORMATS = ("text", "json", "stream-json")

HELP = """\
Usage: cursor-agent [options] [command] [prompt...]

Start the Cursor Agent

Arguments:
  prompt                       Initial prompt for the agent

Options:
  -v, --version                Output the version number
  --api-key <key>              API key for authentication (can also use CURSOR_API_KEY env var)
  -p, --print                  Print responses to console (for scripts or non-interactive use).
  --output-format <format>     Output format (only works with --print): text | json |
                               stream-json (default: "text")
  --stream-partial-output      Stream partial output as individual text deltas
  -m, --model <model>          Model to use (e.g., gpt-5, sonnet-4)
  --mode <mode>                Start in the given execution mode: plan | ask
  --resume [chatId]            Resume a chat session.
  -f, --force                  Force allow commands unless explicitly denied
  --yolo                       Alias for --force
  --sandbox <mode>             Explicitly enable or disable sandbox mode: enabled | disabled
  --approve-mcps               Automatically approve all MCP servers
{trust}  --workspace <path>           Workspace directory to use (defaults to cwd)
  -h, --help                   Display help for command
"""
TRUST_HELP = (
    "  --trust                      Trust the current workspace without prompting "
    "(headless mode only)\n"
)


class CliExit(Exception):
    """Ends the stand-in with a message on stderr, like the real CLI's argument errors."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def parse_cli(args: Sequence[str], *, accepts_trust: bool) -> tuple[dict[str, Any], list[str]]:
    """Parse cursor-agent's command line: (options, positional prompt words)."""
    options: dict[str, Any] = {"output-format": "text"}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional.extend(args[i:])
            break
        name, has_inline, inline = arg.partition("=")
        if arg.startswith("-") and arg != "-":
            if name == "--trust" and not accepts_trust:
                raise CliExit(f"error: unknown option '{arg}'")
            if name in _FLAG_OPTIONS and not has_inline:
                options[_FLAG_OPTIONS[name]] = True
            elif name in _VALUE_OPTIONS:
                if has_inline:
                    value = inline
                elif i < len(args):
                    value = args[i]
                    i += 1
                else:
                    raise CliExit(f"error: option '{name} <value>' argument missing")
                options[_VALUE_OPTIONS[name]] = value
            elif name == "--resume":
                # An optional value, as in the real CLI: taken unless it looks like an option.
                if has_inline:
                    options["resume"] = inline
                elif i < len(args) and not args[i].startswith("-"):
                    options["resume"] = args[i]
                    i += 1
                else:
                    options["resume"] = True
            else:
                raise CliExit(f"error: unknown option '{arg}'")
        else:
            positional.append(arg)
    if options["output-format"] not in _OUTPUT_FORMATS:
        raise CliExit(
            f"error: option '--output-format <format>' argument '{options['output-format']}' "
            f"is invalid. Allowed choices are {', '.join(_OUTPUT_FORMATS)}."
        )
    return options, positional


