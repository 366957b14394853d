"""When to wait and retry a GitHub request: GitHub's documented order of rate-limit headers,
transient server errors, bounded in count and total wait.

https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from cursor_agent_action import retry

T = TypeVar("T")

MAX_ATTEMPTS = 5
"""Attempts per REST call (the first one plus retries)."""
MAX_TOTAL_WAIT_S = 300.0
"""Longest we wait in total for rate limits or transient errors before giving up."""
_SECONDARY_LIMIT_WAIT_S = 60.0  # GitHub: "wait at least one minute" when no header says how long
_TRANSIENT = frozenset({500, 502, 503, 504})


def retry_delay(status: int, headers: Mapping[str, str], message: str, now: float) -> float | None:
    """Seconds to wait before retrying a failed request, or None when retrying cannot help.

    Follows GitHub's documented order: ``retry-after`` first, then ``x-ratelimit-remaining: 0``
    with ``x-ratelimit-reset`` (epoch seconds), then one minute for a secondary rate limit
    that names no time. Transient 5xx errors get a short delay.
    """
    lower = {key.lower(): value for key, value in headers.items()}
    limited = status in (403, 429)
    if limited and lower.get("retry-after", "").strip():
        try:
            return max(0.0, float(lower["retry-after"]))
        except ValueError:
            return _SECONDARY_LIMIT_WAIT_S
    if limited and lower.get("x-ratelimit-remaining", "").strip() == "0":
        try:
            return max(0.0, float(lower.get("x-ratelimit-reset", "")) - now) + 1.0
        except ValueError:
            return _SECONDARY_LIMIT_WAIT_S
    if status == 429 or (status == 403 and "secondary rate limit" in message.lower()):
        return _SECONDARY_LIMIT_WAIT_S
    if status in _TRANSIENT:
        return 2.0
    return None


@dataclass
class Retrier:
    """Runs a request function, waiting and retrying as :func:`retry_delay` says; bounded."""

    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    max_attempts: int = MAX_ATTEMPTS
    max_total_wait: float = MAX_TOTAL_WAIT_S
    log: Callable[[str], None] = lambda _line: None

    def run(
        self,
        attempt: Callable[[], T],
        failure: Callable[[BaseException], tuple[int, Mapping[str, str], str] | None],
    ) -> T:
        """``failure(exc)`` returns (status, headers, message) for HTTP errors, else None."""
        def delay(exc: BaseException, _number: int = 0) -> float | None:
            info = failure(exc)
            return None if info is None else retry_delay(*info, self.clock())

        def announce(exc: BaseException, number: int, seconds: float) -> None:
            status = info[0] if (info := failure(exc)) else 0
            self.log(f"GitHub answered {status}; waiting {seconds:.0f} s before retry "
                     f"{number}/{self.max_attempts - 1}.")

        bounds = retry.Bounds(self.max_attempts, self.max_total_wait, self.sleep)
        try:
            return retry.call(attempt, bounds, retryable=lambda exc: delay(exc) is not None,
                              wait=delay, announce=announce)
        except retry.GaveUp as exc:
            last = exc.__cause__
            if exc.over_budget and exc.delay is not None:
                raise RateLimitWaitTooLong(exc.delay, exc.waited) from last
            raise last if last is not None else exc from None


class RateLimitWaitTooLong(Exception):
    def __init__(self, delay: float, waited: float) -> None:
        super().__init__(f"retry in {delay:.0f} s after waiting {waited:.0f} s")
        self.delay = delay
        self.waited = waited
