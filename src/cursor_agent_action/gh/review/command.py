"""``review``: one pull request review from the agent's findings, comments on the lines.

The diff is read through the API (``GET /pulls/{n}/files``: each file's patch), never from a
checkout, and parsed by :mod:`diffmap`; a finding goes on its line only when that line is in
the diff, else into the body under "Outside the diff". The review is posted in one request
(``POST /pulls/{n}/reviews`` with its ``comments``; lines and sides, never diff positions).
https://docs.github.com/en/rest/pulls/reviews#create-a-review-for-a-pull-request

Re-runs (:mod:`.earlier`): the review body starts with a hidden marker and each comment with
the fingerprint of its finding. The newest earlier review of ours (by marker and
``comment-author``) says which comments are still live; one whose finding still holds on the
same line is kept (listed in the new body, not posted again), the others are minimized as
outdated (GraphQL ``minimizeComment``), and the earlier review's body is replaced by a link to
the new one.

A review spread over the matrix (``plan-file``, ``findings-dir``) first merges its shards'
answers (:mod:`merge`): files nobody reviewed are listed, and fail the status and the step.

The commit status (:mod:`status`) goes on the commit the agent reviewed: ``pending`` before the
review is posted, then ``failure`` or ``success``; ``--mark-pending`` only sets ``pending``.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass
from typing import Any

import github

from cursor_agent_action.errors import EXIT_RUN_FAILED, ActionError, UsageError
from cursor_agent_action.gh.api import (
    Context,
    GitHub,
    add_token_option,
    error_message,
    pr_number,
    read_token,
)
from cursor_agent_action.gh.comment import DEFAULT_AUTHOR, default_marker, marker_line
from cursor_agent_action.gh.review import findings as findings_mod
from cursor_agent_action.gh.review import merge as merge_mod
from cursor_agent_action.gh.review import status as status_mod
from cursor_agent_action.gh.review.body import (
    BodyParts,
    comment_body,
    review_body,
    step_summary,
)
from cursor_agent_action.gh.review.diffmap import DiffMap, parse_patch, unreadable
from cursor_agent_action.gh.review.earlier import (
    PERMISSION,
    Earlier,
    kept_comments,
    read_earlier,
    tidy,
)
from cursor_agent_action.gh.review.findings import SEVERITIES, Answer
from cursor_agent_action.gh.review.placement import Placed, place
from cursor_agent_action.gh.review.text import Prose
from cursor_agent_action.options import add_flag, add_number, add_option
from cursor_agent_action.runner_io import Runner

MAX_FILES = 3000
"""GitHub lists at most 3000 files of a pull request."""
MAX_PATCH_CHARS = 8_000_000
"""Patch text read in all; a file whose patch would pass it is not mapped (its findings go to
the body), smaller files after it still are."""
_EVENTS = {"approve": "APPROVE", "comment": "COMMENT", "request-changes": "REQUEST_CHANGES"}


class ReviewBlocked(ActionError):
    exit_code = EXIT_RUN_FAILED
    title = "review requested changes"


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--findings", default="",
               help="the agent's answer as JSON text (the run's structured-output), matching "
               "review/findings.schema.json")
    add_option(parser, "--findings-file", default="",
               help="a file holding that JSON (the run's structured-output-file)")
    add_option(parser, "--plan-file", default="",
               help="a sharded review's plan (pr-context's plan-file, downloaded in this job): "
               "merge the answers of its shards from findings-dir into one review")
    add_option(parser, "--findings-dir", default="",
               help="with plan-file: a directory holding one folder per shard whose name ends "
               "in shard-N (as download-artifact with pattern leaves them), each with the "
               "shard's findings.json")
    add_flag(parser, "--allow-unreviewed-files", default=False,
             help="with plan-file: files in no shard (too large to review; still listed) do "
             "not fail the status or the step; a shard without an answer still does")
    add_option(parser, "--pr-number", default="", help="pull request to review",
               default_help="the one of the triggering event")
    add_number(parser, "--max-comments", default=20, integer=True, minimum=0, maximum=1000,
               help="findings placed on lines at most; the rest are listed in the body")
    add_option(parser, "--fail-on", default="none",
               help="'none', or a severity (critical, major, minor, nit): a finding that "
               "severe or worse makes the review request changes and the step fail after "
               "posting")
    add_flag(parser, "--allow-approve", default=False,
             help="let the agent's verdict 'approve' approve the pull request (else it is "
             "posted as a comment: a prompt injection must not approve)")
    add_option(parser, "--marker", default="",
               help="what makes this review unique: a re-run replaces the review with this "
               "marker", default_help="'<workflow>/<job>' from GITHUB_WORKFLOW and GITHUB_JOB")
    add_option(parser, "--comment-author", default=DEFAULT_AUTHOR,
               help="login the token acts as; only its reviews are taken for ours")
    add_option(parser, "--status-context", default=status_mod.DEFAULT_CONTEXT,
               help="the commit status set on the reviewed commit (pending, then failure or "
               "success), for branch protection to require; 'none' sets no status")
    add_option(parser, "--head-sha", default="", help="commit the status is set on",
               default_help="the head of the triggering pull request event, else the pull "
               "request's head now")
    add_flag(parser, "--mark-pending", default=False,
             help="only set the status to pending and stop (the first job of a review "
             "workflow, so a run that fails or is skipped later leaves it pending)")
    add_token_option(parser)


class ReviewIncomplete(ActionError):
    exit_code = EXIT_RUN_FAILED
    title = "review incomplete"


@dataclass
class Spread:
    """Where each finding goes: on its line (``inline``, or ``kept`` as an earlier comment
    still live), in the body (``outside`` the diff, ``over_cap`` past max-comments); the
    earlier comments whose finding is ``gone``."""

    placed: list[Placed]  # every finding on a line of the diff, the most severe first
    outside: list[Any]
    kept: list[tuple[Placed, str, Any]]  # (spot, the comment's URL, the comment)
    gone: list[Any]
    inline: list[Placed]
    over_cap: list[Placed]


def command(args: argparse.Namespace, runner: Runner) -> int:
    """The review step top to bottom: the answer, the pending status, where each finding goes,
    the review posted, the final status, the earlier review tidied, the report."""
    ctx = Context.from_env()
    context = status_mod.context_name(args.status_context)
    number = pr_number(args.pr_number, ctx)
    reviewed = status_mod.reviewed_commit(args.head_sha, ctx, number)
    if args.mark_pending:
        return _mark_pending(args, ctx, number=number, context=context, reviewed=reviewed,
                             runner=runner)
    merged, answer = _answer(args, runner)
    reviewed = reviewed or (merged.plan.head_sha if merged else "")
    failing = merged.not_reviewed(shards_only=args.allow_unreviewed_files) if merged else []
    fail_rank = _fail_rank(args.fail_on)
    head = marker_line("review:" + (" ".join(args.marker.split()) or default_marker()))
    author = args.comment_author.strip().casefold()
    if not author:
        raise UsageError("comment-author is empty.",
                         f"Give the login the token acts as (GITHUB_TOKEN: {DEFAULT_AUTHOR}).")
    token = read_token(args.token_env, ctx, runner)
    gh = GitHub(ctx, token, log=runner.log)
    pull, head_sha = _head(gh, number)
    reviewed = reviewed or head_sha
    if context:  # before anything is posted: a token that may not set it fails here
        status_mod.set_status(gh, context, status_mod.pending(reviewed, ctx.run_url,
                                                              waiting=False))
    diff = read_diff(gh, pull, number)
    earlier = read_earlier(gh, pull, number, head, author)
    spread = _spread(answer, diff, earlier, args.max_comments)
    blocking = [f for f in answer.findings if f.rank <= fail_rank]
    event, note = _event(answer, blocking, args.allow_approve, args.fail_on)
    prose = Prose(f"{ctx.server_url}/{ctx.repository}")
    parts = BodyParts(head, answer, note, spread.outside, spread.over_cap,
                      [(p, u) for p, u, _ in spread.kept], [c.id for _, _, c in spread.kept],
                      ctx.run_url,
                      {s: sum(f.severity == s for f in answer.findings) for s in SEVERITIES},
                      merged.body_lines(runner.redact) if merged else [])
    review = _post(gh, number, head_sha, parts, spread.inline, prose=prose, event=event,
                   runner=runner)
    url = str(review["html_url"])
    final = status_mod.verdict(reviewed, answer, len(blocking), args.fail_on.strip().lower(),
                               url,
                               incomplete=merged.status_text(
                                   shards_only=args.allow_unreviewed_files) if merged else "",
                               unlisted=len(merged.not_reviewed()) - len(failing) if merged
                               else 0)
    if context:  # the review is posted: what follows only tidies the earlier one
        status_mod.set_status(gh, context, final)
        runner.log(f"commit status {context} on {reviewed}: {final.state} "
                   f"({final.description})")
    tidy(gh, number, earlier, spread.gone, head=head, url=url, runner=runner)
    posted = len(spread.inline) if review["_inline"] else 0
    runner.set_outputs({
        "review-id": str(review["id"]), "review-url": url,
        "comments-posted": str(posted), "outside-diff": str(len(spread.outside)),
        "highest-severity": answer.highest(),
        "status-state": final.state if context else "", "status-sha": reviewed,
        **merge_mod.outputs(merged)})
    _report(runner, answer, spread, posted=posted, url=url, merged=merged)
    _raise_failures(failing, blocking, merged, url, args.fail_on)
    return 0


def _answer(args: argparse.Namespace, runner: Runner) -> tuple[merge_mod.Merged | None, Answer]:
    """The agent's answer: its findings, or a sharded review's shards' merged (with the merge,
    for what it says of the shards). Redacted as text once, here: what renders it later is
    never redacted again."""
    merged = merge_mod.from_inputs(args.plan_file, args.findings_dir, args.findings,
                                   args.findings_file)
    answer = findings_mod.redacted(
        merged.answer if merged else findings_mod.load(args.findings, args.findings_file),
        runner.redact)
    return merged, answer


def _spread(answer: Answer, diff: DiffMap, earlier: Earlier, max_comments: int) -> Spread:
    """Each finding placed on its line of ``diff`` (or outside it), the earlier review's live
    comments kept where their finding still holds, and at most ``max_comments`` on lines."""
    placed, outside = place(answer.findings, diff)
    placed.sort(key=lambda p: p.finding.rank)  # stable: the agent's order within a severity
    kept, gone = kept_comments(earlier.live, placed)
    kept_spots = {id(spot) for spot, _, _ in kept}
    fresh = [p for p in placed if id(p) not in kept_spots]
    room = max(0, max_comments - len(kept))
    return Spread(placed, outside, kept, gone, fresh[:room], fresh[room:])


def _report(runner: Runner, answer: Answer, spread: Spread, *, posted: int, url: str,
            merged: merge_mod.Merged | None) -> None:
    """The log's line, the job summary and the merge's warnings."""
    runner.log(f"review {url}: {posted} comment(s) on lines, {len(spread.kept)} kept "
               f"from the earlier review, {len(spread.outside)} outside the diff, "
               f"{len(spread.over_cap)} over max-comments; {len(spread.gone)} earlier "
               "comment(s) minimized")
    runner.append_summary(step_summary(answer, spread.placed, spread.outside, url))
    if merged is not None:
        for warning in merged.all_warnings():
            runner.warning(warning, title="review")


def _raise_failures(failing: list[Any], blocking: list[Any], merged: merge_mod.Merged | None,
                    url: str, fail_on: str) -> None:
    """The step fails, once the review is posted, for files nobody reviewed, then for
    findings at ``fail_on`` or worse."""
    if failing:
        shards_named = ", ".join(f"shard {g.shard}" for g in merged.gaps) if merged else ""
        raise ReviewIncomplete(
            f"{len(failing)} changed file(s) were not reviewed"
            + (f" ({shards_named} did not answer)" if shards_named else "")
            + f"; the status is failure: {url}.",
            "Re-run the failed shards' jobs; for files too large to review, raise shard-bytes "
            "/ max-shards, or set allow-unreviewed-files: true.")
    if blocking:
        raise ReviewBlocked(
            f"{len(blocking)} finding(s) at severity {fail_on} or worse; the review "
            f"requests changes: {url}.",
            "Address the findings and push, or raise fail-on.")


def _mark_pending(args: argparse.Namespace, ctx: Context, *, number: int, context: str,
                  reviewed: str, runner: Runner) -> int:
    """Only the pending status, at the start of a review workflow."""
    if not context:
        raise UsageError("mark-pending sets a commit status, but status-context is none.",
                         "Remove status-context: none, or the mark-pending step.")
    if args.findings.strip() or args.findings_file.strip():
        raise UsageError("mark-pending takes no findings: it only marks the commit pending.",
                         "Give findings to the review step after the agent's job, not to the "
                         "mark-pending step.")
    gh = GitHub(ctx, read_token(args.token_env, ctx, runner), log=runner.log)
    if not reviewed:  # not a pull request event: the pull request's head now
        reviewed = _head(gh, number)[1]
    status_mod.set_status(gh, context, status_mod.pending(reviewed, ctx.run_url, waiting=True))
    runner.set_outputs({"status-state": "pending", "status-sha": reviewed})
    runner.log(f"commit status {context} on {reviewed}: pending until the review finishes")
    return 0


def _head(gh: GitHub, number: int) -> tuple[Any, str]:
    """The pull request and its head commit now."""
    pull = gh.repo.get_pull(number)
    return pull, gh.call(f"reading pull request #{number}", lambda: str(pull.head.sha),
                         permission="pull-requests: read")


def read_diff(gh: GitHub, pull: Any, number: int) -> DiffMap:
    """The pull request's files and their patches, mapped; bounded in files and text."""
    files = gh.call(f"listing the files of pull request #{number}",
                    lambda: list(itertools.islice(pull.get_files(), MAX_FILES)),
                    permission="pull-requests: read")
    diff = DiffMap()
    read = 0
    for file in files:
        status, previous = str(file.status or ""), str(file.previous_filename or "")
        patch = file.patch
        if patch is None:
            why = ("GitHub shows no diff for it (a binary file, or a diff too large to show)"
                   if status != "removed" or file.deletions else "an empty file")
            diff.add(unreadable(file.filename, why, status=status, previous_path=previous))
        elif read + len(patch) > MAX_PATCH_CHARS:
            diff.add(unreadable(file.filename, f"the diff is over the {MAX_PATCH_CHARS:,} "
                                "characters this step reads", status=status,
                                previous_path=previous))
        else:
            read += len(patch)
            diff.add(parse_patch(file.filename, patch, status=status, previous_path=previous))
    if len(files) >= MAX_FILES:
        diff.truncated = (f"GitHub lists {MAX_FILES:,} files of a pull request, and this one "
                          "is not among them")
    return diff


