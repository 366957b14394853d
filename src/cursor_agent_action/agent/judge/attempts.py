"""When the agent is started again: one pure decision on how its last start ended.

A start that failed before any tool ran, for a reason known to pass (a rate limit, the API
unavailable), is retried while ``max-retries`` allows and the failure's own cap does: a retry
cannot repeat the agent's work. A start whose CLI sandbox could not come up, before any event,
runs once more with that sandbox off (the action's box holds either way); that start is not
counted. Everything else concludes the run.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from cursor_agent_action.agent.contain.sandbox import EndedBy
from cursor_agent_action.agent.judge.failures import SANDBOX_FAILURE, KnownFailure
from cursor_agent_action.agent.launch.run_options import MAX_RETRY_DELAY_S


class Next(enum.Enum):
    """What follows a start of the agent."""

    CONCLUDE = "conclude"
    RETRY = "retry"
    WITHOUT_CLI_SANDBOX = "without-cli-sandbox"


@dataclass(frozen=True)
class StartSummary:
    """How one start of the agent ended, as far as the next step goes."""

    number: int
    """Counted starts so far, this one included (a start without the CLI sandbox is not)."""
    allowed: int
    """Counted starts allowed: ``max-retries`` + 1."""
    ended_by: EndedBy
    """How the process ended (``exit``, ``timeout``, ``cancelled``, ``budget``...)."""
    has_result: bool
    tool_calls: int
    tampered: bool
    """The CLI's configuration was touched during the start."""
    box_error: bool
    """The box ended without a proper status (it fails closed: never started again)."""
    failure: KnownFailure | None
    """The known failure its stderr shows, if any."""
    seen: int
    """Starts that ended with that known failure, this one included."""
    cli_sandbox: str
    """The CLI's sandbox mode this start ran with (``enabled``, ``disabled`` or "")."""


def next_step(ended: StartSummary) -> Next:
    """What follows ``ended``."""
    known = ended.failure
    silent = not ended.has_result and not ended.tool_calls  # before any event that counts
    if (known is not None and known.title == SANDBOX_FAILURE and ended.cli_sandbox == "enabled"
            and silent):
        return Next.WITHOUT_CLI_SANDBOX
    retry = (
        known is not None and known.transient and silent and ended.ended_by is EndedBy.EXIT
        and ended.number < ended.allowed and not ended.tampered and not ended.box_error
        and (known.max_retries is None or ended.seen <= known.max_retries)
    )
    return Next.RETRY if retry else Next.CONCLUDE


def retry_delay(first_s: float, number: int) -> float:
    """Seconds to wait after counted start ``number`` before the next: doubling from
    ``first_s``, at most :data:`MAX_RETRY_DELAY_S`."""
    return min(first_s * 2.0 ** (number - 1), MAX_RETRY_DELAY_S)
