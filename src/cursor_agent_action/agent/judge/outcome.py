"""What a run's box said, into its verdict: the wall's report, a box that ended without a
status (the run fails closed), the patch that could not come back, protected paths kept in the
box, what stayed there; and the failures that outweigh the agent's own conclusion."""

from __future__ import annotations

from collections.abc import Mapping

from cursor_agent_action.agent.contain import inplace
from cursor_agent_action.agent.contain.box.gitconfig import persisted_credentials
from cursor_agent_action.agent.contain.box.net import walllog
from cursor_agent_action.agent.contain.held import user_box_warning
from cursor_agent_action.agent.contain.isolation import (
    Isolation,
    fallback_warning,
    landlock_warning,
)
from cursor_agent_action.agent.contain.sandbox import AgentExit
from cursor_agent_action.agent.judge import keyheld
from cursor_agent_action.agent.judge.changes import (
    Applied,
    ChangeTracker,
    includes_failure,
    key_failure,
    links_failure,
)
from cursor_agent_action.agent.judge.verdict import Verdict
from cursor_agent_action.agent.launch.invocation import AgentSite, agent_site
from cursor_agent_action.agent.launch.run_options import RunOptions
from cursor_agent_action.markdown import shorten
from cursor_agent_action.runner_io import Runner, listing, one_line
from cursor_agent_action.stream.record import Cause


def conclude_box(verdict: Verdict, ended: AgentExit, applied: Applied | None) -> None:
    """What the box said: a failure when it ended without a status (the agent is not run
    again: the box fails closed) or its changes could not come back; what stayed in it."""
    status = ended.box.status if ended.box is not None else None
    if status is not None and status.network is not None:
        verdict.network = status.network
    if ended.box_error and verdict.stream.has_result:  # not even then: fails closed
        verdict.fail(Cause.BOX, (
            f"The agent's box ended without a proper status after the agent's result "
            f"({ended.box_error}): nothing the agent changed was brought back, it was not run "
            "again, and its result does not stand: what the box checks after the run (what "
            "the agent left running, the checkout's attributes) was never reported. Fix: look "
            "at the agent's stderr and the transcript; a box killed for memory needs a smaller "
            "task."))
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
    if status is not None and status.started and status.error:  # after the run: fails it
        verdict.fail(Cause.BOX, (
            f"After the run, the agent's box could not end everything the agent left behind "
            f"({status.error}). Fix: review what the agent ran (the transcript); run it where "
            "the box can be made (root or passwordless sudo, or a user namespace), whose PID "
            "namespace ends all of it."))
    if status is not None and status.put_back.count:  # the checkout's attributes
        verdict.fail(Cause.POLICY, inplace.failure(list(status.put_back.paths),
                                                   status.put_back.count))
    if applied is None:
        return
    verdict.notes.extend(applied.notes)
    verdict.leave_out(applied.left_out, applied.left_out_count)
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


def limits_label(ended: AgentExit) -> tuple[str, ...]:
    """The box's limits and its tree's storage, one line each (none without a status)."""
    status = ended.box.status if ended.box is not None else None
    if status is None:
        return ()
    return tuple(part for part in (status.limits and f"Limits: {status.limits}",
                                   status.storage and f"The tree: {status.storage}") if part)


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


def warn_isolation(runner: Runner, isolation: Isolation, requested: str) -> None:
    """A run less contained than the box (Landlock, the user-namespace box, or no box where
    ``auto`` asked for one): one short annotation; the whole warning (what holds, what does not,
    the fix) in the log here and in the summary's "How it ran". Nothing for the box, or for a
    run asked to be uncontained."""
    warning = isolation_warning(isolation, requested)
    if not warning:
        return
    title = isolation.warning_title if isolation.contained else "agent not contained"
    runner.warning(short_warning(isolation), title=title)
    runner.log(one_line(warning, 4000))


def tier_site(options: RunOptions, runner: Runner, environ: Mapping[str, str],
              isolation: Isolation) -> AgentSite:
    """The agent's site on ``isolation``'s tier, whichever it is, warned of when it is less
    than the box (:func:`warn_isolation`)."""
    site = agent_site(options, environ, isolation)
    warn_isolation(runner, isolation, options.isolation)
    return site


def warn_missing_key(runner: Runner, environ: Mapping[str, str]) -> None:
    """The same warning for an API key that is unset, empty or only blanks."""
    value = environ.get("CURSOR_API_KEY")
    if value is not None and value.strip():
        return
    how = "is not set" if value is None else "is set but empty"
    runner.warning(f"CURSOR_API_KEY {how}: the CLI will fail to authenticate unless it is "
                   "logged in on this machine: set it to your key.", title="no API key")


def label_start(verdict: Verdict, ended: AgentExit, box: AgentSite, options: RunOptions) -> None:
    """What the verdict says of a start's containment, network and API key."""
    keyheld.label(verdict, ended, box.key_in_box(options), why=box.why_key_in_box())
    if verdict.network is None and (not box.isolation.walled or options.network == "open"):
        verdict.network = walllog.unwalled_report(
            "open" if box.isolation.walled else box.isolation.wall_mode, box.isolation.why_not)
    verdict.isolation = box.isolation.label
    verdict.isolation_details = limits_label(ended)
    verdict.isolation_warning = isolation_warning(box.isolation, options.isolation)


def isolation_warning(isolation: Isolation, requested: str) -> str:
    """The whole warning for the job summary ("" when the agent ran in the box, or
    uncontained because it was asked to be)."""
    if isolation.landlock:
        return landlock_warning(isolation)
    if isolation.user_box:
        return user_box_warning(isolation.agent_user, isolation.why_not, isolation.fix)
    if not isolation.contained and requested == "auto":
        return fallback_warning(isolation)
    return ""


def short_warning(isolation: Isolation) -> str:
    """The annotation for :func:`landlock_warning` and :func:`fallback_warning`: one short
    line (the whole text, with what is lost and the fix, is in the job summary)."""
    how = ("in the box inside a user namespace, as the runner's own user"
           if isolation.user_box else
           "under Landlock as the runner's own user" if isolation.own_user else
           "under Landlock instead of the box" if isolation.landlock else
           "without the box, as the runner's user, on the real working tree")
    why = shorten(isolation.why_not, 160)
    return (f"Running the agent {how}, because {why}. The job summary's 'How it ran' says "
            "what that leaves open and how to fix it.")
