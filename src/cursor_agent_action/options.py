"""Command options that can also come from environment variables.

action.yml passes each input as ``CURSOR_AGENT_ACTION_<OPTION>`` (``--max-retries`` ->
``CURSOR_AGENT_ACTION_MAX_RETRIES``); ``install`` keeps its own ``CURSOR_CLI_*`` names via
``env=``. Rules shared by every command: a flag on the command line wins over the env var, and
an empty (or blank) env var counts as unset, because a sub-action passes every input, empty or
not. Each option's ``--help`` names its env var and its default.

Stdlib only: every command imports this module.
"""

from __future__ import annotations

import argparse
import decimal
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cursor_agent_action.errors import UsageError

ENV_PREFIX = "CURSOR_AGENT_ACTION_"
_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")


def env_name(flag: str) -> str:
    """``--branch-template`` -> ``CURSOR_AGENT_ACTION_BRANCH_TEMPLATE``."""
    return ENV_PREFIX + flag.lstrip("-").upper().replace("-", "_")


VOCABULARY_ENV = "CURSOR_AGENT_ACTION_VOCABULARY"
"""Set to ``inputs`` by action.yml's steps: messages then name the action's inputs (``cli-path``)
instead of the helper's flags (``--agent-bin``), the words the user actually wrote."""
INPUT_NAMES = {"--agent-bin": "cli-path", "--preset": "permissions",
               "--transcript": "transcript-file", "--key-masking": "api-key-masking"}
"""Flags whose action input has another name; every other input is the flag without ``--``."""


INPUT_ONLY = {"api-key": "the CURSOR_API_KEY environment variable"}
"""Inputs without a flag, and how a terminal gives them."""


def flag_of_input(name: str) -> str | None:
    """The flag (or variable) for the action input ``name`` when it is not ``--name``."""
    for flag, input_name in INPUT_NAMES.items():
        if input_name == name:
            return flag
    return INPUT_ONLY.get(name)


def from_action() -> bool:
    return os.environ.get(VOCABULARY_ENV, "") == "inputs"


def setting(flag: str) -> str:
    """How the user set ``flag``: the input's name under the action, else the flag."""
    return INPUT_NAMES.get(flag, flag.lstrip("-")) if from_action() else flag


def set_hint(flag: str, value: str) -> str:
    """``Set the timeout-minutes input to 30`` / ``Pass --timeout-minutes 30 (or set
    CURSOR_AGENT_ACTION_TIMEOUT_MINUTES)``: how to give ``flag`` a good ``value``."""
    if from_action():
        return f"Set the {setting(flag)} input to {value}."
    return f"Pass {flag} {value} (or set {env_name(flag)})."


def env_value(name: str) -> str:
    """The env var's value; "" when unset, empty or blank."""
    value = os.environ.get(name, "")
    return value if value.strip() else ""


def _help(text: str, env: str, shown: str) -> str:
    # argparse %-formats help strings: a literal % in a default must be doubled.
    return f"{text} (env {env}; default {shown})".replace("%", "%%")


def add_option(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    help: str,
    default: str = "",
    default_help: str = "",
    env: str = "",
    **kwargs: Any,
) -> None:
    """A string option, default from its env var, else ``default``.

    ``default_help`` describes a default worked out at run time (``default`` is then "").
    """
    name = env or env_name(flag)
    shown = default_help or (f"'{default}'" if default else "none")
    parser.add_argument(flag, default=env_value(name) or default,
                        help=_help(help, name, shown), **kwargs)


class TakesDashValue(argparse.Action):
    """Stores one value, which may start with ``-`` (``--extra-args --force``): see
    :func:`attach_dash_values`."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def attach_dash_values(parser: argparse.ArgumentParser, argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--opt VALUE`` written ``--opt=VALUE`` for every :class:`TakesDashValue`
    option whose value starts with ``-`` and is no option of the command: argparse would take
    ``--extra-args --force`` for two options and say "expected one argument"."""
    parsers = _parsers(parser)
    known = {flag for p in parsers for action in p._actions for flag in action.option_strings}
    dash = {flag for p in parsers for action in p._actions if isinstance(action, TakesDashValue)
            for flag in action.option_strings}
    out: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":  # what follows is positional: leave it as it is
            return out + list(argv[index:])
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if arg in dash and following.startswith("-") and following not in known:
            out.append(f"{arg}={following}")
            index += 2
            continue
        out.append(arg)
        index += 1
    return out


def lines(texts: Sequence[str]) -> list[str]:
    """The non-blank lines of ``texts``, stripped."""
    return [line.strip() for text in texts for line in text.splitlines() if line.strip()]


def items(text: str) -> list[str]:
    """The non-blank comma- or newline-separated items of ``text``, stripped (labels)."""
    return [item.strip() for item in re.split(r"[\n,]", text) if item.strip()]


