"""When the agent is started again: the decision as a table, one row per case that matters.

The failures are the real known ones (``failures.classify`` of the CLI's own words), so a
change of what counts as transient shows here too.
"""

from __future__ import annotations

import dataclasses

import pytest

from cursor_agent_action.agent.contain.sandbox import EndedBy
from cursor_agent_action.agent.judge.attempts import Next, StartSummary, next_step, retry_delay
from cursor_agent_action.agent.judge.failures import SANDBOX_FAILURE, KnownFailure, classify
from cursor_agent_action.agent.launch.run_options import MAX_RETRY_DELAY_S


def _known(stderr: str) -> KnownFailure:
    found = classify(stderr)
    assert found is not None, stderr
    return found


RATE = _known("Error: 429 Too Many Requests: rate limit exceeded")
EXHAUSTED = _known("ConnectError: [resource_exhausted] Error")
AUTH = _known("Error: Authentication required. Please run 'cursor-agent login' first")
SANDBOX = _known("Error: sandbox mode is enabled but not available on this system")

# A transient failure on the first of three allowed starts, before any event: retried.
BASE = StartSummary(number=1, allowed=3, ended_by=EndedBy.EXIT, has_result=False, tool_calls=0,
             tampered=False, box_error=False, failure=RATE, seen=1, cli_sandbox="enabled")

TABLE: list[tuple[str, dict[str, object], Next]] = [
    ("transient before any tool", {}, Next.RETRY),
    ("the last allowed start", {"number": 3}, Next.CONCLUDE),
    ("second of three", {"number": 2}, Next.RETRY),
    ("no retries allowed", {"allowed": 1}, Next.CONCLUDE),
    ("a tool ran: the work could repeat", {"tool_calls": 1}, Next.CONCLUDE),
    ("the agent answered", {"has_result": True}, Next.CONCLUDE),
    ("stopped by the timeout", {"ended_by": EndedBy.TIMEOUT}, Next.CONCLUDE),
    ("cancelled", {"ended_by": EndedBy.CANCELLED}, Next.CONCLUDE),
    ("over the tool-call budget", {"ended_by": EndedBy.BUDGET}, Next.CONCLUDE),
    ("the CLI configuration was touched", {"tampered": True}, Next.CONCLUDE),
    ("the box failed closed", {"box_error": True}, Next.CONCLUDE),
    ("an unknown failure", {"failure": None}, Next.CONCLUDE),
    ("a known failure retrying cannot help", {"failure": AUTH}, Next.CONCLUDE),
    ("resource exhausted, first time", {"failure": EXHAUSTED, "seen": 1}, Next.RETRY),
    ("resource exhausted, its own cap reached", {"failure": EXHAUSTED, "seen": 2},
     Next.CONCLUDE),
    ("the CLI sandbox failed, sandbox on", {"failure": SANDBOX}, Next.WITHOUT_CLI_SANDBOX),
    ("the CLI sandbox failed on the last start: not counted", {"failure": SANDBOX, "number": 3},
     Next.WITHOUT_CLI_SANDBOX),
    ("the CLI sandbox failed, already off", {"failure": SANDBOX, "cli_sandbox": "disabled"},
     Next.CONCLUDE),
    ("the CLI sandbox failed, no sandbox flag", {"failure": SANDBOX, "cli_sandbox": ""},
     Next.CONCLUDE),
    ("the CLI sandbox failed after a tool ran", {"failure": SANDBOX, "tool_calls": 2},
     Next.CONCLUDE),
]


def test_the_sandbox_failure_is_the_one_the_decision_names() -> None:
    assert SANDBOX.title == SANDBOX_FAILURE
    assert RATE.transient
    assert EXHAUSTED.max_retries == 1
    assert not AUTH.transient


@pytest.mark.parametrize(("case", "changes", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_next_step(case: str, changes: dict[str, object], expected: Next) -> None:
    assert next_step(dataclasses.replace(BASE, **changes)) is expected, case  # type: ignore[arg-type]


def test_retry_delay_doubles_up_to_the_cap() -> None:
    assert [retry_delay(10, n) for n in (1, 2, 3)] == [10, 20, 40]
    assert retry_delay(100, 3) == MAX_RETRY_DELAY_S
