"""The one retry helper: bounded in attempts and in total wait, and a failure not worth another
attempt is raised as it is, at once. No real sleeping: ``sleep`` records the waits."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cursor_agent_action import retry


class Flaky(Exception):
    pass


class Broken(Exception):
    pass


def _attempts(*outcomes: BaseException | str) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def attempt() -> str:
        calls.append(len(calls) + 1)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return calls, attempt


def _call(attempt: Callable[[], str], bounds: retry.Bounds, waits: list[float | None],
          said: list[tuple[int, float]]) -> str:
    return retry.call(
        attempt, bounds,
        retryable=lambda exc: isinstance(exc, Flaky),
        wait=lambda _exc, number: waits[number - 1],
        announce=lambda _exc, number, seconds: said.append((number, seconds)),
    )


def test_retries_until_it_succeeds_waiting_as_told() -> None:
    slept: list[float] = []
    said: list[tuple[int, float]] = []
    calls, attempt = _attempts(Flaky(), Flaky(), "done")
    assert _call(attempt, retry.Bounds(5, 100, slept.append), [1.5, 3.0], said) == "done"
    assert calls == [1, 2, 3]
    assert slept == [1.5, 3.0]
    assert said == [(1, 1.5), (2, 3.0)]


def test_a_failure_not_worth_retrying_is_raised_at_once() -> None:
    slept: list[float] = []
    calls, attempt = _attempts(Flaky(), Broken("as it is"), "never")
    with pytest.raises(Broken, match="as it is"):
        _call(attempt, retry.Bounds(5, 100, slept.append), [1.0, 1.0], [])
    assert calls == [1, 2]


def test_the_attempts_run_out() -> None:
    slept: list[float] = []
    calls, attempt = _attempts(Flaky("1"), Flaky("2"), Flaky("3"), "never")
    with pytest.raises(retry.GaveUp) as info:
        _call(attempt, retry.Bounds(3, 100, slept.append), [1.0, 1.0, 1.0], [])
    assert calls == [1, 2, 3]
    assert (info.value.attempts, info.value.waited, info.value.over_budget) == (3, 2.0, False)
    assert str(info.value.__cause__) == "3"


def test_a_wait_past_the_total_gives_up_before_waiting() -> None:
    slept: list[float] = []
    calls, attempt = _attempts(Flaky(), Flaky(), "never")
    with pytest.raises(retry.GaveUp) as info:
        _call(attempt, retry.Bounds(5, 10, slept.append), [6.0, 6.0], [])
    assert calls == [1, 2]
    assert slept == [6.0]
    assert (info.value.over_budget, info.value.delay, info.value.waited) == (True, 6.0, 6.0)


def test_no_time_left_gives_up() -> None:
    calls, attempt = _attempts(Flaky(), "never")
    with pytest.raises(retry.GaveUp) as info:
        _call(attempt, retry.Bounds(5, 10, lambda _s: None), [None], [])
    assert calls == [1]
    assert not info.value.over_budget
