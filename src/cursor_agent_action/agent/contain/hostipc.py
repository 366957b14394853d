"""System V IPC objects the agent left, where it shares the host's IPC namespace (the Landlock
tiers: the box has its own, gone with it).

A shared-memory segment, semaphore set or message queue outlives the process that made it; the
next run on the machine (the same agent user, or anyone, if its mode lets them) could read it.
After the run every object the agent's user owns or created (``uid`` or ``cuid``: an owner may
hand an object to another uid, never its creator) is removed, except those that were there
before it started (``keep``: where the agent is the runner's own user, the runner's objects
stay). POSIX message queues are refused by the seccomp filter (:mod:`.box.seccomp`); POSIX
shared memory lives in ``/dev/shm``, which the agent cannot write under Landlock.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Collection
from dataclasses import dataclass

from cursor_agent_action.agent.contain.box.libc import libc

IPC_RMID = 0
KINDS = ("shm", "sem", "msg")
# /proc/sysvipc/KIND: the columns of the id, the owner and the creator
_COLUMNS = {"shm": (1, 7, 9), "sem": (1, 4, 6), "msg": (1, 7, 9)}


@dataclass(frozen=True, order=True)
class IpcObject:
    """One System V IPC object: its kind (shm, sem, msg) and id."""

    kind: str
    ident: int


def objects_of(uid: int) -> set[IpcObject]:
    """The objects ``uid`` owns or created, in this IPC namespace."""
    found: set[IpcObject] = set()
    for kind in KINDS:
        ident, owner, creator = _COLUMNS[kind]
        try:
            with open(f"/proc/sysvipc/{kind}", encoding="ascii") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            with contextlib.suppress(IndexError, ValueError):
                if uid in (int(fields[owner]), int(fields[creator])):
                    found.add(IpcObject(kind, int(fields[ident])))
    return found


def _remove(item: IpcObject) -> bool:
    lib = libc()
    if item.kind == "shm":
        done = lib.shmctl(ctypes.c_int(item.ident), IPC_RMID, None)
    elif item.kind == "sem":
        done = lib.semctl(ctypes.c_int(item.ident), 0, IPC_RMID)
    else:
        done = lib.msgctl(ctypes.c_int(item.ident), IPC_RMID, None)
    return int(done) == 0


def remove_left(uid: int, keep: Collection[IpcObject] = ()) -> list[IpcObject]:
    """Remove ``uid``'s objects but ``keep``; those that could not be removed.

    Removed as ``uid`` (an owner or creator may remove an object; root may only with
    CAP_SYS_ADMIN, which the container-job tier lacks): when this process is another user, a
    child takes that uid for it."""
    pending = sorted(objects_of(uid) - set(keep))
    if not pending:
        return []
    if os.geteuid() == uid:
        return [item for item in pending if not _remove(item)]
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - a forked child, answering through the pipe
        try:
            os.setgroups([])
            os.setresuid(uid, uid, uid)
            failed = [item for item in pending if not _remove(item)]
            os.write(write_end, ",".join(f"{item.kind}:{item.ident}" for item in failed).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        said = answer.read().decode("ascii", "replace")
    os.waitpid(child, 0)
    refused = {word for word in said.split(",") if word}
    still = objects_of(uid)
    return [item for item in pending if f"{item.kind}:{item.ident}" in refused or item in still]
