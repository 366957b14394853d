"""Whether ``sudo -n`` gives the helper root, and if not, which of three reasons and its fix.

- sudo is not installed (no ``sudo`` on ``PATH``);
- sudo asks for a password (``sudo -n`` answers "a password is required": the runner's user has
  no sudoers entry, or one without ``NOPASSWD``; sudo does not tell these apart without one);
- sudo refused for another reason, in its own words (the no-new-privileges flag of a container
  or a systemd service, a ``nosuid`` mount, an account or PAM failure, a broken sudoers file).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass

SUDO_PROBE_TIMEOUT_S = 10.0
WORKS, MISSING, PASSWORD, REFUSED = "works", "missing", "password", "refused"


@dataclass(frozen=True)
class SudoCheck:
    """What ``sudo -n true`` did: ``state`` (one of the four above) and sudo's own words."""

    state: str
    said: str = ""

    @property
    def works(self) -> bool:
        return self.state == WORKS

    @property
    def why_not(self) -> str:
        """Why the helper has no root (for "the helper is not root and ...")."""
        if self.state == MISSING:
            return "sudo is not installed (no sudo on PATH)"
        if self.state == PASSWORD:
            return (f"sudo asks for a password ('sudo -n' answered: {self.said}): the runner's "
                    f"user {_user()} has no sudoers entry, or one without NOPASSWD")
        return f"sudo refused ('sudo -n true' answered: {self.said or 'nothing, exit non-zero'})"

    @property
    def fix(self) -> str:
        """How to give the helper passwordless sudo from here."""
        line = f"'{_user()} ALL=(root) NOPASSWD: ALL'"
        if self.state == MISSING:
            return (f"install sudo (apt-get install sudo) and give the runner's user "
                    f"passwordless sudo with a sudoers line such as {line}")
        if self.state == PASSWORD:
            return (f"give the runner's user passwordless sudo: a sudoers line such as {line} "
                    "(e.g. in /etc/sudoers.d/, made with visudo)")
        if "no new privileges" in self.said.lower():
            return ("start the runner without the no-new-privileges flag (a container's "
                    "--security-opt no-new-privileges, systemd's NoNewPrivileges=) so sudo can "
                    "run as root")
        return (f"make 'sudo -n true' work for the runner's user (a sudoers line such as {line}; "
                "sudo setuid root on a file system mounted without nosuid)")


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return "RUNNER_USER"


def check() -> SudoCheck:
    """Ask ``sudo -n true`` once (bounded) and sort out its answer."""
    if not shutil.which("sudo"):
        return SudoCheck(MISSING)
    try:
        done = subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False,
                              timeout=SUDO_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL, text=True,
                              errors="replace")
    except subprocess.TimeoutExpired:
        return SudoCheck(REFUSED, f"no answer within {SUDO_PROBE_TIMEOUT_S:.0f} s")
    except OSError as exc:
        return SudoCheck(REFUSED, str(exc))
    if done.returncode == 0:
        return SudoCheck(WORKS)
    said = " ".join(line.strip().removeprefix("sudo: ")
                    for line in done.stderr.splitlines() if line.strip())[:300]
    if "password is required" in said:
        return SudoCheck(PASSWORD, said)
    return SudoCheck(REFUSED, said)
