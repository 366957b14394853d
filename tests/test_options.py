"""options.py: env-backed command options (flag wins, empty env var counts as unset)."""

from __future__ import annotations

import argparse

import pytest

from cursor_agent_action.agent.contain.sandbox import AgentExit, EndedBy
from cursor_agent_action.agent.judge.failures import explain_exit
from cursor_agent_action.errors import UsageError
from cursor_agent_action.options import (
    TakesDashValue,
    add_flag,
    add_list,
    add_number,
    add_option,
    attach_dash_values,
    env_name,
    items,
    number_text,
    parse_bool,
    parse_number,
)

PREFIX = "CURSOR_AGENT_ACTION_"


def parser_with_all() -> argparse.ArgumentParser:
    """Built after the test has set its env vars: defaults are read when options are added."""
    parser = argparse.ArgumentParser(prog="t")
    add_option(parser, "--branch-template", default="bot/{job}", help="branch name")
    add_option(parser, "--base", help="target branch", default_help="the event's branch")
    add_option(parser, "--version", dest="cli_version", env="CURSOR_CLI_VERSION",
               default="1.0", help="CLI version")
    add_list(parser, "--allow", metavar="TOKEN", help="allow token")
    add_flag(parser, "--draft", default=False, help="draft")
    add_flag(parser, "--fail-on-error", default=True, help="fail")
    add_number(parser, "--max-retries", default=2, integer=True, maximum=10, help="retries")
    add_number(parser, "--timeout-minutes", default=30.0, help="timeout")
    return parser


def test_env_name_is_the_prefixed_upper_snake_case_flag() -> None:
    assert env_name("--branch-template") == "CURSOR_AGENT_ACTION_BRANCH_TEMPLATE"
    assert env_name("--max-retries") == "CURSOR_AGENT_ACTION_MAX_RETRIES"


def test_defaults_apply_without_flags_or_env() -> None:
    args = parser_with_all().parse_args([])
    assert (args.branch_template, args.base, args.cli_version) == ("bot/{job}", "", "1.0")
    assert args.allow == []
    assert (args.draft, args.fail_on_error) == (False, True)
    assert args.max_retries == 2
    assert isinstance(args.max_retries, int)
    assert args.timeout_minutes == 30.0


def test_env_vars_set_every_kind_of_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX + "BRANCH_TEMPLATE", "x/{run_id}")
    monkeypatch.setenv("CURSOR_CLI_VERSION", "latest")
    monkeypatch.setenv(PREFIX + "ALLOW", "# comment line kept for the consumer\n Shell(make) \n\n"
                       "Read(**)\n")
    monkeypatch.setenv(PREFIX + "DRAFT", "TRUE")
    monkeypatch.setenv(PREFIX + "FAIL_ON_ERROR", "no")
    monkeypatch.setenv(PREFIX + "MAX_RETRIES", "7")
    monkeypatch.setenv(PREFIX + "TIMEOUT_MINUTES", "2.5")
    args = parser_with_all().parse_args([])
    assert (args.branch_template, args.cli_version) == ("x/{run_id}", "latest")
    assert args.allow == ["# comment line kept for the consumer", "Shell(make)", "Read(**)"]
    assert (args.draft, args.fail_on_error) == (True, False)
    assert (args.max_retries, args.timeout_minutes) == (7, 2.5)


def test_flags_win_over_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX + "BRANCH_TEMPLATE", "from-env")
    monkeypatch.setenv(PREFIX + "ALLOW", "Shell(env1)\nShell(env2)")
    monkeypatch.setenv(PREFIX + "DRAFT", "true")
    monkeypatch.setenv(PREFIX + "MAX_RETRIES", "7")
    args = parser_with_all().parse_args([
        "--branch-template", "from-flag", "--allow", "Shell(a)", "--allow", "Shell(b)\nShell(c)",
        "--no-draft", "--max-retries", "0",
    ])
    assert args.branch_template == "from-flag"
    assert args.allow == ["Shell(a)", "Shell(b)", "Shell(c)"]  # replaced, not appended to
    assert args.draft is False
    assert args.max_retries == 0


