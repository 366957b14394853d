"""OS users the tests create, and their removal.

Who makes which user (docs/local-testing.md, "OS users"): the box makes the agent's user
(``useradd --system``) the first time a contained run needs it, under the name of
``agent-user`` (the action's default ``cursor-agent``; the suite's ``TEST_AGENT_USER``), and
:func:`ensure_user` makes the runner users of the fallback tests. Every name the session may
create is registered here (:func:`session_user`); conftest's ``pytest_sessionfinish`` hook
removes them all when the session ends, whatever happened before.
"""

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

_SESSION_USERS: dict[str, None] = dict.fromkeys(TEST_USERS)


def session_user(name: str) -> str:
    """``name``, registered as a user this session may create: the session-finish hook removes
    it (a per-worker agent user, say). Returns ``name``."""
    _SESSION_USERS[name] = None
    return name


def session_users() -> tuple[str, ...]:
    """Every user registered for removal at the end of the session, in registration order."""
    return tuple(_SESSION_USERS)


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def ensure_user(name: str) -> pwd.struct_passwd:
    """``name``, created (no home, no login shell, its own group) if missing; needs root.
    Registered for removal at the end of the session."""
    session_user(name)
    if not user_exists(name):
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", name], check=True, capture_output=True, timeout=60)
    return pwd.getpwnam(name)


def remove_user(name: str) -> str:
    """Remove ``name`` and its group, if they exist (root only; bounded). Returns "" when it
    is gone, else why it is not (userdel's words)."""
    if not user_exists(name):
        return ""
    try:
        done = subprocess.run(["userdel", name], check=False, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"userdel {name}: {exc}"
    if user_exists(name):
        return f"userdel {name} (exit {done.returncode}): {done.stderr.strip() or 'no reason'}"
    return ""


def remove_session_users(also: tuple[str, ...] = ()) -> list[str]:
    """Remove every user of :func:`session_users` and ``also``; why each one left could not
    be removed (empty when all are gone)."""
    problems = [remove_user(name) for name in dict.fromkeys((*session_users(), *also))]
    return [problem for problem in problems if problem]
