"""Where the agent's process runs: one interface (start, stop, network events, result) and its
two implementations, so :func:`~.process.run_agent_process` drives either the same way.

- :class:`Uncontained`: the CLI as the helper's child, in a process group of its own; stopped
  by signals to that group. For the length of the run the helper is the subreaper of its
  descendants, so whatever escaped the group is found as the helper's orphans and killed.
- :class:`Contained`: the box (:class:`~.isolation.Jail`) starts instead of the CLI; its
  stdout and stderr are the agent's, it is stopped through its control pipe, the wall's live
  refusals come from it, and its status says how the agent ended and what came back.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from cursor_agent_action.agent.contain.box.net.ledger import NetEvent
from cursor_agent_action.agent.contain.isolation import JAIL_EXIT_WAIT_S, BoxFailed, BoxResult, Jail

ORPHAN_REAP_S = 2.0
"""Longest time spent killing and reaping descendants that escaped the process group."""


class EndedBy(enum.Enum):
    """Why the agent's run ended."""

    RESULT = "result"  # its result event arrived (then it exited, or was stopped after a grace)
    EXIT = "exit"  # it exited without one
    TIMEOUT = "timeout"  # stopped at timeout-minutes
    CANCELLED = "cancelled"  # stopped: the job was cancelled
    BUDGET = "budget"  # stopped: over max-tool-calls

    @property
    def stopped(self) -> bool:
        """The action stopped the agent before it ended by itself."""
        return self in (EndedBy.TIMEOUT, EndedBy.CANCELLED, EndedBy.BUDGET)


@dataclass(frozen=True)
class AgentExit:
    """How the agent's process ended: the one record of it (:func:`~.process.run_agent_process`
    makes it; :meth:`Sandbox.result` adds what the sandbox knows)."""

    ended_by: EndedBy
    returncode: int | None  # negative: killed by that signal
    stderr: str  # the last STDERR_TAIL_BYTES of stderr
    pgid: int
    transcript_error: str = ""  # why the transcript file is incomplete, "" when it is whole
    box: BoxResult | None = None  # contained: what the box reported
    box_error: str = ""  # contained: why the box ended without a proper status (fails closed)


