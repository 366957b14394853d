"""Command line entry point and the single error boundary.

Every subcommand lives in its own module with two functions::

    def configure(parser: argparse.ArgumentParser) -> None: ...
    def command(args: argparse.Namespace, runner: Runner) -> int: ...

Only the module of the command being run is imported, so heavy dependencies (PyGithub, httpx)
load only in the commands that need them.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import io
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from cursor_agent_action import __version__
from cursor_agent_action.errors import (
    EXIT_INTERNAL,
    EXIT_SETUP,
    EXIT_USAGE,
    ActionError,
    UsageError,
)
from cursor_agent_action.logsafe import neutral
from cursor_agent_action.markdown import inline, prose
from cursor_agent_action.options import attach_dash_values, flag_of_input
from cursor_agent_action.runner_io import Runner

# name -> (module, one-line help). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("cursor_agent_action.agent.run", "run cursor-agent headless and report on it"),
    "check-key-masking": (
        "cursor_agent_action.agent.keycheck",
        "run the CLI once through the relay that holds the API key: did the CLI accept the "
        "relay's certificate, was the key exchange rewritten, did the model answer",
    ),
    "summarize": (
        "cursor_agent_action.summarize",
        "turn a saved stream-json transcript into a log, job summary and outputs",
    ),
    "install": (
        "cursor_agent_action.agent.install.installer",
        "install a pinned Cursor CLI version (cached)",
    ),
    "permissions": (
        "cursor_agent_action.agent.guards.permissions",
        "write or print the restricted-autonomy .cursor/cli.json",
    ),
    "demo": ("cursor_agent_action.demo", "run the whole pipeline on a bundled sample"),
    "lint": (
        "cursor_agent_action.lint",
        "warn for every with: key a workflow gives this action that it does not declare",
    ),
    "pin": (
        "cursor_agent_action.pin",
        "pin this action's uses: lines in workflow files to a ref's full commit SHA",
    ),
    "publish": (
        "cursor_agent_action.gh.publish.command",
        "commit the agent's changes to a branch and open or update a pull request",
    ),
    "comment": ("cursor_agent_action.gh.comment", "create or update a sticky PR/issue comment"),
    "ci-context": (
        "cursor_agent_action.gh.ci_context",
        "collect the logs of a failed workflow run into a prompt-ready file",
    ),
    "review": (
        "cursor_agent_action.gh.review.command",
        "post a pull request review from the agent's findings, comments on the lines",
    ),
    "pr-context": (
        "cursor_agent_action.gh.pr_context",
        "write a pull request's title, body, files and diff into a prompt-ready file",
    ),
    "gate": (
        "cursor_agent_action.gh.gate",
        "decide whether the event's author may start the agent (comment commands too)",
    ),
}

# Secrets masked in the log and redacted from summary and outputs before anything else runs.
SECRET_ENV_VARS = ("CURSOR_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "INPUT_API_KEY")


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting with its own message."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ParseError(f"{self.prog}: {message}")


class _ParseError(Exception):
    """Internal signal from the parser; never escapes main()."""


def _selected(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if arg in COMMANDS:
            return arg
        if not arg.startswith("-"):
            return None
    return None


def build_parser(selected: str | None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="cursor-agent-action",
        description="Run the Cursor CLI headless in GitHub Actions, safely.",
        epilog="Exit codes: 0 ok, 1 agent run failed, 2 invalid input, 3 setup error, "
        "4 git/GitHub error, 5 publish refused, 70 internal error, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        if name == selected:
            sub.add_argument(
                "--output-file",
                default=None,
                help="write step outputs here (default: $GITHUB_OUTPUT; none when unset)",
            )
            sub.add_argument(
                "--summary-file",
                default=None,
                help="append the job summary here (default: $GITHUB_STEP_SUMMARY; none when unset)",
            )
            importlib.import_module(module_name).configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every expected failure becomes one ``::error::`` line and an exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # A secret from the environment may hold bytes that are not UTF-8 (Python keeps them as
    # surrogates): its mask and any line holding it are written as those very bytes, where
    # the default would stop the helper before it starts.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="surrogateescape")
    # Masks go out first, before anything (even a usage error) can print a secret.
    runner = Runner(secrets=_secrets_from_env())
    try:
        selected = _selected(argv)
        parser = build_parser(selected)
        try:
            args = parser.parse_args(attach_dash_values(parser, argv))
        except _ParseError as exc:
            hint = " ".join(filter(None, ["cursor-agent-action", selected, "--help"]))
            hint = _flag_hint(str(exc), selected) + f"Run '{hint}'."
            runner.error(f"{exc}. {hint}", title="invalid input")
            _summarize_error(runner, UsageError(f"{exc}.", hint))
            runner.flush()
            return EXIT_USAGE
        if args.command is None:
            parser.print_help()
            return EXIT_USAGE
        if args.output_file is not None:
            runner.output_path = Path(args.output_file)
        if args.summary_file is not None:
            runner.summary_path = Path(args.summary_file)
        module = importlib.import_module(COMMANDS[args.command][0])
        code: int = module.command(args, runner)
        return code
    except ActionError as exc:
        message = exc.message if not exc.hint else f"{exc.message} Fix: {exc.hint}"
        runner.error(message, title=exc.title)
        _summarize_error(runner, exc)
        return exc.exit_code
    except KeyboardInterrupt:
        runner.error("interrupted", title="cancelled")
        return 130
    except BrokenPipeError:  # the reader went away (e.g. `| head`): nothing left to tell
        return EXIT_INTERNAL
    except OSError as exc:
        if exc.filename is None or Path(exc.filename) not in (
            runner.output_path,
            runner.summary_path,
        ):
            return _internal_error(runner, exc)
        runner.error(
            f"could not write {exc.filename} ({exc.strerror or exc}). Fix: make sure "
            "GITHUB_OUTPUT / GITHUB_STEP_SUMMARY (or --output-file / --summary-file) name a "
            "writable file.",
            title="setup failed",
        )
        return EXIT_SETUP
    except Exception as exc:
        return _internal_error(runner, exc)
    finally:
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            runner.flush()


def _flag_hint(message: str, command: str | None) -> str:
    """For 'unrecognized arguments': the flag meant (an action input's name, a near miss)."""
    if "unrecognized arguments:" not in message or command not in COMMANDS:
        return ""
    probe = argparse.ArgumentParser(add_help=False)
    importlib.import_module(COMMANDS[command][0]).configure(probe)
    known = [flag for action in probe._actions for flag in action.option_strings]
    tips = []
    for word in message.partition("unrecognized arguments:")[2].split():
        name = word.partition("=")[0]
        if not name.startswith("--") or name in known:
            continue
        if (instead := flag_of_input(name[2:])) is not None:
            tips.append(f"{name} is the action input {name[2:]}; here it is {instead}.")
        elif close := difflib.get_close_matches(name, known, n=1, cutoff=0.75):
            tips.append(f"{name}: did you mean {close[0]}?")
    return "".join(f"{tip} " for tip in tips[:3])


def _summarize_error(runner: Runner, exc: ActionError) -> None:
    """The error in the job summary too, with its fix: the page a reader opens first."""
    redact = runner.redact  # each text as text, before it is escaped (a message may quote one)
    fix = f"\n\n**Fix:** {prose(redact(exc.hint), 1000)}" if exc.hint else ""
    with contextlib.suppress(OSError):
        runner.append_summary(f"## ❌ cursor-agent-action: {inline(redact(exc.title), 80)}\n\n"
                              f"{prose(redact(exc.message), 2000)}{fix}\n\n")


def _internal_error(runner: Runner, exc: BaseException) -> int:
    runner.error(
        f"internal error: {type(exc).__name__}: {exc}. This is a bug in "
        "cursor-agent-action; please report it with the traceback printed on stderr.",
        title="internal error",
    )
    runner.flush()
    # Redacted too: only the runner's masks would otherwise hide a secret in a frame's text.
    import traceback  # noqa: PLC0415 (only on this path: it costs every start-up ~4 ms)

    # The runner parses stderr for workflow commands too: a frame may quote a foreign text.
    sys.stderr.write(neutral(runner.redact("".join(traceback.format_exception(exc)))))
    return EXIT_INTERNAL


MASK_ENV = "CURSOR_AGENT_ACTION_MASK_ENV"
"""Names (one per line or comma separated: the mask-env input) of more variables whose values
are secrets to redact everywhere."""


def _secrets_from_env() -> list[str]:
    listed = re.split(r"[\n,]", os.environ.get(MASK_ENV, ""))
    names = [*SECRET_ENV_VARS, *(name.strip() for name in listed)]
    return [value for name in dict.fromkeys(names) if name and (value := os.environ.get(name))]


def console_main() -> None:
    """Console-script entry point."""
    sys.exit(main())
