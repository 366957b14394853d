"""Fixtures of the agent wing's tests: a checked-out repository and a runner-like
environment (see :mod:`tests.support.agent_run`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agent_run import make_workspace, set_run_env
from tests.support.box import Box, make_box
from tests.support.helper_venv import make_helper_venv
from tests.support.standin import SYSTEM_PYTHON


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path)


@pytest.fixture
def run_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return set_run_env(tmp_path, monkeypatch)


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    """A contained agent's world (tests.support.box)."""
    yield from make_box(tmp_path, monkeypatch)


@pytest.fixture
def unprivileged(tmp_path: Path) -> Path:
    """A helper venv a user other than root can run, as setup-helper.sh makes it: the system
    Python, the package, its compiled dependency and h11 copied in, under a world-readable
    path."""
    if not SYSTEM_PYTHON:
        pytest.skip("needs a system Python every user can run")
    venv = make_helper_venv(tmp_path / "helper-venv", SYSTEM_PYTHON)
    for path in [tmp_path, *tmp_path.parents]:
        if path != Path("/"):
            path.chmod(path.stat().st_mode | 0o001)
    return venv
