"""``comment``: one sticky comment per job/purpose on a pull request or issue.

The comment starts with a hidden marker (``<!-- cursor-agent-action:MARKER -->``); a re-run
finds the comment by it and edits it in place instead of adding another. Anyone can write the
marker, so only comments and issues by ``--comment-author`` count: the login must be given,
since an installation token (GITHUB_TOKEN) may not ask who it is (``GET /user`` answers 403).
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any

from cursor_agent_action.errors import UsageError
from cursor_agent_action.gh import sections
from cursor_agent_action.gh.api import COMMENT_LIMIT, Context, GitHub, add_token_option, read_token
from cursor_agent_action.gh.bodies import add_body_options, compose_body, fit
from cursor_agent_action.options import add_option, items
from cursor_agent_action.runner_io import Runner

DEFAULT_AUTHOR = "github-actions[bot]"
_MARKER_TEXT = re.compile(r"^[A-Za-z0-9._/:@ -]{1,200}$")


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--number", default="",
               help="pull request or issue number",
               default_help="the one of the triggering event")
    add_option(parser, "--marker", default="",
               help="what makes this comment unique: one sticky comment per marker",
               default_help="'<workflow>/<job>' from GITHUB_WORKFLOW and GITHUB_JOB")
    add_body_options(parser, "comment text")
    add_option(parser, "--jobs-file", default="",
               help="a triage fanned out over the matrix: ci-context's jobs-file; the comment "
               "has one section per failed job, from the transcripts in transcripts-dir")
    add_option(parser, "--transcripts-dir", default="",
               help="with jobs-file: one folder per job whose name ends in job-N (as "
               "download-artifact with pattern leaves them), each with its transcript.jsonl")
    add_option(parser, "--issue-title", default="",
               help="when there is no pull request or issue to comment on, keep the text in "
               "an open issue with this title instead (found again by marker and labels)")
    add_option(parser, "--issue-labels", default="cursor-agent",
               help="labels of that issue, comma or newline separated; used to find it again")
    add_option(parser, "--comment-author", default=DEFAULT_AUTHOR,
               help="login the token acts as (a GitHub App: 'NAME[bot]'); only its comments "
               "and issues are taken for ours, whoever else writes the marker")
    add_token_option(parser)


def marker_line(marker: str) -> str:
    if not _MARKER_TEXT.match(marker) or "--" in marker:
        raise UsageError(
            f"marker {marker!r} is not usable in a hidden HTML comment.",
            "Use up to 200 letters, digits, spaces and . _ / : @ - (no '--').",
        )
    return f"<!-- cursor-agent-action:{marker} -->"


def default_marker() -> str:
    """'<workflow>/<job>', reduced to the characters a marker allows."""
    parts = (os.environ.get("GITHUB_WORKFLOW", ""), os.environ.get("GITHUB_JOB", ""))
    marker = "/".join(part for part in parts if part) or "comment"
    return re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9._/:@ ]+", "-", marker))[:200]


def command(args: argparse.Namespace, runner: Runner) -> int:
    ctx = Context.from_env()
    number = _number(args.number, ctx, fallback=bool(args.issue_title.strip()))
    head = marker_line(" ".join(args.marker.split()) or default_marker())
    if not args.comment_author.strip():
        raise UsageError("--comment-author is empty.",
                         f"Give the login the token acts as (GITHUB_TOKEN: {DEFAULT_AUTHOR}).")
    if bool(args.jobs_file.strip()) != bool(args.transcripts_dir.strip()):
        raise UsageError("jobs-file and transcripts-dir go together.",
                         "Pass ci-context's jobs-file and the directory the triage jobs' "
                         "artifacts were downloaded to.")
    if args.jobs_file.strip() and (args.transcript or args.final_message or args.body
                                   or args.body_file):
        raise UsageError("jobs-file makes the comment from the jobs' transcripts: give no "
                         "other text with it.", "Remove transcript, final-message, body and "
                         "body-file.")
    if not (args.transcript or args.final_message or args.body or args.body_file
            or args.jobs_file.strip()):
        raise UsageError("nothing to comment: give --transcript, --final-message, --body or "
                         "--body-file.",
                         "Pass the run step's transcript-file output as transcript.")
    links = {"Workflow run": ctx.run_url} if ctx.run_url else {}
    if args.jobs_file.strip():
        text, missing = sections.compose(args.jobs_file, args.transcripts_dir,
                                         max_chars=COMMENT_LIMIT - len(head) - 1, links=links,
                                         redact=runner.redact)
        text = fit(text, COMMENT_LIMIT - len(head) - 1)
        for job in missing:
            runner.warning(f"failed job {job} has no triage answer: its section says so",
                           title="comment")
    else:
        text = compose_body(transcript=args.transcript, final_message=args.final_message,
                            body=args.body, body_file=args.body_file, links=links,
                            max_chars=COMMENT_LIMIT - len(head) - 1, redact=runner.redact)
    body = f"{head}\n{text}"
    token = read_token(args.token_env, ctx, runner)
    gh = GitHub(ctx, token, log=runner.log)
    author = Author(args.comment_author.strip(), runner)
    if number is None:
        labels = items(args.issue_labels)
        issue = _sticky_issue(gh, args.issue_title.strip(), labels=labels, head=head, body=body,
                              author=author, runner=runner)
        runner.set_outputs({"comment-id": "", "comment-url": issue.html_url,
                            "issue-number": str(issue.number)})
        return 0
    comment = _sticky_comment(gh, number, head=head, body=body, author=author, runner=runner)
    runner.set_outputs({"comment-id": str(comment.id), "comment-url": comment.html_url,
                        "issue-number": str(number)})
    return 0


class Author:
    """The login whose comments and issues are ours (GitHub logins ignore case)."""

    def __init__(self, login: str, runner: Runner) -> None:
        self.login = login
        self.runner = runner

    def wrote(self, item: Any) -> bool:
        user = item.user
        return user is not None and str(user.login).casefold() == self.login.casefold()

    def check_created(self, item: Any, what: str) -> None:
        """Warn when the token is not --comment-author: re-runs would never find ``item``."""
        if not self.wrote(item):
            login = item.user.login if item.user is not None else "?"
            self.runner.warning(
                f"{what} was written by {login}, not by comment-author {self.login}: re-runs "
                f"will add a new one instead of updating it. Set comment-author: {login}.",
                title="comment")


def _sticky_comment(gh: GitHub, number: int, *, head: str, body: str, author: Author,
                    runner: Runner) -> Any:
    issue = gh.repo.get_issue(number)
    perm = "pull-requests: write (issues: write on issues)"

    def find() -> Any:
        return next((c for c in issue.get_comments()
                     if (c.body or "").startswith(head) and author.wrote(c)), None)

    existing = gh.call(f"listing the comments of #{number}", find,
                       permission="pull-requests: read")
    if existing is None:
        comment = gh.call(f"commenting on #{number}", lambda: issue.create_comment(body),
                          permission=perm)
        runner.log(f"created comment {comment.html_url}")
        author.check_created(comment, f"comment {comment.html_url}")
        return comment
    if existing.body == body:
        runner.log(f"comment {existing.html_url} is already up to date")
    else:
        gh.call(f"updating comment {existing.id} on #{number}", lambda: existing.edit(body),
                permission=perm)
        runner.log(f"updated comment {existing.html_url}")
    return existing


def _sticky_issue(gh: GitHub, title: str, *, labels: list[str], head: str, body: str,
                  author: Author, runner: Runner) -> Any:
    """Our open issue (not pull request) with our labels whose body starts with the marker."""

    def find() -> Any:
        issues = gh.repo.get_issues(state="open", labels=labels) if labels else \
            gh.repo.get_issues(state="open")
        return next((i for i in issues
                     if i.pull_request is None and (i.body or "").startswith(head)
                     and author.wrote(i)), None)

    existing = gh.call("looking for the sticky issue", find, permission="issues: read")
    if existing is None:
        issue = gh.call(f"opening issue {title!r}",
                        lambda: gh.repo.create_issue(title=title, body=body, labels=labels),
                        permission="issues: write")
        runner.log(f"opened issue #{issue.number}: {issue.html_url}")
        author.check_created(issue, f"issue #{issue.number}")
        return issue
    if existing.body == body and existing.title == title:
        runner.log(f"issue #{existing.number} is already up to date")
    else:
        gh.call(f"updating issue #{existing.number}",
                lambda: existing.edit(title=title, body=body), permission="issues: write")
        runner.log(f"updated issue #{existing.number}: {existing.html_url}")
    return existing


def _number(raw: str, ctx: Context, *, fallback: bool) -> int | None:
    """The explicit number, else the event's; None only when an issue may be opened instead."""
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
    if found is None and not fallback:
        raise UsageError(
            f"no pull request or issue to comment on: the {ctx.event_name or 'current'} event "
            "has none.",
            "Pass number (for workflow_run, the ci-context step's pr-number output), or "
            "issue-title to open an issue when there is none.",
        )
    return found
