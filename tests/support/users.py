"""OS users the containment tests need, and their removal."""

from __future__ import annotations

import os
import pwd
import subprocess

TEST_AGENT_USER = os.environ.get("CAA_TEST_AGENT_USER", "caa-test-agent")
"""The contained agent's user in tests (the action's default is cursor-agent); another name in
``CAA_TEST_AGENT_USER`` lets two suites run side by side on one machine."""
TEST_RUNNER_USER = "caa-test-runner"
"""An unprivileged runner user without sudo, for the fallback tests."""
TEST_SUDO_USER = "caa-test-sudoer"
"""A runner user with passwordless sudo (its sudoers entry only while its test runs)."""
TEST_USERS = (TEST_AGENT_USER, TEST_RUNNER_USER, TEST_SUDO_USER)


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def ensure_user(name: str) -> pwd.struct_passwd:
    """``name``, created (no home, no login shell, its own group) if missing; needs root."""
    if not user_exists(name):
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", name], check=True, capture_output=True, timeout=60)
    return pwd.getpwnam(name)


def remove_user(name: str) -> None:
    """Remove ``name`` and its group, if they exist (root only; bounded)."""
    if user_exists(name):
        subprocess.run(["userdel", name], check=False, capture_output=True, timeout=60)