def _event(answer: Answer, blocking: list[Any], allow_approve: bool,
           fail_on: str) -> tuple[str, str]:
    if blocking:
        return "REQUEST_CHANGES", f"changes requested (fail-on: {fail_on})"
    event = _EVENTS[answer.verdict]
    if event == "APPROVE" and not allow_approve:
        return "COMMENT", "the agent would approve (posted as a comment: allow-approve is off)"
    return event, ""


def _post(gh: GitHub, number: int, head_sha: str, parts: BodyParts, inline: list[Placed], *,
          prose: Prose, event: str, runner: Runner) -> dict[str, Any]:
    """Post the review. GitHub's 422 for one of two causes is met by dropping the cause and
    posting again (bounded: each cause at most once): a line it will not take (the pull request
    moved on) puts every finding in the body; a review of the token's own pull request may
    only comment."""
    pull, commit = gh.repo.get_pull(number), gh.repo.get_commit(head_sha)  # lazy: no request
    sent: dict[str, Any] = {"event": event, "comments": [_comment(p, prose) for p in inline]}

    def send() -> dict[str, Any] | str:
        try:
            posted = pull.create_review(commit=commit, body=review_body(parts, prose), **sent)
        except github.GithubException as exc:
            if exc.status == 422:
                if "own pull request" in error_message(exc.data).lower() and \
                        sent["event"] != "COMMENT":
                    return "own"
                if sent["comments"]:
                    return "line"
            raise
        return dict(posted.raw_data)

    for _ in range(3):
        answer = gh.call(f"posting the review of #{number}", send, permission=PERMISSION)
        if isinstance(answer, dict):
            return {**answer, "_inline": bool(sent["comments"])}
        if answer == "own":
            runner.warning(f"GitHub lets no one {sent['event'].lower().replace('_', ' ')} "
                           "their own pull request, and this one is the token's: the review "
                           "is posted as a comment.", title="review")
            parts.event_note = (f"{parts.event_note}; " if parts.event_note else "") + (
                "posted as a comment: the pull request is the token's own")
            sent["event"] = "COMMENT"
        else:
            runner.warning("GitHub refused a comment's line (the pull request may have moved "
                           "on); every finding is in the review body instead.", title="review")
            parts.over_cap = [*inline, *parts.over_cap]
            sent["comments"] = []
    raise AssertionError("unreachable: each cause is dropped once, then GitHub's 422 raises")


def _comment(spot: Placed, prose: Prose) -> dict[str, Any]:
    finding = spot.finding
    comment: dict[str, Any] = {"path": finding.path, "line": finding.line,
                               "side": finding.side, "body": comment_body(spot, prose)}
    if spot.start_line is not None:
        comment.update(start_line=spot.start_line, start_side=finding.side)
    return comment


def _fail_rank(raw: str) -> int:
    value = raw.strip().lower()
    if value == "none":
        return -1
    if value in SEVERITIES:
        return SEVERITIES.index(value)
    raise UsageError(f"fail-on must be none or a severity, not {raw!r}.",
                     f"Set fail-on to none, {', '.join(SEVERITIES)}.")
