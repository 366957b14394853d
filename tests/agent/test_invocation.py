"""The agent's command line and environment, built directly (agent.launch.invocation): what the
CLI is asked to do, and what of the runner's environment reaches it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.agent.guards.permissions import build_policy
from cursor_agent_action.agent.launch.invocation import (
    ENV_ALLOWLIST,
    agent_environment,
    build_argv,
)
from cursor_agent_action.agent.launch.mcp import McpConfig
from cursor_agent_action.agent.launch.run_options import RunOptions

AGENT = Path("/opt/cursor/cursor-agent")
HEAD = [str(AGENT), "-p", "--output-format", "stream-json"]


def _options(preset: str = "read-only", **changes: object) -> RunOptions:
    state = Path("/nonexistent/state")
    return RunOptions(prompt="p", agent_bin=AGENT, workspace=Path("/nonexistent/ws"),
                      state_dir=state, transcript=state / "t.jsonl",
                      policy=build_policy(preset), **changes)  # type: ignore[arg-type]


def test_a_read_only_run_asks_for_print_mode_stream_json_and_nothing_more() -> None:
    assert build_argv(_options(), "Fix it.", trust=False) == [*HEAD, "--", "Fix it."]


@pytest.mark.parametrize(("preset", "force"), [("read-only", False), ("docs", True),
                                                ("edit", True)])
def test_force_is_passed_only_when_the_preset_lets_the_agent_write(preset: str,
                                                                   force: bool) -> None:
    assert ("--force" in build_argv(_options(preset), "x", trust=False)) is force


def test_every_option_in_its_place_with_the_extra_args_before_the_prompt() -> None:
    mcp = McpConfig(text="{}", servers=("docs",), env_names=())
    options = _options("edit", model="gpt-5", resume="chat-1", mcp_config=mcp,
                       extra_args=("--output-style", "plain"))
    assert build_argv(options, "Go.", trust=True, sandbox="enabled") == [
        *HEAD, "--sandbox", "enabled", "--force", "--model", "gpt-5", "--resume", "chat-1",
        "--trust", "--approve-mcps", "--output-style", "plain", "--", "Go."]


def test_mcp_servers_are_approved_only_when_the_workflow_gave_a_config() -> None:
    assert "--approve-mcps" not in build_argv(_options(), "x", trust=True)
    assert "--sandbox" not in build_argv(_options(), "x", trust=True)  # "": the CLI's own


@given(prompt=st.text(), extra=st.lists(st.sampled_from(["--browser", "-v", "--x=1"]),
                                        max_size=3))
def test_the_prompt_is_always_one_argument_after_the_end_of_options(
        prompt: str, extra: list[str]) -> None:
    """A prompt that looks like an option (``--force``, ``--api-key=k``) can never be read as
    one: it is the last argument, after ``--``, whatever the extra arguments were."""
    argv = build_argv(_options(extra_args=tuple(extra)), prompt, trust=False)
    assert argv[-2:] == ["--", prompt]
    assert argv.count("--") == 1 + (prompt == "--")


RUNNER_ENV = {
    "PATH": "/usr/bin:/bin", "HOME": "/home/runner", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
    "CURSOR_API_KEY": "key_0123456789", "HTTPS_PROXY": "http://proxy:3128", "CI": "true",
    "GITHUB_TOKEN": "ghs_secret", "GH_TOKEN": "ghp_secret", "ACTIONS_RUNTIME_TOKEN": "rt",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc", "INPUT_API_KEY": "key_0123456789",
    "AWS_SECRET_ACCESS_KEY": "aws", "GITHUB_OUTPUT": "/runner/out", "LCX": "no",
    "lc_all": "no", "NODE_OPTIONS": "--require /tmp/evil.js", "LD_PRELOAD": "/tmp/evil.so",
}  # fmt: skip


def test_the_environment_holds_the_allowlisted_names_and_no_credential(tmp_path: Path) -> None:
    env = agent_environment(RUNNER_ENV, tmp_path)
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/home/runner", "LANG": "C.UTF-8",
                   "LC_ALL": "C.UTF-8", "CURSOR_API_KEY": "key_0123456789",
                   "HTTPS_PROXY": "http://proxy:3128", "CI": "true",
                   "CURSOR_CONFIG_DIR": str(tmp_path)}
    assert set(env) - {"CURSOR_CONFIG_DIR"} <= set(ENV_ALLOWLIST) | {"LC_ALL"}


def test_pass_env_adds_exactly_the_names_it_lists(tmp_path: Path) -> None:
    env = agent_environment({**RUNNER_ENV, "MY_TOOL_TOKEN": "t"}, tmp_path,
                            ("MY_TOOL_TOKEN", "NOT_SET"))
    assert env["MY_TOOL_TOKEN"] == "t"
    assert "NOT_SET" not in env
    assert "GITHUB_TOKEN" not in env


def test_the_cli_config_is_this_runs_whatever_the_runner_or_pass_env_says(
        tmp_path: Path) -> None:
    """--model rewrites the CLI's config: a CURSOR_CONFIG_DIR from the runner (passed on
    purpose or not) must not point it at the runner user's own."""
    environ = {**RUNNER_ENV, "CURSOR_CONFIG_DIR": "/home/runner/.cursor"}
    env = agent_environment(environ, tmp_path, ("CURSOR_CONFIG_DIR",))
    assert env["CURSOR_CONFIG_DIR"] == str(tmp_path)


def test_a_missing_path_gets_the_systems_default(tmp_path: Path) -> None:
    assert agent_environment({}, tmp_path) == {"PATH": os.defpath,
                                               "CURSOR_CONFIG_DIR": str(tmp_path)}
