"""The OS users a test session makes go when it ends (conftest's ``pytest_sessionfinish``):
the agent's user the box makes under ``CAA_TEST_AGENT_USER``, and any name registered with
``session_user`` (a per-worker user), also when a test failed."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.users import TEST_AGENT_USER

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making OS users needs root")

_SESSION = """
import subprocess
from tests.support.users import TEST_AGENT_USER, session_user

def _useradd(name):  # as the box makes its user: not through the suite's helpers
    subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                    "/usr/sbin/nologin", name], check=True, timeout=60)

def test_the_box_makes_the_agent_user():
    _useradd(TEST_AGENT_USER)

def test_a_worker_registers_its_own_user_then_fails():
    _useradd(session_user(TEST_AGENT_USER + "w"))
    assert False, "a failed test does not keep the users"
"""


def _ours(prefix: str) -> list[str]:
    return [entry.pw_name for entry in pwd.getpwall() if entry.pw_name.startswith(prefix)]


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_session_removes_every_user_it_made(tmp_path: Path, workers: str) -> None:
    """Serial, and in parallel (each worker's own users, named by its id)."""
    agent = f"{TEST_AGENT_USER[:18]}-s{workers}"  # useradd takes 32 characters at most
    assert _ours(agent) == []
    (tmp_path / "test_made.py").write_text(_SESSION)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.conftest",
             "-q", "-n", workers, "--rootdir", str(tmp_path), str(tmp_path / "test_made.py")],
            env={**os.environ, "CAA_TEST_AGENT_USER": agent, "PYTHONPATH": str(ROOT)},
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
        assert "1 failed, 1 passed" in done.stdout, done.stdout + done.stderr
        assert _ours(agent) == [], "a user the session made outlived it"
        assert "a test user is left" not in done.stdout
    finally:
        for name in _ours(agent):
            subprocess.run(["userdel", name], check=False, capture_output=True, timeout=60)
