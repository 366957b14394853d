"""What a run's box said, into its verdict: the wall's report, a box that ended without a
status (the run fails closed), the patch that could not come back, protected paths kept in the
box, what stayed there; and the failures that outweigh the agent's own conclusion."""

from __future__ import annotations

from collections.abc import Mapping

from cursor_agent_action.agent.contain.box.gitconfig import persisted_credentials
from cursor_agent_action.agent.contain.sandbox import AgentExit
from cursor_agent_action.agent.judge.changes import (
    Applied,
    ChangeTracker,
    includes_failure,
    key_failure,
    links_failure,
)
from cursor_agent_action.agent.judge.verdict import Verdict
from cursor_agent_action.runner_io import Runner, listing
from cursor_agent_action.stream.record import Cause


def conclude_box(verdict: Verdict, ended: AgentExit, applied: Applied | None) -> None:
    """What the box said: a failure when it ended without a status (the agent is not run
    again: the box fails closed) or its changes could not come back; what stayed in it."""
    status = ended.box.status if ended.box is not None else None
    if status is not None and status.network is not None:
        verdict.network = status.network
    if ended.box_error and verdict.stream.has_result:  # the agent's own conclusion stands
        verdict.notes.append(
            f"The agent's box ended without a proper status after the agent's result "
            f"({ended.box_error}): nothing the agent changed was brought back, and it was not "
            "run again.")
        return
    if ended.box_error:
        verdict.fail(Cause.BOX, (
            f"The agent's box ended without a proper status ({ended.box_error}). Nothing the "
            "agent changed was brought back, and it was not run again. Fix: look at the agent's "
            "stderr and the transcript; a box killed for memory needs a smaller task."))
        return
    if status is not None and status.patch_error:
        error = status.patch_error
        fix = ("Fix: a change that large, or that many files, needs a smaller task." if "over "
               in error else "Fix: is the working directory a git work tree with a commit? A "
               "read-only run needs none." if "git" in error else "")
        verdict.fail(Cause.BOX, " ".join(filter(None, (
            f"The agent's changes could not be computed in its box ({error}); none were "
            "brought back.", fix))))
    if applied is None:
        return
    verdict.notes.extend(applied.notes)
    if applied.key_found:
        verdict.fail(Cause.KEY, key_failure(applied.key_found, applied=False))
    if applied.error:
        verdict.fail(Cause.BOX, f"The agent's changes could not be applied to the working tree "
                         f"({applied.error}); none were.")
    if applied.refused:
        verdict.fail(Cause.REFUSED_CHANGES, (
            f"The agent changed {applied.refused_count} protected file(s) (the CLI's, git's or "
            f"the workflows' configuration): {listing(applied.refused)}. They, and every other "
            "change of this run, stayed in the box: the working tree and the patch have none of "
            "them. Fix: review what the agent "
            "ran (the transcript); such files are changed by people, not by the agent."))
    if applied.includes_refused:
        verdict.fail(Cause.REFUSED_CHANGES,
                    includes_failure(applied.includes_refused, contained=True))
    if applied.links_refused_count:
        verdict.fail(Cause.REFUSED_CHANGES, links_failure(
            applied.links_refused, applied.links_refused_count, contained=True))


def limits_label(ended: AgentExit) -> str:
    status = ended.box.status if ended.box is not None else None
    if status is None:
        return ""
    return "".join(f", {part}" for part in (status.limits, status.storage and
                                            f"the tree: {status.storage}") if part)


def warn_persisted_credentials(tracker: ChangeTracker, runner: Runner, contained: bool) -> None:
    """A credential the checkout left in ``.git/config``: the contained agent never sees it
    (its ``.git`` config is masked), an uncontained one can read it."""
    if tracker.repo is None:
        return
    found = persisted_credentials(tracker.repo / ".git")
    if not found:
        return
    what = ("the contained agent does not see it (its .git config is masked), but later steps "
            "of this job do" if contained else "the agent, which runs uncontained, can read it")
    runner.warning(f"The checkout left a credential in .git/config ({listing(found)}): {what}. "
                   "Fix: set persist-credentials: false on actions/checkout.",
                   title="credential in .git/config")


def warn_missing_key(runner: Runner, environ: Mapping[str, str]) -> None:
    """The same warning for an API key that is unset, empty or only blanks."""
    value = environ.get("CURSOR_API_KEY")
    if value is not None and value.strip():
        return
    how = "is not set" if value is None else "is set but empty"
    runner.warning(f"CURSOR_API_KEY {how}: the CLI will fail to authenticate unless it is "
                   "logged in on this machine: set it to your key.", title="no API key")
