"""Which box the agent runs in, decided by the helper (the runner's user).

``isolation`` (the action input):

- ``auto`` (default): contain the agent when the runner allows it, else run it as the
  runner's user with a warning that names what is missing and how to get it.
- ``user``: contain it or fail before the agent starts.
- ``none``: run it as the runner's user, in its own process group (documented as unsafe).

Containment (:mod:`.jail`) needs Linux and root: the helper is root (act, container jobs), or
``sudo -n`` works without a password (GitHub-hosted runners). The helper itself stays the
runner's user; only the jail runs as root, started with ``python -I`` from the helper's venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cursor_agent_action.errors import SetupError, UsageError

MODES = ("auto", "user", "none")
DEFAULT_AGENT_USER = "cursor-agent"
SUDO_PROBE_TIMEOUT_S = 10.0
JAIL_EXIT_WAIT_S = 300.0
"""How long the jail may take to give the workspace back after the agent ended."""

MISSING_PROTECTIONS = (
    "the agent runs as the runner's own user: whatever its shell starts can read this job's "
    "files and the helper's process, write ~/.gitconfig, ~/.bashrc, .git/ and the runner's "
    "files for later steps, and keep running after the step (the helper kills what it can find)"
)


@dataclass(frozen=True)
class Isolation:
    """The decision: ``contained`` or not, how root is had, and why not when not."""

    contained: bool
    via_sudo: bool = False
    why_not: str = ""
    agent_user: str = DEFAULT_AGENT_USER

    @property
    def label(self) -> str:
        """For the log and the job summary."""
        if self.contained:
            return f"contained (user {self.agent_user}, own PID namespace, private home)"
        return "none (the agent ran as the runner's user)"


def _sudo_works() -> bool:
    if not shutil.which("sudo"):
        return False
    try:
        done = subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False,
                              timeout=SUDO_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def decide(requested: str, agent_user: str = DEFAULT_AGENT_USER) -> Isolation:
    """The isolation for ``requested`` (one of :data:`MODES`) on this machine."""
    if requested not in MODES:
        raise UsageError(f"isolation must be one of {', '.join(MODES)}, not {requested!r}.",
                         "Use auto (the default), user or none.")
    if requested == "none":
        return Isolation(False, why_not="isolation is none")
    if not sys.platform.startswith("linux"):
        why = f"containment needs Linux (this runner is {sys.platform})"
    elif os.geteuid() == 0:
        return Isolation(True, agent_user=agent_user)
    elif _sudo_works():
        return Isolation(True, via_sudo=True, agent_user=agent_user)
    else:
        why = ("the helper is not root and 'sudo -n' does not work (no passwordless sudo for "
               "the runner's user)")
    if requested == "user":
        raise SetupError(f"isolation is user, but the agent cannot be contained here: {why}.",
                         "Run the job on a GitHub-hosted Linux runner, as root in a container "
                         "job, or give the runner's user passwordless sudo; or set isolation "
                         "to auto (contain when possible) or none.")
    return Isolation(False, why_not=why)


def fallback_warning(isolation: Isolation) -> str:
    """The warning for ``auto`` without containment: what is missing and how to get it."""
    return (f"The agent is not contained: {isolation.why_not}. Missing protections: "
            f"{MISSING_PROTECTIONS}. Fix: run on a GitHub-hosted Linux runner or as root in a "
            "container job, or give the runner's user passwordless sudo; set isolation: user "
            "to fail instead of running uncontained.")


@dataclass
class Jail:
    """One contained start of the agent: the spec, the command, the control pipe, the status."""

    isolation: Isolation
    state_dir: Path
    spec: dict[str, object]

    @property
    def spec_file(self) -> Path:
        return self.state_dir / "jail-spec.json"

    @property
    def status_file(self) -> Path:
        return self.state_dir / "jail-status.json"

    def command(self) -> list[str]:
        """Written the spec (0600: it holds the agent's environment); the jail's argv."""
        self.status_file.unlink(missing_ok=True)
        fd = os.open(self.spec_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({**self.spec, "status_file": str(self.status_file)}, handle)
        argv = [sys.executable, "-I", "-m", "cursor_agent_action.agent.jail",
                str(self.spec_file)]
        return ["sudo", "-n", "--", *argv] if self.isolation.via_sudo else argv

    @staticmethod
    def send(control: IO[bytes] | None, what: bytes) -> None:
        """``T`` (stop the agent) or ``K`` (kill everything) to the jail."""
        if control is None or control.closed:
            return
        try:
            control.write(what)
            control.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def returncode(self, jail_code: int | None) -> int | None:
        """The agent's own exit status (negative: its signal), from what the jail wrote."""
        try:
            status = json.loads(self.status_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            status = {}
        finally:
            self.spec_file.unlink(missing_ok=True)
        if isinstance(status.get("returncode"), int):
            return int(status["returncode"])
        reason = status.get("error") or f"the jail ended with code {jail_code} and no status"
        raise ContainmentFailed(str(reason))


class ContainmentFailed(SetupError):
    """The jail could not start the agent (before the agent ran)."""

    title = "containment failed"

    def __init__(self, reason: str) -> None:
        super().__init__(f"the agent could not be contained: {reason.rstrip('.')}.",
                         "Check that the runner allows root (or passwordless sudo) and PID "
                         "namespaces; set isolation to none to run uncontained (unsafe).")
        self.reason = reason


def jail_for(
    isolation: Isolation, *, state_dir: Path, workspace: Path, home: Path,
    argv: Sequence[str], env: Mapping[str, str], reach: Sequence[Path],
    make: Sequence[Path] = (), files: dict[str, str | None] | None = None,
) -> Jail:
    """The jail that runs ``argv`` in ``workspace`` as the agent user."""
    spec: dict[str, object] = {
        "user": isolation.agent_user, "home": str(home), "workspace": str(workspace),
        "cwd": str(workspace), "argv": list(argv), "env": dict(env),
        "reach": [str(path) for path in reach], "make": [str(path) for path in make],
        "files": dict(files or {}),
    }  # fmt: skip
    return Jail(isolation, state_dir, spec)
