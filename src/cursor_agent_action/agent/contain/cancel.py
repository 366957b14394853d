"""A cancelled job, as the helper sees it: the runner sends SIGINT, then SIGTERM 7.5 s later
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-cancellation).

While the agent runs, the signals become an event the run loop reads (it stops the agent and
its box in order); before the agent starts, inside :func:`interruptible`, they end the work at
once (hashing a large tree takes many seconds and leaves nothing to restore).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


@contextlib.contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """Turn SIGTERM/SIGINT (job cancelled) into an event the run loop checks; restore after."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def interruptible(stop: threading.Event) -> Iterator[None]:
    """Inside, SIGTERM/SIGINT end the work at once (``KeyboardInterrupt``: exit 130, a child
    such as git killed by ``subprocess``): for the steps before the agent starts (hashing a
    large tree takes many seconds), which leave nothing to restore. A stop that came earlier
    ends it on entry."""
    if stop.is_set():
        raise KeyboardInterrupt

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
