"""Turns for tests that cannot share the machine.

The suite runs in parallel (pytest-xdist workers). Most tests share nothing but the CPU; two
kinds need turns:

- a test marked ``alone`` assumes no other test of the suite runs beside it (it watches the
  host's /tmp, say): :func:`turn` gives it the suite to itself. Every other test holds the room
  shared; an ``alone`` test waits at the gate for the room to empty, and while it waits no
  newcomer gets in, so it cannot be starved;
- a test that edits a machine-wide file (/etc/hosts) holds :func:`machine_lock` for it, a lock
  every suite on the machine takes, so two never read, edit and restore the file interleaved.

Both are ``flock`` locks, released by the kernel when their holder dies; a wait is bounded.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

WAIT_SECONDS = 900.0  # an alone test waits for the tests running beside it (300 s cap each)
MACHINE_LOCKS = Path("/tmp/cursor-agent-action-tests")


def _take(handle: IO[bytes], how: int, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            fcntl.flock(handle, how | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited {WAIT_SECONDS:.0f} s for {what}") from None
            time.sleep(0.02)
        else:
            return


@contextlib.contextmanager
def turn(directory: Path, *, alone: bool) -> Iterator[None]:
    """Hold the room in ``directory`` (every process of one run uses the same): alone, or
    shared with the other tests that are not."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / "gate.lock").open("ab") as gate, (directory / "room.lock").open("ab") as room:
        _take(gate, fcntl.LOCK_EX, "the gate")
        try:
            _take(room, fcntl.LOCK_EX if alone else fcntl.LOCK_SH, "the room")
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)


@contextlib.contextmanager
def machine_lock(name: str) -> Iterator[None]:
    """The machine-wide lock ``name`` (every suite on the machine takes the same)."""
    with lock_in(MACHINE_LOCKS, name, "held by another test run"):
        yield


@contextlib.contextmanager
def lock_in(directory: Path, name: str, holder: str = "held by another worker") -> Iterator[None]:
    """The lock ``name`` in ``directory``: whoever takes the same one waits (bounded)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"{name}.lock"
    with path.open("ab") as handle:
        _take(handle, fcntl.LOCK_EX, f"{path} ({holder})")
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_directory(basetemp: str | None) -> Path | None:
    """Where the workers of one run keep their turns: beside their base temporary directories
    (``<run>/popen-gw0``); None outside a parallel run (nothing to share)."""
    if not os.environ.get("PYTEST_XDIST_WORKER") or not basetemp:
        return None
    return Path(basetemp).parent / "turns"
