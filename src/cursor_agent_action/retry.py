"""Bounded retries: the one helper the GitHub API calls and the CLI download share.

The caller says which failures are worth another attempt, how long to wait before the next one
(a server's ``retry-after``, a backoff with jitter; None when there is no time left) and what to
log; the helper bounds the attempts and the total wait and gives up with :class:`GaveUp`, the
last failure as its cause. A failure not worth another attempt is raised as it is, at once.
tenacity (https://tenacity.readthedocs.io/) runs the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn, TypeVar

import tenacity

T = TypeVar("T")


class GaveUp(Exception):
    """Retrying stopped after ``attempts`` attempts and ``waited`` seconds of waiting.
    ``over_budget``: the next wait (``delay`` seconds) would have passed the total allowed; else
    the attempts ran out or the caller had no time left for another."""

    def __init__(self, attempts: int, waited: float, delay: float | None, *,
                 over_budget: bool) -> None:
        super().__init__(f"gave up after {attempts} attempt(s) and {waited:.0f} s of waiting")
        self.attempts = attempts
        self.waited = waited
        self.delay = delay
        self.over_budget = over_budget


@dataclass(frozen=True)
class Bounds:
    """At most ``attempts`` attempts (the first included) and ``total_wait_s`` seconds of waiting
    between them; ``sleep`` injectable for tests."""

    attempts: int
    total_wait_s: float
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)


def call(
    attempt: Callable[[], T],
    bounds: Bounds,
    *,
    retryable: Callable[[BaseException], bool],
    wait: Callable[[BaseException, int], float | None],
    announce: Callable[[BaseException, int, float], None],
) -> T:
    """``attempt()`` until it succeeds. After failure ``exc`` of attempt ``n``: raised as it is
    unless ``retryable(exc)``; else ``wait(exc, n)`` seconds are waited (``announce(exc, n,
    seconds)`` first) when the bounds allow, or :class:`GaveUp` is raised from ``exc``."""
    delays: dict[int, float | None] = {}  # by attempt: tenacity asks wait and stop, any order

    def delay(state: tenacity.RetryCallState) -> float | None:
        if state.attempt_number not in delays:
            delays[state.attempt_number] = wait(_failure(state), state.attempt_number)
        return delays[state.attempt_number]

    def out_of_bounds(state: tenacity.RetryCallState) -> bool:
        seconds = delay(state)
        return (state.attempt_number >= bounds.attempts or seconds is None
                or state.idle_for + seconds > bounds.total_wait_s)

    def give_up(state: tenacity.RetryCallState) -> NoReturn:
        seconds = delay(state)
        over = state.attempt_number < bounds.attempts and seconds is not None
        raise GaveUp(state.attempt_number, state.idle_for, seconds,
                     over_budget=over) from _failure(state)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        announce(_failure(state), state.attempt_number, delay(state) or 0.0)

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(retryable), wait=lambda state: delay(state) or 0.0,
        stop=out_of_bounds,
        retry_error_callback=give_up, before_sleep=before_sleep, sleep=bounds.sleep,
    )
    return retrying(attempt)


def _failure(state: tenacity.RetryCallState) -> BaseException:
    """The failure of the attempt that just ended (the helper looks only at failures)."""
    exc = state.outcome.exception() if state.outcome is not None else None
    if exc is None:  # pragma: no cover - tenacity retries only on a retryable exception
        raise AssertionError("retried an attempt that did not fail")
    return exc
