"""A clock for the agent's deadline that waits on what the test reads, not on time.

A test of the timeout gives the run a deadline of a fraction of a second. On a loaded machine
the box and the stand-in's start can take longer than that, and the run then times out before
the agent has started: there is no record of it, nothing to check. :class:`HeldClock` stands
still until ``ready()`` holds (the stand-in recorded its start, the agent wrote its mark), then
runs on at the real clock's pace: the deadline falls that long *after* the agent started,
however slow the machine. It waits on ``ready()`` for at most ``bound_s`` of real time.

Put it in place of the ``time`` module of :mod:`cursor_agent_action.agent.contain.process` (the only
one that reads the deadline's clock): ``monkeypatch.setattr(process, "time", HeldClock(...))``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


class HeldClock:
    def __init__(self, ready: Callable[[], bool], bound_s: float = 60.0) -> None:
        self._ready = ready
        self._start = time.monotonic()
        self._bound_s = bound_s
        self._released_at: float | None = None

    @property
    def released(self) -> bool:
        """Whether ``ready()`` held (or the bound passed) while the clock was read."""
        return self._released_at is not None

    def monotonic(self) -> float:
        now = time.monotonic()
        if self._released_at is None:
            if not (self._ready() or now - self._start > self._bound_s):
                return self._start
            self._released_at = now
        return self._start + (now - self._released_at)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)


def has_line(path: Path) -> Callable[[], bool]:
    """``ready`` once ``path`` holds a whole line (a record written to its end)."""

    def ready() -> bool:
        try:
            return b"\n" in path.read_bytes()
        except OSError:
            return False

    return ready
