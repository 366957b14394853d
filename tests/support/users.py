"""OS users the tests create, and their removal.

Who makes which user (docs/local-testing.md, "OS users"): the box makes the agent's user
(``useradd --system``) the first time a contained run needs it, under the name of
``agent-user`` (the action's default ``cursor-agent``; the suite's ``TEST_AGENT_USER``), and
:func:`ensure_user` makes the runner users of the fallback tests. Every name a session may
create is registered here (:func:`session_user`); conftest's one ``pytest_sessionfinish`` hook
removes them when the session ends, whatever happened before, and the controller of a parallel
run every worker's too (:func:`remove_suite_users`).

Each suite, and each of its pytest-xdist workers, has users of its own: the base name comes
from ``CAA_TEST_AGENT_USER`` (two suites side by side on one machine), and a worker adds its
id (``caa-test-agent-gw0``), because the Landlock tier kills every process of the agent's user
after its run and the tests check that no process of it outlived a run: two workers sharing one
user would kill or see each other's agents.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from pathlib import Path

SUITE_USER = os.environ.get("CAA_TEST_AGENT_USER", "caa-test-agent")
"""The suite's base name (the action's default user is cursor-agent)."""
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
"""This process's pytest-xdist worker id (``gw0``), or "" in the controller or a serial run."""
TEST_AGENT_USER = f"{SUITE_USER}-{WORKER}" if WORKER else SUITE_USER
"""The contained agent's user in this worker's tests."""
TEST_RUNNER_USER = f"{TEST_AGENT_USER}-runner"
"""An unprivileged runner user without sudo, for the fallback tests."""
TEST_SUDO_USER = f"{TEST_AGENT_USER}-sudoer"
"""A runner user with passwordless sudo (its sudoers entry only while its test runs)."""
TEST_USERS = (TEST_AGENT_USER, TEST_RUNNER_USER, TEST_SUDO_USER)
SUDOERS = Path("/etc/sudoers.d")

_SESSION_USERS: dict[str, None] = dict.fromkeys(TEST_USERS)


def session_user(name: str) -> str:
    """``name``, registered as a user this session may create: the session-finish hook removes
    it. Returns ``name``."""
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


def suite_users(names: list[str]) -> list[str]:
    """Of ``names``, the users this suite's processes make: the serial run's and every worker's
    (``gw<N>``), agent, runner and sudo user alike; never another suite's."""
    base = re.escape(SUITE_USER)
    ours = re.compile(rf"{base}(?:-gw[0-9]+)?(?:-runner|-sudoer)?")
    return [name for name in names if ours.fullmatch(name)]


def remove_suite_users() -> list[str]:
    """Remove every user :func:`suite_users` finds on the machine (and a sudo user's sudoers
    entry): what the controller does when the session ends, so a worker that crashed leaves
    nothing behind. Why each one left could not be removed (empty when all are gone)."""
    problems = []
    for name in suite_users([entry.pw_name for entry in pwd.getpwall()]):
        if name.endswith("-sudoer"):
            (SUDOERS / name).unlink(missing_ok=True)
        problems.append(remove_user(name))
    return [problem for problem in problems if problem]


NO_USER_NAMESPACES = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
ready, go = os.pipe(), os.pipe()
child = os.fork()
if child == 0:
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        os._exit(97)
    os.write(ready[1], b"x")
    os.read(go[0], 1)
    with open("/proc/sys/user/max_user_namespaces", "w") as handle:
        handle.write("0")
    os.execvp(sys.argv[1], sys.argv[1:])
os.read(ready[0], 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{child}/{name}", "w") as handle:
        handle.write("0 0 4294967295")
os.write(go[1], b"x")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
"""
"""Runs its arguments in a user namespace of its own, every id mapped to itself, whose
user.max_user_namespaces is 0: user namespaces turned off by the sysctl for that command alone
(the machine's own sysctl is untouched, and root here may lack CAP_SYS_RESOURCE to set it)."""