@pytest.mark.parametrize("blank", ["", "  ", "\n"])
def test_an_empty_env_var_counts_as_unset(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    """A sub-action passes every input, empty or not."""
    for flag in ("BRANCH_TEMPLATE", "ALLOW", "DRAFT", "FAIL_ON_ERROR", "MAX_RETRIES"):
        monkeypatch.setenv(PREFIX + flag, blank)
    args = parser_with_all().parse_args([])
    assert args.branch_template == "bot/{job}"
    assert args.allow == []
    assert (args.draft, args.fail_on_error, args.max_retries) == (False, True, 2)


def test_help_names_each_env_var_and_default() -> None:
    helps = {action.dest: action.help for action in parser_with_all()._actions}
    assert helps["branch_template"] == (
        "branch name (env CURSOR_AGENT_ACTION_BRANCH_TEMPLATE; default 'bot/{job}')")
    assert helps["base"] == (
        "target branch (env CURSOR_AGENT_ACTION_BASE; default the event's branch)")
    assert "(env CURSOR_CLI_VERSION; default '1.0')" in (helps["cli_version"] or "")
    assert "(env CURSOR_AGENT_ACTION_ALLOW; default none)" in (helps["allow"] or "")
    assert "(env CURSOR_AGENT_ACTION_DRAFT: 'true'/'false'; default false)" in (helps["draft"]
                                                                                or "")
    assert helps["max_retries"] == (
        "retries; a whole number from 0 to 10 (env CURSOR_AGENT_ACTION_MAX_RETRIES; default 2)")
    assert helps["timeout_minutes"] == (
        "timeout; a number of at least 0 (env CURSOR_AGENT_ACTION_TIMEOUT_MINUTES; default 30)")


def test_a_percent_sign_in_a_default_does_not_break_help() -> None:
    parser = argparse.ArgumentParser(prog="t")
    add_option(parser, "--title", default="100% done", help="title")
    assert "default '100% done'" in parser.format_help()


@pytest.mark.parametrize("raw", ["maybe", "yes please", "on", "2"])
def test_a_bad_boolean_env_var_names_the_option_and_the_env_var(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(PREFIX + "DRAFT", raw)
    with pytest.raises(UsageError) as caught:
        parser_with_all()
    assert caught.value.message == (
        f"draft must be true or false, not {raw!r} (from CURSOR_AGENT_ACTION_DRAFT).")
    assert "CURSOR_AGENT_ACTION_DRAFT" in caught.value.hint


@pytest.mark.parametrize(("raw", "value"), [("true", True), (" Yes ", True), ("1", True),
                                            ("FALSE", False), ("no", False), ("0", False)])
def test_parse_bool_accepts_true_false_yes_no_one_zero(raw: str, value: bool) -> None:
    assert parse_bool(raw, "draft", "X") is value


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--max-retries", "11"], "--max-retries must be a whole number from 0 to 10, not '11'."),
        (["--max-retries", "-1"], "--max-retries must be a whole number from 0 to 10, not '-1'."),
        (["--max-retries", "2.5"], "--max-retries must be a whole number from 0 to 10, not '2.5'."),
        (["--timeout-minutes", "soon"],
         "--timeout-minutes must be a number of at least 0, not 'soon'."),
        (["--timeout-minutes", "nan"],
         "--timeout-minutes must be a number of at least 0, not 'nan'."),
        (["--timeout-minutes", "inf"],
         "--timeout-minutes must be a number of at least 0, not 'inf'."),
    ],
)
def test_a_bad_number_flag_is_a_usage_error_with_a_fix(argv: list[str], message: str) -> None:
    """The UsageError passes through argparse (it is no ValueError) to cli.main."""
    with pytest.raises(UsageError) as caught:
        parser_with_all().parse_args(argv)
    assert caught.value.message == message
    flag = argv[0]
    assert f"Pass {flag} " in caught.value.hint
    assert f"(or set {env_name(flag)})" in caught.value.hint


