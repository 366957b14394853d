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
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError), open(f"/proc/{entry}/status", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
    return found


def kill_all(uid: int, limit_s: float = KILL_WAIT_S) -> bool:
    """Every process of ``uid`` killed (a child of ours takes that uid and kills all it may
    signal, again until none is left); whether none is left, within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while _processes_of(uid):
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
        time.sleep(0.02)
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


def _descendants(parents: dict[int, int], top: int) -> list[int]:
    """Every process below ``top`` in ``parents``, at any depth."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found, pending = [], [top]
    while pending:
        for child in children.get(pending.pop(), ()):
            found.append(child)
            pending.append(child)
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
    chain of processes, each the parent of the next, dies in one round, not a generation a
    round), round after round until none is left: this program is their subreaper, so what
    one forked meanwhile comes back to it; whether none is left, within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while found := _descendants(_parents(), os.getpid()):
        if time.monotonic() > deadline:
            return False
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        time.sleep(0.01)
    return True
