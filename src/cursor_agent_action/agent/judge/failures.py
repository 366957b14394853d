"""How the CLI fails: the known failures it reports on stderr, each with its fix, and a
paragraph on why a run without a result event ended.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from cursor_agent_action.agent.contain.sandbox import AgentExit, EndedBy
from cursor_agent_action.options import number_text
from cursor_agent_action.runner_io import one_line

# -- known CLI failures ------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownFailure:
    """A failure the CLI reports on stderr, with what to do about it."""

    title: str
    pattern: re.Pattern[str]
    hint: str
    transient: bool = False
    max_retries: int | None = None  # a cap on the retries of this failure (None: max-retries)


def _known(title: str, pattern: str, hint: str, transient: bool = False,
           max_retries: int | None = None) -> KnownFailure:
    return KnownFailure(title, re.compile(pattern, re.IGNORECASE), hint, transient, max_retries)


SANDBOX_FAILURE = "the CLI's own sandbox is not available"

# First match wins: the free-plan message also names models, so it comes before unknown-model.
KNOWN_FAILURES = (
    _known(
        SANDBOX_FAILURE,
        r"sandbox mode is enabled but not available|sandbox failed to start",
        "The CLI could not start its own sandbox for shell commands (Linux: it needs Landlock "
        "and unprivileged user namespaces, which AppArmor restricts on Ubuntu 24.04). The "
        "action passes --sandbox disabled where its check finds the runner cannot host that "
        "sandbox, and the action's box contains the agent either way: re-run the job; if it "
        "fails again, the check and the CLI disagree on this runner image, so report it "
        "(docs/cli-compat.md, \"The CLI's own sandbox\").",
    ),
    _known(
        "authentication failed",
        r"authentication required|not authenticated|invalid api key|api key is invalid"
        r"|unauthori[sz]ed",
        "Create an API key in the Cursor dashboard (Integrations > User API Keys), store it as "
        "a repository secret and pass it as the action's api-key input (the CLI gets it as "
        "CURSOR_API_KEY).",
    ),
    _known(
        "named models need a paid plan",
        r"named models unavailable|free plans can only use auto",
        "Leave the model input empty (Auto), or use an API key of an account on a paid plan.",
    ),
    _known(
        "unknown model",
        r"cannot use this model|unknown model|model not found|invalid model",
        "Use one of the models the message lists (run 'cursor-agent models' locally), or leave "
        "the model input empty for Auto.",
    ),
    _known(
        "usage limit reached",
        r"usage limit|spending limit|spend limit",
        "Wait until the limit resets or raise it in the Cursor dashboard (Settings > Usage). "
        "Not retried: retrying cannot help.",
    ),
    _known(
        "workspace trust required",
        r"workspace trust|trust th(is|e) workspace|pass --trust",
        "Install a CLI version whose --help lists --trust (the action passes it then), or use "
        "a permissions preset that allows writes (the action then passes --force, which implies "
        "trust).",
    ),
    _known(
        "resource exhausted",
        r"resource.?exhausted",
        "Cursor answered resource_exhausted, retried once: this is often a plan or quota limit "
        "(the account's usage or spending limit, or a model the plan does not include), not a "
        "passing overload. Check usage and plan in the Cursor dashboard, or rerun later.",
        transient=True,
        max_retries=1,
    ),
    _known(
        "rate limited",
        r"rate.?limit|too many requests|\b429\b",
        "Cursor's API rate-limited the run and the retries ran out. Rerun later, or run fewer "
        "agent jobs at once (a workflow-level concurrency group).",
        transient=True,
    ),
    _known(
        "Cursor API unavailable",
        r"\[unavailable\]|service unavailable|temporarily unavailable|\b50[234]\b"
        r"|ECONNRESET|ETIMEDOUT|ECONNREFUSED|ENOTFOUND|EAI_AGAIN",
        "Cursor's API could not be reached and the retries ran out. Rerun the job later "
        "(status: https://status.cursor.com); on self-hosted runners check the proxy settings.",
        transient=True,
    ),
)


def classify(stderr: str) -> KnownFailure | None:
    """The known failure that ``stderr`` reports, if any."""
    return next((known for known in KNOWN_FAILURES if known.pattern.search(stderr)), None)


def stderr_excerpt(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return one_line(" / ".join(lines[-3:]), 400) if lines else ""


def explain_exit(ended: AgentExit, timeout_minutes: float, max_tool_calls: int | None = None,
                 ) -> str:
    """One paragraph on why a run without a ``result`` event failed, with a fix."""
    if ended.ended_by is EndedBy.BUDGET:
        return (
            f"The agent started more tool calls than max-tool-calls ({max_tool_calls}) allows "
            "and was stopped. Fix: raise max-tool-calls or give the agent a smaller task."
        )
    if ended.ended_by is EndedBy.TIMEOUT:
        return (
            f"The agent did not finish within {number_text(timeout_minutes)} minute"
            f"{'' if timeout_minutes == 1 else 's'} and was "
            "stopped. "
            "Fix: raise timeout-minutes or give the agent a smaller task."
        )
    if ended.ended_by is EndedBy.CANCELLED:
        return ("The run was cancelled (the helper got SIGTERM/SIGINT) and the agent was "
                "stopped. Fix: nothing, if the job was cancelled on purpose; otherwise check "
                "the job's own timeout-minutes.")
    excerpt = stderr_excerpt(ended.stderr)
    said = f' It said: "{excerpt}".' if excerpt else " It printed nothing on stderr."
    known = classify(ended.stderr)
    if known is not None:
        return f"cursor-agent failed: {known.title}.{said} Fix: {known.hint}"
    code = ended.returncode
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return (
            f"cursor-agent was killed by {name} before it finished.{said} Fix: if nothing "
            "else killed it, the runner may have run out of memory; try a larger runner."
        )
    if code == 0:
        return (
            "cursor-agent exited with code 0 but never sent its final result event, so the run "
            f"did not finish.{said} Fix: some CLI builds do this when the workspace is not "
            "trusted; install a CLI version that accepts --trust, and check the transcript."
        )
    return (
        f"cursor-agent exited with code {code} without a final result event.{said} Fix: see "
        "its stderr (quoted here and in the job summary) and the transcript file."
    )