def test_a_bad_number_env_var_fails_only_when_it_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX + "MAX_RETRIES", "lots")
    assert parser_with_all().parse_args(["--max-retries", "3"]).max_retries == 3
    with pytest.raises(UsageError, match=r"max-retries must be a whole number .* not 'lots'"):
        parser_with_all().parse_args([])


def test_parse_number_checks_the_minimum_and_names_it() -> None:
    assert parse_number("2000", "max-bytes", integer=True, minimum=2000) == 2000
    with pytest.raises(UsageError,
                       match=r"^max-bytes must be a whole number of at least 2000, not '10'"):
        parse_number("10", "max-bytes", integer=True, minimum=2000)


def test_items_split_on_commas_and_newlines_and_drop_blanks() -> None:
    assert items(" docs, bot\nci\r\n\n,") == ["docs", "bot", "ci"]


def test_a_large_bound_is_written_in_full_not_in_exponent_form() -> None:
    with pytest.raises(UsageError) as caught:
        parse_number("-1", "max-tool-calls", integer=True, maximum=1_000_000)
    assert caught.value.message == (
        "max-tool-calls must be a whole number from 0 to 1000000, not '-1'.")
    with pytest.raises(UsageError, match=r"a number above 0\.5 and at most 2, not '3'"):
        parse_number("3", "x", minimum=0.5, maximum=2, above_minimum=True)


def _dash_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t")
    add_option(parser, "--extra-args", action=TakesDashValue, help="more CLI arguments")
    add_option(parser, "--prompt", help="the task")
    return parser


@pytest.mark.parametrize(("argv", "extra", "prompt"), [
    (["--extra-args", "--force", "--prompt", "p"], "--force", "p"),
    (["--prompt", "p", "--extra-args", "--stream-partial-output"], "--stream-partial-output", "p"),
    (["--extra-args", "plan"], "plan", ""),
    (["--extra-args=--mode"], "--mode", ""),
])  # fmt: skip
def test_an_option_value_may_start_with_a_dash(argv: list[str], extra: str, prompt: str) -> None:
    """`--extra-args --force` reaches extra-args' own check (which refuses --force) instead of
    failing in argparse with "expected one argument"."""
    parser = _dash_parser()
    args = parser.parse_args(attach_dash_values(parser, argv))
    assert (args.extra_args, args.prompt) == (extra, prompt)


def test_an_option_of_the_command_is_never_taken_as_a_dash_value() -> None:
    parser = _dash_parser()
    assert attach_dash_values(parser, ["--extra-args", "--prompt", "p"]) == [
        "--extra-args", "--prompt", "p"]
    assert attach_dash_values(parser, ["--", "--extra-args", "--x"]) == [
        "--", "--extra-args", "--x"]


@pytest.mark.parametrize(("value", "text"), [
    (1e6, "1000000"), (1234567.0, "1234567"), (1234567.5, "1234567.5"), (1e-9, "0.000000001"),
    (0.5, "0.5"), (99999999999.0, "99999999999"), (1e-05, "0.00001"), (2.0, "2"),
])
def test_numbers_in_messages_are_written_in_full(value: float, text: str) -> None:
    """Never 1e+06, never 1.23457e+06 (a digit lost)."""
    assert number_text(value) == text


def test_the_timeout_failure_writes_the_timeout_in_full() -> None:
    ended = AgentExit(ended_by=EndedBy.TIMEOUT, returncode=None, stderr="", pgid=0)
    assert "within 1234567.5 minutes" in explain_exit(ended, 1234567.5)
    assert "within 0.000000001 minutes" in explain_exit(ended, 1e-9)