class _Lines(argparse.Action):
    """Repeatable; each value may hold several lines. Flags replace the env var's list."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        current = getattr(namespace, self.dest)
        kept = [] if current is self.default else list(current)
        setattr(namespace, self.dest, kept + lines([str(values)]))


def add_list(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    help: str,
    metavar: str,
    env: str = "",
) -> None:
    """A repeatable option giving a list of lines; the env var holds one item per line."""
    name = env or env_name(flag)
    parser.add_argument(
        flag,
        action=_Lines,
        default=lines([env_value(name)]),
        metavar=metavar,
        help=_help(f"{help}; repeatable, newline-separated lists accepted",
                   name, "none"),
    )


def parse_bool(raw: str, flag: str, env: str) -> bool:
    """'true'/'false' (also 1/0, yes/no, any case) from env var ``env`` of option ``flag``."""
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if from_action():
        raise UsageError(f"{setting(flag)} must be 'true' or 'false', not {raw!r}.",
                         f'Set the {setting(flag)} input to "true" or "false" (quoted in YAML).')
    raise UsageError(f"{flag.lstrip('-')} must be true or false, not {raw!r} (from {env}).",
                     f"Set {env} to 'true' or 'false', or use {flag} / --no-{flag.lstrip('-')}.")


def add_flag(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    help: str,
    default: bool,
    env: str = "",
) -> None:
    """A boolean ``--x/--no-x``; the env var holds 'true' or 'false'."""
    name = env or env_name(flag)
    raw = env_value(name)
    parser.add_argument(
        flag,
        action=argparse.BooleanOptionalAction,
        default=parse_bool(raw, flag, name) if raw else default,
        help=_help(help, f"{name}: 'true'/'false'", str(default).lower()),
    )


def parse_number(
    raw: str,
    label: str,
    *,
    integer: bool = False,
    minimum: float = 0,
    maximum: float = math.inf,
    hint: str = "",
    above_minimum: bool = False,
) -> float:
    """``raw`` as a number within [minimum, maximum] (a whole number if ``integer``; more than
    ``minimum`` if ``above_minimum``)."""
    try:
        number: float = int(raw) if integer else float(raw)
    except ValueError:
        number = math.nan
    low_ok = number > minimum if above_minimum else number >= minimum
    if math.isfinite(number) and low_ok and number <= maximum:
        return number
    raise UsageError(f"{label} must be {_range(integer, minimum, maximum, above_minimum)}, "
                     f"not {raw!r}.", hint or f"Pass {_range(integer, minimum, maximum)}.")


def number_text(value: float) -> str:
    """A number as a person writes it, every digit there: ``1000000``, ``0.5``,
    ``1234567.5``, ``0.000000001`` (never ``1e+06`` or a rounded ``1.23457e+06``)."""
    if not math.isfinite(value):
        return str(value)
    if float(value).is_integer():
        return str(int(value))
    return format(decimal.Decimal(repr(float(value))), "f")


def _range(integer: bool, minimum: float, maximum: float, above: bool = False) -> str:
    kind = "a whole number" if integer else "a number"
    low, high = number_text(minimum), number_text(maximum) if math.isfinite(maximum) else ""
    if above:
        return f"{kind} above {low}" + (f" and at most {high}" if high else "")
    return f"{kind} from {low} to {high}" if high else f"{kind} of at least {low}"


def add_number(
    parser: argparse.ArgumentParser,
    flag: str,
    *,
    help: str,
    default: float,
    integer: bool = False,
    minimum: float = 0,
    maximum: float = math.inf,
    env: str = "",
    metavar: str = "",
    above_minimum: bool = False,
) -> None:
    """A number option (int if ``integer``, else float), checked against the range at parse
    time: argparse runs ``type`` on the flag's value, or on the string default when no flag
    was given, so a bad env var fails only when it is used. Out-of-range values raise
    :class:`UsageError`, which argparse lets through to ``cli.main``."""
    name = env or env_name(flag)
    example = str(int(default)) if integer else number_text(default)

    def convert(raw: str) -> float:
        wanted = _range(integer, minimum, maximum, above_minimum)
        return parse_number(raw, setting(flag), integer=integer, minimum=minimum,
                            maximum=maximum, above_minimum=above_minimum,
                            hint=set_hint(flag, f"{wanted}, e.g. {example} (the default)"))

    limit = _range(integer, minimum, maximum, above_minimum)
    parser.add_argument(flag, type=convert, default=env_value(name) or example,
                        metavar=metavar or None, help=_help(f"{help}; {limit}", name, example))


def read_input_file(path: str, label: str, what: str = "UTF-8 text") -> str:
    """A file an input names (``prompt-file``, ``output-schema-file``); an editor's byte-order
    mark is dropped. Raises :class:`UsageError` naming the input."""
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise UsageError(f"{label}: cannot read {path}: {reason}.",
                         "Check the path (relative to the job's working directory) and that "
                         f"the file is {what}.") from exc


def json_input(text: str, label: str, *, limit: int, hint: str) -> Any:
    """The JSON value of input ``label``, at most ``limit`` bytes. Raises :class:`UsageError`."""
    if len(text.encode("utf-8")) > limit:
        raise UsageError(f"{label} is over {limit // 1024} KiB.", hint)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{label} is not JSON: {exc}.", hint) from exc
