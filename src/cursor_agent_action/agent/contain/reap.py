"""Ending what the agent left running, where there is no PID namespace to end with it (the
Landlock tiers, :mod:`.lockdown`): by the agent's own user id (root's tier, the user being the
agent's alone), or as this program's descendants (as the runner's own user: it is their
subreaper, so an orphan comes back to it however it forked)."""

from __future__ import annotations

import contextlib
import os
import signal
import time

KILL_WAIT_S = 5.0


def _processes_of(uid: int) -> list[int]:
    """The live processes of ``uid``: a zombie is not one (it runs nothing, and under an init
    that reaps nothing, a job container's, it would stay), unless a thread of it still runs
    (its first thread ended alone: red team 6)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/status", "rb") as handle:
                zombie = False
                for line in handle:
                    if line.startswith(b"State:"):
                        zombie = line.split()[1:2] == [b"Z"]
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid and (not zombie or _threads_run(entry)):
                            found.append(int(entry))
                        break
    return found


def _threads_run(pid: str) -> bool:
    """Whether a thread of process ``pid`` is not a zombie."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        with contextlib.suppress(OSError, IndexError), \
                open(f"/proc/{pid}/task/{task}/stat", "rb") as handle:
            data = handle.read()
            if data[data.rfind(b")") + 2:].split()[0] != b"Z":
                return True
    return False


def kill_all(uid: int, limit_s: float = KILL_WAIT_S) -> bool:
    """Every process of ``uid`` killed (a child of ours takes that uid and kills all it may
    signal, again until none is left); whether none is left, within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    first = True  # once whatever is found: what no count sees still gets the signal
    while first or _processes_of(uid):
        first = False
        if time.monotonic() > deadline:
            return False
        killer = os.fork()
        if killer == 0:  # pragma: no cover - a forked child
            try:
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(killer, 0)
        _reap()  # what came back to this program (its subreaper) and died
        time.sleep(0.02)
    _reap()  # the last of them, dead since: none is left a zombie of ours
    return True


def _parents() -> dict[int, int]:
    """Every process's parent, from ``/proc`` (one pass; a process gone meanwhile is left
    out)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError), \
                    open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
                found[int(entry)] = int(data[data.rfind(b")") + 2:].split()[1])
    return found


def _scanned(top: int) -> list[int]:
    """Every process below ``top``, at any depth, from a scan of all of ``/proc``."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, pending = [], [top]
    while pending:
        for child in children.get(pending.pop(), ()):
            found.append(child)
            pending.append(child)
    return found


def _children(pid: int) -> list[int] | None:
    """``pid``'s children, from its threads' ``children`` files (Linux 4.2+, where the kernel
    has them: reading them is quick enough to catch a process that forks and exits over and
    over); None where there are none."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []  # gone
    found: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as handle:
                found += [int(child) for child in handle.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{task}"):
                continue  # the thread is gone
            return None
        except OSError:
            continue
    return found


def _descendants(top: int) -> list[int]:
    """Every process below ``top``, at any depth: from ``children`` files where the kernel has
    them, else from a scan of ``/proc``."""
    found, pending = [], [top]
    while pending:
        children = _children(pending.pop())
        if children is None:
            return _scanned(top)
        found += children
        pending += children
    return found


def _reap() -> None:
    """Every child of ours that has ended, waited for (re-parented orphans included)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_descendants(limit_s: float = KILL_WAIT_S) -> bool:
    """Every descendant of this program killed, at any depth and all at once each round (a
    chain of processes, each the parent of the next, dies in one round), round after round
    with no pause until none is left: this program is their subreaper, so what one forked
    meanwhile comes back to it, and a process that forks and exits over and over to change its
    pid is found again at once; whether none is left, within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    me = os.getpid()
    while found := _descendants(me):
        if time.monotonic() > deadline:
            return False
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
    return True
