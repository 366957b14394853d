"""Re-runs of a review: the newest earlier review of ours and its comments still live; those
whose finding still holds on the same line are kept, the others hidden as outdated, and the
earlier review's body replaced by a link to the new one.

The earlier review is found by the hidden marker its body starts with and by ``comment-author``;
each comment by the fingerprint of its finding (:mod:`.body`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from cursor_agent_action.gh.api import GitHub
from cursor_agent_action.gh.review.body import (
    fingerprint_of,
    is_superseded,
    live_ids,
    superseded_body,
)
from cursor_agent_action.gh.review.placement import Placed
from cursor_agent_action.runner_io import Runner

MAX_EARLIER = 1000
"""Earlier reviews and review comments read (each list)."""
_MINIMIZE = ("mutation($id: ID!) { minimizeComment(input: {subjectId: $id, classifier: "
             "OUTDATED}) { minimizedComment { isMinimized } } }")
PERMISSION = "pull-requests: write"
"""What posting, hiding and editing a review or its comments needs."""


@dataclass
class Earlier:
    reviews: list[Any]  # ours, oldest first
    live: list[Any]  # their review comments still shown


def read_earlier(gh: GitHub, pull: Any, number: int, head: str, author: str) -> Earlier:
    """Our earlier reviews (their body starts with ``head``, by ``author``) and the comments of
    the newest still live (its own, and those its body lists as kept)."""
    def ours(item: Any) -> bool:
        return item.user is not None and str(item.user.login).casefold() == author

    reviews = gh.call(f"listing the reviews of #{number}", lambda: [
        r for r in itertools.islice(pull.get_reviews(), MAX_EARLIER)
        if (r.body or "").startswith(head) and ours(r)], permission="pull-requests: read")
    if not reviews:
        return Earlier([], [])
    latest = max(reviews, key=lambda r: r.id)
    wanted = set(live_ids(latest.body or ""))
    comments = gh.call(f"listing the review comments of #{number}", lambda: [
        c for c in itertools.islice(pull.get_review_comments(), MAX_EARLIER)
        if ours(c) and (c.pull_request_review_id == latest.id or c.id in wanted)
        and fingerprint_of(c.body or "")], permission="pull-requests: read")
    return Earlier(sorted(reviews, key=lambda r: r.id), comments)


def kept_comments(live: list[Any],
                  placed: list[Placed]) -> tuple[list[tuple[Placed, str, Any]], list[Any]]:
    """Live comments whose finding still holds on the same line (kept), and the rest."""
    by_spot = {(p.finding.fingerprint, p.finding.path, p.finding.side, p.finding.line): p
               for p in placed}
    kept: list[tuple[Placed, str, Any]] = []
    gone = []
    for comment in live:
        spot = by_spot.pop((fingerprint_of(comment.body), comment.path,
                            comment.side or "RIGHT", comment.line), None)
        if spot is not None and comment.line is not None:
            kept.append((spot, str(comment.html_url), comment))
        else:
            gone.append(comment)
    return kept, gone


def tidy(gh: GitHub, number: int, earlier: Earlier, gone: list[Any], *, head: str, url: str,
          runner: Runner) -> None:
    """The earlier review made way for the new one (at ``url``): its comments whose finding
    is gone hidden as outdated, its body replaced by a link."""
    for comment in gone:
        _minimize(gh, comment, runner)
    for old in earlier.reviews:
        if not is_superseded(old.body or "", head):
            _supersede(gh, number, old, head, url)


def _minimize(gh: GitHub, comment: Any, runner: Runner) -> None:
    """Hide an earlier comment as outdated; GitHub's refusal is a warning, not a failure."""
    data = gh.call(f"hiding the earlier review comment {comment.id}",
                   lambda: gh.graphql(_MINIMIZE, {"id": comment.node_id}), permission=PERMISSION)
    errors = data.get("errors")
    if errors:
        first = errors[0].get("message", "") if isinstance(errors[0], dict) else errors[0]
        runner.warning(f"could not hide the earlier review comment {comment.html_url}: "
                       f"{str(first)[:200]}", title="review")


def _supersede(gh: GitHub, number: int, old: Any, head: str, url: str) -> None:
    gh.call(f"marking the earlier review {old.id} as replaced",
            lambda: old.edit(superseded_body(head, url)), permission=PERMISSION)
