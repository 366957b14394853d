"""Where the agent may run, for the options asked: the isolation, and for ``view-commit`` (a
fork's head shown in the box, never checked out) the walled box and the commit in the
repository's objects, or a plain refusal before anything is installed in the box or started."""

from __future__ import annotations

from cursor_agent_action.agent.contain.isolation import Isolation, decide
from cursor_agent_action.agent.launch.run_options import RunOptions
from cursor_agent_action.errors import SetupError


def decide_isolation(options: RunOptions) -> Isolation:
    """The isolation the options ask for; with ``view-commit``, the walled box or a plain
    refusal before anything runs (the commit was found in the repository's objects when the
    options were read)."""
    if not options.view_commit:
        return decide(options.isolation, options.agent_user)
    why = ("view-commit shows the agent a tree you do not trust (a fork's pull request), so "
           "it runs only in the box, behind the network wall")
    try:
        isolation = decide("user", options.agent_user)
    except SetupError as exc:
        raise SetupError(f"{why}, and this runner cannot make the box: {exc.message}",
                         "Run the job on a GitHub-hosted Linux runner (runs-on: "
                         "ubuntu-latest), or a self-hosted one with passwordless sudo; the "
                         "review of a fork's pull request is not run elsewhere.") from exc
    if not isolation.walled:  # decide("user") gives the box or fails; held here all the same
        raise SetupError(f"{why}, and here the agent would run {isolation.label}.",
                         "Run the job on a GitHub-hosted Linux runner.")
    return isolation