class Sandbox(Protocol):
    """One start of the agent, contained or not."""

    @property
    def program(self) -> str:
        """What started (for the error when it cannot)."""

    def start(self) -> subprocess.Popen[bytes]:
        """The process whose stdout and stderr are the agent's (raises ``OSError``)."""

    def stop(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        """Stop the agent (SIGTERM) or kill everything it started (SIGKILL)."""

    def network_events(self) -> list[NetEvent]:
        """The wall's reports since the last call (none without a wall)."""

    @property
    def ends_when_output_closes(self) -> bool:
        """Its end of the agent's output means the agent is gone (what is left is the
        sandbox's own finish, which :meth:`wait` waits for)."""

    def wait(self, proc: subprocess.Popen[bytes], kill_grace_s: float,
             stop: threading.Event) -> None:
        """After the kill: wait for the process (bounded; ``stop``: the job was cancelled)."""

    def close(self, proc: subprocess.Popen[bytes]) -> None:
        """After the wait: nothing the agent started outlives the run."""

    def result(self, ended: AgentExit, *, stopped: bool) -> AgentExit:
        """How the agent ended, as the process was seen to end (``ended``) and as the sandbox
        tells (contained: the box's status and exit code). Raises
        :class:`~.isolation.ContainmentFailed` when the box says the agent never started."""


def for_run(jail: Jail | None, argv: Sequence[str], cwd: Path,
            env: Mapping[str, str]) -> Sandbox:
    """The box when there is one (``jail``), else the CLI uncontained."""
    return Uncontained(list(argv), cwd, dict(env)) if jail is None else Contained(jail, argv[0])


@dataclass
class Uncontained:
    """The CLI started as it is, in its own process group."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    _before: set[tuple[int, str]] | None = field(default=None, repr=False)

    @property
    def program(self) -> str:
        return self.argv[0]

    def start(self) -> subprocess.Popen[bytes]:
        self._before = _children_in_other_sessions() if _set_subreaper(True) else None
        try:
            return subprocess.Popen(
                self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError:
            if self._before is not None:
                _set_subreaper(False)
                self._before = None
            raise

    def stop(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

    def network_events(self) -> list[NetEvent]:
        return []

    ends_when_output_closes = False  # a descendant may hold the output after the CLI exits

    def wait(self, proc: subprocess.Popen[bytes], kill_grace_s: float,
             stop: threading.Event) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=kill_grace_s)

    def close(self, proc: subprocess.Popen[bytes]) -> None:
        if self._before is not None:
            _reap_orphans(proc.pid, self._before)
            _set_subreaper(False)  # orphans of anything else the process runs go to init again
            self._before = None

    def result(self, ended: AgentExit, *, stopped: bool) -> AgentExit:
        return ended


@dataclass
class Contained:
    """The box started instead of the CLI (the box's spec holds the CLI's command line)."""

    jail: Jail
    program: str

    def start(self) -> subprocess.Popen[bytes]:
        # The box's stdin is its control pipe; its stdout and stderr are the agent's.
        return subprocess.Popen(
            self.jail.command(), cwd=self.jail.state_dir, env=_box_env(), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )

    def stop(self, proc: subprocess.Popen[bytes], sig: int) -> None:
        Jail.send(proc.stdin, b"T" if sig == signal.SIGTERM else b"K")

    def network_events(self) -> list[NetEvent]:
        return self.jail.network_events()

    ends_when_output_closes = True  # the box closes it once the agent's namespace is gone

    def wait(self, proc: subprocess.Popen[bytes], kill_grace_s: float,
             stop: threading.Event) -> None:
        """Until the box is gone: it makes the patch before it exits. A cancelled job
        (``stop``, now or while we wait) closes the box's control pipe: the box drops its patch
        and ends within moments; one that is late past its limit is terminated."""
        deadline = time.monotonic() + JAIL_EXIT_WAIT_S
        cancelled = False
        while proc.poll() is None:
            if not cancelled and stop.is_set():
                cancelled = True
                self.close(proc)
                deadline = min(deadline, time.monotonic() + kill_grace_s)
            if time.monotonic() >= deadline:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        if proc.poll() is None:  # late: ended (sudo passes SIGTERM on to it)
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=kill_grace_s)

    def close(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def result(self, ended: AgentExit, *, stopped: bool) -> AgentExit:
        try:  # ContainmentFailed (the agent never started) goes to the caller
            box = self.jail.result(ended.returncode, stopped=stopped)
        except BoxFailed as exc:
            return dataclasses.replace(ended, returncode=None, box=BoxResult(None, exc.status),
                                       box_error=exc.reason)
        return dataclasses.replace(ended, returncode=box.returncode, box=box)


def _box_env() -> dict[str, str]:
    """The box gets its orders from its spec file; only what sudo needs to be found."""
    return {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


# -- the uncontained agent's escaped descendants -----------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _set_subreaper(on: bool) -> bool:
    """Make orphaned descendants re-parent to this process (Linux >= 3.4); False if unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return bool(prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)


def _stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (index 1: ppid, 3: session, 19: start
    time), None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    return data[data.rfind(b")") + 2 :].decode("ascii", "replace").split()


def _children_in_other_sessions() -> set[tuple[int, str]]:
    """Our children outside our session, each as (pid, start time): a pid reused later is a
    different process."""
    me, my_session = os.getpid(), os.getsid(0)
    found = set()
    entries: list[str] = []
    with contextlib.suppress(OSError):  # no /proc mounted: nothing found, nothing killed
        entries = os.listdir("/proc")
    for entry in entries:
        fields = _stat(entry) if entry.isdigit() else None
        if fields is not None and int(fields[1]) == me and int(fields[3]) != my_session:
            found.add((int(entry), fields[19]))
    return found


def _reap_orphans(agent_pid: int, before: set[tuple[int, str]],
                  limit_s: float = ORPHAN_REAP_S) -> None:
    """SIGKILL and reap the agent's descendants that escaped its process group.

    With the subreaper set, every orphan of the agent's tree is re-parented to us. Which of our
    children are the agent's? Not those in our own session: the agent starts a new one, and no
    process can join a session it did not create, so its whole tree is outside ours (this spares
    any child the helper or a test runner started normally). Not those that were already our
    children when the agent started (``before``: e.g. a test's server in its own session). Left:
    only a child started in a new session by another thread of this process during the run,
    which the helper never does.

    Only direct children are killed: their pids cannot be reused before we reap them. Reaping
    a killed child re-parents its own children to us, so the next round finds those; the loop
    ends when no such child is left, or after ``limit_s``.
    """
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        pending = {pid for pid, _ in _children_in_other_sessions() - before} - {agent_pid}
        if not pending:
            return
        for pid in pending:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while pending and time.monotonic() < deadline:
            for pid in list(pending):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    pending.discard(pid)
            if pending:
                time.sleep(0.005)
