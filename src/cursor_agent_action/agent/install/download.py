"""Downloading the CLI package over HTTP: bounded retries with backoff, size and time caps."""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, TypeVar

import httpx

from cursor_agent_action import retry as retries
from cursor_agent_action.errors import InstallError

MAX_ARCHIVE_BYTES = 1024**3
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter (``sleep`` injectable for tests)."""

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    total_seconds: float = 900.0
    """Wall-clock budget for the whole fetch, all attempts and waits included."""
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int) -> float:
        """Wait before attempt ``attempt + 1``: full backoff times a jitter in [0.5, 1)."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return backoff * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not crypto


class Retryable(Exception):
    """A failure worth another attempt (network error, 5xx, 429, truncated body)."""


RETRYABLE = (Retryable, httpx.TransportError)


# -- HTTP --------------------------------------------------------------------------------------


def fetch_with_retries(
    what: str,
    url: str,
    attempt: Callable[[float], T],
    retry: RetryPolicy,
    log: Callable[[str], None],
) -> T:
    """Call ``attempt(deadline)`` until it succeeds, retrying :class:`Retryable` failures
    (:func:`cursor_agent_action.retry.call`) while the attempts and the deadline allow."""
    deadline = time.monotonic() + retry.total_seconds

    def wait(_exc: BaseException, number: int) -> float | None:
        delay = retry.delay(number)
        return None if time.monotonic() + delay > deadline else delay

    def announce(exc: BaseException, number: int, delay: float) -> None:
        log(f"{what}: {_reason(exc)}; retrying in {delay:.1f} s (attempt {number + 1} of "
            f"{retry.attempts}).")

    bounds = retries.Bounds(retry.attempts, retry.total_seconds, retry.sleep)
    try:
        return retries.call(lambda: attempt(deadline), bounds, wait=wait, announce=announce,
                            retryable=lambda exc: isinstance(exc, RETRYABLE))
    except retries.GaveUp as exc:
        raise InstallError(
            f"{what} failed after {exc.attempts} attempt(s): {_reason(exc.__cause__)} "
            f"(URL: {url}).",
            "Check the runner's network access to the URL and re-run the job; the "
            "download is retried with backoff on network errors and 5xx responses.",
        ) from exc.__cause__


def _reason(exc: BaseException | None) -> str:
    return str(exc) or type(exc).__name__


def check_status(response: httpx.Response, what: str, *, missing: str, hint: str) -> None:
    status = response.status_code
    if status == 200:
        return
    if status >= 500 or status == 429:
        raise Retryable(f"HTTP {status}")
    if status in (403, 404):  # how the download server answers a file that does not exist
        raise InstallError(f"{what}: HTTP {status} from {response.url}: {missing}", hint)
    raise InstallError(
        f"{what}: unexpected HTTP {status} from {response.url}.",
        "Check --base-url/--latest-url (or leave them unset for the vendor's servers).",
    )


def download(
    client: httpx.Client, url: str, dest: Path, deadline: float, *, what: str, missing: str,
    hint: str,
) -> str:
    """One download attempt into ``dest`` (raw bytes: no content decoding); returns the
    SHA-256 (hex) of the bytes written, hashed as they arrive."""
    with client.stream("GET", url) as response:
        check_status(
            response,
            what,
            missing=missing,
            hint=hint,
        )
        header = response.headers.get("content-length", "")
        expected = int(header) if header.isdigit() else None
        if expected is not None and expected > MAX_ARCHIVE_BYTES:
            _too_large(url)
        written = 0
        digest = hashlib.sha256()
        with dest.open("wb") as handle:
            try:
                for chunk in response.iter_raw():
                    written += len(chunk)
                    if written > MAX_ARCHIVE_BYTES:
                        _too_large(url)
                    if time.monotonic() > deadline:
                        raise Retryable("time budget for the download used up")
                    handle.write(chunk)
                    digest.update(chunk)
            except httpx.TransportError as exc:
                # httpx enforces Content-Length: a body cut short ends here, never silently.
                raise Retryable(
                    f"download interrupted after {written} of "
                    f"{expected if expected is not None else 'unknown'} bytes, truncated "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
    return digest.hexdigest()


def _too_large(url: str) -> NoReturn:
    raise InstallError(
        f"the package at {url} is larger than {MAX_ARCHIVE_BYTES} bytes; refusing it.",
        "Check --base-url: the Cursor CLI package is far smaller.",
    )


