"""Errors speak the user's vocabulary: action inputs when the helper runs as the action's step
(CURSOR_AGENT_ACTION_VOCABULARY=inputs, set in every action.yml), flags from a terminal; one
message per bad value; every error also lands in the job summary with its fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from cursor_agent_action.cli import main
from cursor_agent_action.options import INPUT_NAMES, VOCABULARY_ENV

ROOT = Path(__file__).resolve().parents[1]
ACTIONS = sorted([ROOT / "action.yml", *ROOT.glob("*/action.yml")])


def _errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("::error")]


@pytest.mark.parametrize(("value", "message"), [
    ("0", "timeout-minutes must be a number above 0, not '0'."),
    ("-1", "timeout-minutes must be a number above 0, not '-1'."),
    ("soon", "timeout-minutes must be a number above 0, not 'soon'."),
])  # fmt: skip
def test_a_bad_timeout_gets_one_message_in_input_words_under_the_action(
    value: str, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv(VOCABULARY_ENV, "inputs")
    monkeypatch.setenv("CURSOR_AGENT_ACTION_TIMEOUT_MINUTES", value)
    summary = tmp_path / "summary.md"  # the runner's: options are not parsed yet
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["run", "--prompt", "x"]) == 2
    [error] = _errors(capsys)
    assert message in error
    assert "Fix: Set the timeout-minutes input to a number above 0, e.g. 30 (the default)." in (
        error)
    assert "--timeout-minutes" not in error
    assert "CURSOR_AGENT_ACTION_" not in error
    text = summary.read_text()
    assert text.startswith("## ❌ cursor-agent-action: invalid input")
    assert "**Fix:** Set the timeout-minutes input" in text


def test_from_a_terminal_the_same_error_names_the_flag_and_its_env_var(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(VOCABULARY_ENV, raising=False)
    assert main(["run", "--prompt", "x", "--timeout-minutes", "0"]) == 2
    [error] = _errors(capsys)
    assert "--timeout-minutes must be a number above 0, not '0'." in error
    assert "Pass --timeout-minutes a number above 0" in error
    assert "(or set CURSOR_AGENT_ACTION_TIMEOUT_MINUTES)" in error


@pytest.mark.parametrize(("vocabulary", "expected", "absent"), [
    ("inputs", "cli-path: /nonexistent/cursor-agent does not exist.", "--agent-bin"),
    ("", "--agent-bin: /nonexistent/cursor-agent does not exist.", "cli-path"),
])  # fmt: skip
def test_the_cli_path_error_names_what_the_user_set(
    vocabulary: str, expected: str, absent: str, *, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    monkeypatch.setenv(VOCABULARY_ENV, vocabulary)
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path))
    assert main(["run", "--prompt", "x", "--agent-bin", "/nonexistent/cursor-agent"]) == 3
    [error] = _errors(capsys)
    assert expected in error
    assert absent not in error


def test_a_bad_boolean_input_names_the_input_not_the_env_var(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(VOCABULARY_ENV, "inputs")
    monkeypatch.setenv("CURSOR_AGENT_ACTION_FAIL_ON_ERROR", "maybe")
    assert main(["run", "--prompt", "x"]) == 2
    [error] = _errors(capsys)
    assert "fail-on-error must be 'true' or 'false', not 'maybe'." in error
    assert 'Fix: Set the fail-on-error input to "true" or "false"' in error
    assert "CURSOR_AGENT_ACTION" not in error


_ENV_LINE = re.compile(r"^\s+(CURSOR_AGENT_ACTION_[A-Z_]+): \$\{\{ inputs\.([a-z-]+)")


@pytest.mark.parametrize("action", ACTIONS, ids=lambda p: p.parent.name or "action")
def test_every_action_speaks_inputs_and_each_input_is_the_name_messages_use(
    action: Path,
) -> None:
    """Each helper step sets the vocabulary; each CURSOR_AGENT_ACTION_X comes from the input
    that messages will name for its flag (--x, or the INPUT_NAMES exception)."""
    text = action.read_text()
    steps = yaml.safe_load(text)["runs"]["steps"]
    helpers = [s for s in steps if "CAA_PYTHON" in s.get("env", {})]
    assert helpers
    assert all(s["env"].get(VOCABULARY_ENV) == "inputs" for s in helpers)
    renamed = {env_flag.lstrip("-").upper().replace("-", "_"): name
               for env_flag, name in INPUT_NAMES.items()}
    renamed["PERMISSIONS"] = "permissions"  # --preset reads CURSOR_AGENT_ACTION_PERMISSIONS
    for line in text.splitlines():
        # A switch computed from several inputs (HELPER_SCHEMA) is named after none of them.
        if (match := _ENV_LINE.match(line)) and " != ''" not in line:
            env, source = match.groups()
            name = env.removeprefix("CURSOR_AGENT_ACTION_")
            assert source == renamed.get(name, name.lower().replace("_", "-")), line
