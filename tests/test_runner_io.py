"""Runner I/O: workflow-command escaping, outputs, masking, stop-commands, summary budget."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.redact import Redactor
from cursor_agent_action.runner_io import (
    SUMMARY_LIMIT_BYTES,
    Runner,
    escape_data,
    escape_property,
    format_output,
)
from tests.support.runner import RUNNER_ENV


def make_runner(tmp_path: Path, *secrets: str) -> tuple[Runner, io.StringIO]:
    out = io.StringIO()
    runner = Runner(
        stdout=out,
        env=RUNNER_ENV,
        output_file=tmp_path / "output",
        summary_file=tmp_path / "summary.md",
        secrets=secrets,
    )
    return runner, out


def test_escape_data_and_property_follow_the_runner_rules() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a:b,c\n") == "a%3Ab%2Cc%0A"


def test_output_value_containing_a_delimiter_line_cannot_end_the_value(tmp_path: Path) -> None:
    runner, _ = make_runner(tmp_path)
    evil = "x\nghadelimiter_fake\nconclusion=success\nEOF"
    runner.set_outputs({"result": evil, "conclusion": "failure"})
    parsed = parse_output_file((tmp_path / "output").read_text())
    assert parsed == {"result": evil, "conclusion": "failure"}


@given(st.text())
def test_any_value_round_trips_through_the_output_file_format(value: str) -> None:
    # The runner reads lines ending in "\n" or "\r\n", so only a final "\r" can be lost.
    parsed = parse_output_file(format_output("value", value))
    assert parsed == {"value": value[:-1] if value.endswith("\r") else value}


def test_invalid_output_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="invalid output name"):
        format_output("bad name", "x")


def test_mask_is_printed_before_anything_else_and_redacts_every_line(tmp_path: Path) -> None:
    runner, out = make_runner(tmp_path, "sk-secret-key-1234")
    assert out.getvalue() == "::add-mask::sk-secret-key-1234\n"
    runner.log("key is sk-secret-key-1234")
    runner.set_outputs({"result": "sk-secret-key-1234!"})
    runner.append_summary("summary sk-secret-key-1234")
    runner.flush()
    assert "key is ***" in out.getvalue()
    assert parse_output_file((tmp_path / "output").read_text()) == {"result": "***!"}
    # The summary is Markdown the callers built from redacted texts: only the one-for-one net
    # runs over it, a star for each character (it cannot move a fence).
    assert (tmp_path / "summary.md").read_text() == "summary " + "*" * len("sk-secret-key-1234")


def test_outside_actions_a_pipe_gets_no_mask_command_naming_the_secret(tmp_path: Path) -> None:
    """Only a runner reads ::add-mask::; piped to a file on a laptop, the line would print the
    key it means to hide. The secret is still redacted from everything written."""
    out = io.StringIO()
    runner = Runner(stdout=out, env={}, output_file=tmp_path / "output",
                    secrets=["sk-secret-key-1234"])
    runner.log("key is sk-secret-key-1234")
    runner.flush()
    assert "sk-secret-key-1234" not in out.getvalue()
    assert "::add-mask::" not in out.getvalue()
    assert "key is ***" in out.getvalue()


def test_multiline_secret_masks_each_line() -> None:
    redact = Redactor(["line-one-secret\nline-two-secret"])
    assert redact("a line-two-secret b") == "a *** b"
    assert redact("ab") == "ab"


def test_short_values_are_not_treated_as_secrets() -> None:
    redact = Redactor(["abc", ""])
    assert not redact
    assert redact("abc") == "abc"


def test_untrusted_text_is_fenced_by_a_stop_commands_token(tmp_path: Path) -> None:
    runner, out = make_runner(tmp_path)
    runner.untrusted("::set-output name=x::y\n::error::pwned")
    runner.flush()
    lines = out.getvalue().splitlines()
    tokens = [m.group(1) for line in lines if (m := re.match(r"::stop-commands::(\w+)$", line))]
    assert len(tokens) == 1
    assert len(tokens[0]) == 32
    assert lines == [
        f"::stop-commands::{tokens[0]}",
        "\u2502 ::set-output name=x::y",
        "\u2502 ::error::pwned",
        f"::{tokens[0]}::",
    ]


def test_a_text_that_knows_the_token_cannot_end_its_own_block(tmp_path: Path) -> None:
    """The run's token is reused from block to block; an agent that learnt it (from an earlier
    block) and writes it to close the block early gets a new token for that text."""
    runner, out = make_runner(tmp_path)
    runner.untrusted("first")
    runner.flush()
    known = out.getvalue().splitlines()[0].removeprefix("::stop-commands::")
    runner.untrusted(f"::{known}::\n::error title=pwned::owned")
    runner.untrusted("third")
    runner.flush()
    lines = out.getvalue().splitlines()[3:]
    fresh = lines[0].removeprefix("::stop-commands::")
    assert fresh != known
    assert lines[:4] == [f"::stop-commands::{fresh}", f"\u2502 ::{known}::",
                         "\u2502 ::error title=pwned::owned", f"::{fresh}::"]
    assert lines[4] == f"::stop-commands::{fresh}"  # the new token is used from then on


def test_group_title_from_the_agent_cannot_inject_a_command(tmp_path: Path) -> None:
    runner, out = make_runner(tmp_path)
    with runner.group("ls\n::error::pwned"):
        runner.log("inside")
    runner.flush()
    assert out.getvalue().splitlines() == [
        "::group::ls ::error::pwned",
        "inside",
        "::endgroup::",
    ]


def test_annotations_escape_message_and_properties(tmp_path: Path) -> None:
    runner, out = make_runner(tmp_path)
    runner.warning("denied: rm -rf /\nnext", title="permission, denied")
    runner.flush()
    assert out.getvalue() == "::warning title=permission%2C denied::denied: rm -rf /%0Anext\n"


def test_log_is_batched_until_flush(tmp_path: Path) -> None:
    runner, out = make_runner(tmp_path)
    runner.log("held back")
    assert out.getvalue() == ""
    runner.flush()
    assert out.getvalue() == "held back\n"


def test_summary_is_cut_to_the_budget_with_a_visible_note(tmp_path: Path) -> None:
    runner, _ = make_runner(tmp_path)
    (tmp_path / "summary.md").write_bytes(b"x" * 1000)
    runner.append_summary("é" * SUMMARY_LIMIT_BYTES)
    data = (tmp_path / "summary.md").read_bytes()
    assert len(data) <= SUMMARY_LIMIT_BYTES
    text = data.decode("utf-8")  # never cut inside a character
    assert "1 MiB limit" in text
    assert runner.summary_budget() < 1024 * 16


def test_without_github_files_nothing_is_written_but_outputs_are_kept(tmp_path: Path) -> None:
    out = io.StringIO()
    runner = Runner(stdout=out, env=RUNNER_ENV)
    runner.set_outputs({"conclusion": "success"})
    assert runner.append_summary("# hi") is False
    assert runner.outputs == {"conclusion": "success"}
    assert list(tmp_path.iterdir()) == []


def test_files_come_from_the_runner_environment(tmp_path: Path) -> None:
    env = {
        "GITHUB_OUTPUT": str(tmp_path / "o"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "s"),
    }
    runner = Runner(stdout=io.StringIO(), env=env)
    runner.set_outputs({"a": "1"})
    runner.append_summary("s")
    assert parse_output_file((tmp_path / "o").read_text()) == {"a": "1"}
    assert (tmp_path / "s").read_text() == "s"


def test_parse_output_file_rejects_an_unterminated_block() -> None:
    with pytest.raises(ValueError, match="not found"):
        parse_output_file("a<<EOF\nvalue\n")


def test_untrusted_text_cannot_fake_log_viewer_formatting(tmp_path: Path) -> None:
    runner, out = make_runner(tmp_path)
    runner.untrusted("##[group]fake\nok ##[x] mid-line\n##[error]fake")
    runner.flush()
    lines = out.getvalue().splitlines()[1:-1]
    # The runner's legacy parser reads "##[" anywhere in a line: it is broken everywhere.
    assert lines == ["\u2502 ##\\[group]fake", "\u2502 ok ##\\[x] mid-line",
                     "\u2502 ##\\[error]fake"]


def test_group_title_is_redacted_before_it_is_cut(tmp_path: Path) -> None:
    secret = "sk-0123456789abcdef"
    runner, out = make_runner(tmp_path, secret)
    with runner.group("x" * 290 + secret):
        pass
    runner.flush()
    assert "sk-01234" not in out.getvalue().split("\n", 1)[1]


def test_secrets_are_also_redacted_in_their_json_escaped_forms() -> None:
    redact = Redactor(['key"with\\quote-é'])
    assert redact('{"text":"key\\"with\\\\quote-é"}') == '{"text":"***"}'
    assert redact('{"text":"key\\"with\\\\quote-\\u00e9"}') == '{"text":"***"}'


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("env", "terminal"), [
    ({}, True), ({"GITHUB_ACTIONS": "true"}, False),
])  # fmt: skip
def test_a_terminal_outside_github_actions_is_told_apart_from_a_runner(
    env: dict[str, str], *, terminal: bool
) -> None:
    assert Runner(stdout=_Terminal(), env=env).terminal is terminal
    assert Runner(stdout=io.StringIO(), env={}).terminal is False  # a pipe or a file: a runner's


def test_a_terminal_gets_plain_text_no_workflow_commands_and_secrets_still_redacted(
    tmp_path: Path,
) -> None:
    out = _Terminal()
    runner = Runner(stdout=out, env={}, output_file=tmp_path / "outputs.txt",
                    secrets=["crsr-secret-1234"])
    with runner.group("read docs/usage.md → success"):
        runner.log("inside")
    runner.entry("grep --greeting → success")
    runner.untrusted("the agent says ::error::crsr-secret-1234\x1b[2J")
    runner.warning("permission denied: shell git", title="denied")
    runner.error("it failed")
    runner.set_outputs({"conclusion": "success", "final-message": "two\nlines \\ here"})
    runner.flush()
    text = out.getvalue()
    assert text == ("▸ read docs/usage.md → success\ninside\n▸ grep --greeting → success\n"
                    "│ the agent says ::error::***\\x1b[2J\n"
                    "warning: denied: permission denied: shell git\nerror: it failed\n")
    assert "::add-mask::" not in text
    assert parse_output_file((tmp_path / "outputs.txt").read_text())["conclusion"] == "success"
    assert (tmp_path / "outputs.readable.txt").read_text() == (
        "conclusion=success\nfinal-message=two\\nlines \\\\ here\n")


def test_a_runner_gets_no_readable_outputs_list(tmp_path: Path) -> None:
    runner = Runner(stdout=io.StringIO(), env=RUNNER_ENV, output_file=tmp_path / "outputs.txt")
    runner.set_outputs({"conclusion": "success"})
    assert not (tmp_path / "outputs.readable.txt").exists()


def test_under_github_actions_a_terminal_still_gets_fenced_agent_text() -> None:
    """act (and a runner with a pseudo-terminal) sets GITHUB_ACTIONS: the agent's text stays
    inside stop-commands there, so it cannot act as a command however stdout looks."""
    out = _Terminal()
    runner = Runner(stdout=out, env=RUNNER_ENV)
    runner.untrusted("::set-env name=BASH_ENV::/tmp/x")
    runner.flush()
    assert out.getvalue().startswith("::stop-commands::")
