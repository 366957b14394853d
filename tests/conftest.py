"""Shared pytest configuration. Reusable helpers live in ``tests/support/``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.isolation import DEFAULT_AGENT_USER
from cursor_agent_action.agent.launch.invocation import SHARE_VARIABLE
from tests.support.users import TEST_AGENT_USER, remove_session_users, user_exists

# What a test must never inherit from the shell or from a real Actions runner (our own CI runs
# the suite inside one): runner files a command would write to, credentials it would mask, and
# every option's environment variable. Tests set what they need themselves.
_INHERITED = (
    "CURSOR_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "INPUT_API_KEY",
    "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE",
    "GITHUB_EVENT_PATH", "RUNNER_TEMP", "RUNNER_TOOL_CACHE",
)  # fmt: skip
_INHERITED_PREFIXES = ("CURSOR_AGENT_ACTION_", "CURSOR_CLI_")


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name in _INHERITED or name.startswith(_INHERITED_PREFIXES):
            monkeypatch.delenv(name)
    # The suite plays a runner (its log is read as a runner reads it, masks included); a test
    # of a run outside Actions unsets this.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    # A contained agent runs as this user (created by the jail), removed after the session.
    monkeypatch.setenv("CURSOR_AGENT_ACTION_AGENT_USER", TEST_AGENT_USER)
    # The stand-in CLI records what it saw in tmp_path/standin: the one directory a contained
    # agent shares with the tests (tests/support/standin.make_standin).
    monkeypatch.setenv(SHARE_VARIABLE, str(tmp_path / "standin"))


_DEFAULT_USER_EXISTED: list[bool] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    # The action's default user goes at the end only if this session made it (a test that
    # forgot to name the suite's user); one that was there before is someone else's.
    _DEFAULT_USER_EXISTED.append(user_exists(DEFAULT_AGENT_USER))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every OS user the session may have created goes when it ends (each xdist worker's own,
    and the controller's), also after failures or an interrupt: tests/support/users.py."""
    default = () if _DEFAULT_USER_EXISTED[:1] != [False] else (DEFAULT_AGENT_USER,)
    problems = remove_session_users(default)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for problem in problems:  # said, not raised: the session's result stands
        line = f"warning: a test user is left on this machine: {problem}"
        if reporter is not None:
            reporter.write_line(line, yellow=True)
        else:
            print(line, file=sys.stderr)
