"""The review's commit status: one context a branch protection rule or ruleset can require.

``review`` sets it on the commit the agent reviewed: ``pending`` before posting anything (which
also proves the token may set statuses before a review is posted), then ``failure`` when a
finding is at ``fail-on`` or worse, else ``success``. ``review --mark-pending`` sets only
``pending``, as the first job of a review workflow: a run whose agent job fails, is cancelled
or is skipped leaves the commit pending, never green. The description is ours alone (counts,
severities, the verdict's name), never the agent's text.
https://docs.github.com/en/rest/commits/statuses#create-a-commit-status
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from cursor_agent_action import markdown
from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.gh.api import Context, GitHub
from cursor_agent_action.gh.review.findings import SEVERITIES, Answer

DEFAULT_CONTEXT = "cursor-agent-action/review"
DESCRIPTION_LIMIT = 140
"""GitHub refuses a longer status description (422)."""
CONTEXT_LIMIT = 255
PERMISSION = "statuses: write"
_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Status:
    """What one status says; ``sha`` is the commit it is set on."""

    sha: str
    state: str  # "pending", "success" or "failure"
    description: str
    target_url: str


def context_name(raw: str) -> str:
    """The context from ``status-context``: "" for ``none`` (set no status), the default
    for an empty value; one printable line."""
    value = raw.strip()
    if value.lower() == "none":
        return ""
    if not value:
        return DEFAULT_CONTEXT
    if any(unicodedata.category(c).startswith(("C", "Z")) and c != " " for c in value):
        raise UsageError(f"status-context must be one line of printable text, got {raw!r}.",
                         f"Set status-context to a name such as {DEFAULT_CONTEXT}, or none.")
    if len(value) > CONTEXT_LIMIT:
        raise UsageError(f"status-context is over {CONTEXT_LIMIT} characters.",
                         f"Set status-context to a short name such as {DEFAULT_CONTEXT}.")
    return value


def reviewed_commit(raw: str, ctx: Context, number: int) -> str:
    """The commit the agent reviewed: ``head-sha`` when given, else the head of the
    triggering pull request event when it is pull request ``number``, else "" (the caller
    reads the pull request's head now). A run for an older push so sets its status on that
    push, never on a newer head it did not review."""
    value = raw.strip().lower()
    if value:
        if not _SHA.fullmatch(value):
            raise UsageError(f"head-sha must be a full 40-character commit SHA, got {raw!r}.",
                             "Pass e.g. ${{ github.event.pull_request.head.sha }}, or leave "
                             "head-sha empty.")
        return value
    pull = ctx.event.get("pull_request")
    if isinstance(pull, dict) and pull.get("number") == number:
        sha = (pull.get("head") or {}).get("sha")
        if isinstance(sha, str) and _SHA.fullmatch(sha):
            return sha
    return ""


def pending(sha: str, run_url: str, *, waiting: bool) -> Status:
    """``waiting``: set at the start of the workflow (the review has not run yet); else set
    by the review step just before it posts."""
    text = ("Waiting for the review: stays pending unless the review finishes" if waiting
            else "Posting the review")
    return Status(sha, "pending", text, run_url)


def verdict(sha: str, answer: Answer, blocking: int, fail_on: str, url: str, *,
            incomplete: str = "", unlisted: int = 0) -> Status:
    """``failure`` when ``blocking`` findings are at ``fail-on`` or worse, or when files went
    unreviewed (``incomplete`` says which), else ``success`` (naming the ``unlisted`` files too
    large to review that were allowed); the description names the highest severity and the
    counts."""
    counts = ", ".join(f"{n} {s}" for s in SEVERITIES
                       if (n := sum(f.severity == s for f in answer.findings)))
    found = f"highest {answer.highest()}: {counts}" if counts else "no findings"
    if incomplete:
        return Status(sha, "failure", shorten(f"Not all reviewed: {incomplete}; {found}"), url)
    if blocking:
        text = f"Changes requested, {found} (fail-on: {fail_on})"
        return Status(sha, "failure", shorten(text), url)
    note = "" if fail_on == "none" else f"; none at fail-on {fail_on}"
    text = f"Reviewed, {found} (agent: {answer.verdict}{note})"
    if unlisted:
        text = f"Reviewed but {unlisted} file(s) too large, {found} (agent: {answer.verdict})"
    return Status(sha, "success", shorten(text), url)


def shorten(text: str) -> str:
    return markdown.shorten(text, DESCRIPTION_LIMIT)


def set_status(gh: GitHub, context: str, status: Status) -> None:
    """Set ``status`` under ``context``; a refusal is one error naming ``statuses: write``."""
    commit = gh.repo.get_commit(status.sha)  # lazy: no request until the status is posted
    link = {"target_url": status.target_url} if status.target_url.startswith(
        ("https://", "http://")) else {}
    try:
        gh.call(f"setting the commit status {context} on {status.sha[:12]}",
                lambda: commit.create_status(status.state, description=status.description,
                                             context=context, **link),
                permission=PERMISSION)
    except GitHubError as exc:
        if "GitHub answered 403" not in exc.message:
            raise
        raise GitHubError(exc.message, exc.hint + " Or set status-context: none to set no "
                          "commit status.") from None
