"""Fixtures of the agent wing's tests: a checked-out repository and a runner-like
environment (see :mod:`tests.support.agent_run`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.agent_run import make_workspace, set_run_env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def run_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return set_run_env(tmp_path, monkeypatch)
