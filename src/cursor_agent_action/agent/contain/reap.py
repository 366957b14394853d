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


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError), \
                    open(f"/proc/{entry}/stat", "rb") as handle:
                data = handle.read()
                if int(data[data.rfind(b")") + 2:].split()[1]) == me:
                    found.append(int(entry))
    return found


def kill_descendants(limit_s: float = KILL_WAIT_S) -> bool:
    """Every descendant of this program killed (it is their subreaper: each orphan is
    re-parented to it, so killing and reaping its children, round after round, reaches them
    all); whether none is left, within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while children := _children():
        if time.monotonic() > deadline:
            return False
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return True
