"""Fixtures of the agent wing's tests: a checked-out repository and a runner-like
environment (see :mod:`tests.support.agent_run`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.agent_run import make_workspace, set_run_env
from tests.support.box import Box, make_box


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
