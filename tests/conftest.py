"""Shared pytest configuration. Reusable helpers live in ``tests/support/``."""

from __future__ import annotations

import os

import pytest

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
def hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name in _INHERITED or name.startswith(_INHERITED_PREFIXES):
            monkeypatch.delenv(name)
