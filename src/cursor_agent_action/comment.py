"""``comment``: one sticky comment per job/purpose on a pull request or issue.

The comment starts with a hidden marker (``<!-- cursor-agent-action:MARKER -->``); a re-run
finds the comment by it and edits it in place instead of adding another.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from cursor_agent_action.errors import UsageError
from cursor_agent_action.github_api import (
    COMMENT_LIMIT,
    Context,
    GitHub,
    add_option,
    add_token_option,
    compose_body,
    read_token,
)
from cursor_agent_action.runner_io import Runner

_MARKER_TEXT = re.compile(r"^[A-Za-z0-9._/:@ -]{1,200}$")


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--number", default="",
               help="pull request or issue number (default: the one of the triggering event)")
    add_option(parser, "--marker", default="",
               help="what makes this comment unique: one sticky comment per marker "
               "(default: '<workflow>/<job>', from GITHUB_WORKFLOW and GITHUB_JOB)")
    add_option(parser, "--transcript", default="",
               help="saved transcript: the comment is the run's compact summary")
    add_option(parser, "--body", default="",
               help="comment text, e.g. the run step's final-message output")
    add_option(parser, "--body-file", default="", help="file with the comment text (Markdown)")
    add_token_option(parser)


def marker_line(marker: str) -> str:
    if not _MARKER_TEXT.match(marker) or "--" in marker:
        raise UsageError(
            f"marker {marker!r} is not usable in a hidden HTML comment.",
            "Use up to 200 letters, digits, spaces and . _ / : @ - (no '--').",
        )
    return f"<!-- cursor-agent-action:{marker} -->"


def command(args: argparse.Namespace, runner: Runner) -> int:
    ctx = Context.from_env()
    number = _number(args.number, ctx)
    marker = args.marker or "/".join(
        part for part in (os.environ.get("GITHUB_WORKFLOW", ""), os.environ.get("GITHUB_JOB", ""))
        if part
    ) or "comment"
    head = marker_line(" ".join(marker.split()))
    if not (args.transcript or args.body or args.body_file):
        raise UsageError("nothing to comment: give --transcript, --body or --body-file.",
                         "Pass the run step's transcript-file output as transcript.")
    links = {"Workflow run": ctx.run_url} if ctx.run_url else {}
    text = compose_body(transcript=args.transcript, body=args.body, body_file=args.body_file,
                        links=links, max_chars=COMMENT_LIMIT - len(head) - 1)
    body = f"{head}\n{runner.redact(text)}"
    token = read_token(args.token_env, ctx)
    runner.mask(token)
    gh = GitHub(ctx, token, log=runner.log)
    issue = gh.repo.get_issue(number)
    perm = "pull-requests: write (issues: write on issues)"

    def find() -> Any:
        return next((c for c in issue.get_comments() if (c.body or "").startswith(head)), None)

    existing = gh.call(f"listing the comments of #{number}", find,
                       permission="pull-requests: read")
    if existing is None:
        comment = gh.call(f"commenting on #{number}", lambda: issue.create_comment(body),
                          permission=perm)
        runner.log(f"created comment {comment.html_url}")
    else:
        comment = existing
        if comment.body != body:
            gh.call(f"updating comment {comment.id} on #{number}", lambda: comment.edit(body),
                    permission=perm)
            runner.log(f"updated comment {comment.html_url}")
        else:
            runner.log(f"comment {comment.html_url} is already up to date")
    runner.set_outputs({"comment-id": str(comment.id), "comment-url": comment.html_url})
    return 0


def _number(raw: str, ctx: Context) -> int:
    if raw.strip():
        try:
            value = int(raw.strip().lstrip("#"))
        except ValueError:
            value = 0
        if value <= 0:
            raise UsageError(f"--number must be a pull request or issue number, got {raw!r}.",
                             "Pass e.g. ${{ github.event.pull_request.number }}.")
        return value
    found = ctx.issue_number()
    if found is None:
        raise UsageError(
            f"no pull request or issue to comment on: the {ctx.event_name or 'current'} event "
            "has none.",
            "Pass number (for workflow_run, use the ci-context step's pr-number output).",
        )
    return found
