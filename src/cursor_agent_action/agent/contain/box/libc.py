"""The C library, for the few calls Python's ``os`` lacks (``unshare``, ``mount``, ``prctl``)."""

from __future__ import annotations

import ctypes
import signal
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def libc() -> Any:
    """The C library, ``errno`` kept (read it with :func:`ctypes.get_errno`)."""
    return ctypes.CDLL(None, use_errno=True)


def die_with_parent() -> None:
    """This process gets SIGKILL when the thread that forked it ends (cleared by a change of
    identity: call it after ``setresuid``)."""
    libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def set_subreaper() -> bool:
    """This process adopts its descendants' orphans (Linux 3.4+); whether it could."""
    return int(libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
