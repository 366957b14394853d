"""``publish``: commit the agent's changes to a bot branch and open or update a pull request.

The bot branch is always "the checked-out commit plus one commit with the changes", so a
re-run replaces it (force-with-lease, and only when its tip is a commit publish made) and
updates the same pull request instead of opening another.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cursor_agent_action.agent.launch.statedir import STATE_PREFIX, state_root
from cursor_agent_action.changeset import ABSENT_MODE
from cursor_agent_action.docpages.kinds import usually_executed
from cursor_agent_action.errors import GitHubError, PublishRefused, UsageError
from cursor_agent_action.gh.api import (
    COMMENT_LIMIT,
    Context,
    GitHub,
    add_token_option,
    fork_note,
    read_token,
)
from cursor_agent_action.gh.bodies import add_body_options, compose_body
from cursor_agent_action.gh.publish import gitops, patchcheck, signed
from cursor_agent_action.markdown import inline
from cursor_agent_action.options import add_flag, add_option, items, lines
from cursor_agent_action.runner_io import Runner, listing
from cursor_agent_action.worktree import shown_path

DEFAULT_BRANCH_TEMPLATE = "cursor-agent/{job}/{head_ref}"
DEFAULT_TITLE = "cursor-agent: changes for {head_ref}"
DEFAULT_PROTECTED = "\n".join(patchcheck.DEFAULT_PROTECTED)
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
PLACEHOLDERS = {
    "head_ref": "the pull request's head branch (GITHUB_HEAD_REF), else GITHUB_REF_NAME",
    "base_ref": "the pull request's base branch (GITHUB_BASE_REF)",
    "ref_name": "GITHUB_REF_NAME",
    "pr_number": "the number of the triggering pull request or issue",
    "run_id": "GITHUB_RUN_ID",
    "run_number": "GITHUB_RUN_NUMBER",
    "job": "GITHUB_JOB (the job id)",
    "workflow": "GITHUB_WORKFLOW",
    "sha": "the first 7 characters of the checked-out commit",
}
SIGNING = ("git", "api")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_UNSAFE_IN_BRANCH = re.compile(r"[^A-Za-z0-9._/-]+")


def configure(parser: argparse.ArgumentParser) -> None:
    names = ", ".join(f"{{{name}}}" for name in PLACEHOLDERS)
    add_option(parser, "--working-directory", default=".", help="the repository with the changes")
    add_option(parser, "--branch-template", default=DEFAULT_BRANCH_TEMPLATE,
               help=f"name of the bot branch; placeholders: {names}")
    add_option(parser, "--base", default="",
               help="branch the pull request targets",
               default_help="GITHUB_HEAD_REF on pull_request events, else GITHUB_REF_NAME")
    add_option(parser, "--title", default=DEFAULT_TITLE,
               help="pull request title (same placeholders)")
    add_option(parser, "--commit-message", default="",
               help="commit message (same placeholders)", default_help="the title")
    add_option(parser, "--author-name", default=BOT_NAME, help="commit author and committer name")
    add_option(parser, "--author-email", default=BOT_EMAIL,
               help="commit author and committer email")
    add_body_options(parser, "pull request body")
    add_option(parser, "--labels", default="", help="labels to add, comma or newline separated")
    add_flag(parser, "--draft", default=False, help="open the pull request as a draft")
    add_option(parser, "--patch-file", default="",
               help="publish this patch (the run step's patch-file output), applied to the "
               "checked-out commit in a temporary index; the working tree is not read",
               default_help="none: publish what differs in the working tree")
    add_option(parser, "--allowed-paths", default="",
               help="globs (newline separated) every change must match, else nothing is "
               "published", default_help="none: any path not protected")
    add_option(parser, "--protected-paths", default=DEFAULT_PROTECTED,
               help="globs (newline separated) the changes must not touch, compared "
               "case-folded and Unicode-normalized; 'none' allows all (.git* files, "
               "submodules and links leaving the repository are always refused)")
    add_flag(parser, "--allow-links", default=False,
             help="publish new or changed symbolic links that stay inside the repository "
             "(followed through other links) and lead to no .git or protected path")
    add_option(parser, "--remote", default="origin", help="git remote to push to")
    add_option(parser, "--commit-signing", default="git", choices=SIGNING,
               help="git: commit locally and push (not signed); api: GitHub makes the commit "
               "through GraphQL createCommitOnBranch and signs it (Verified)")
    add_flag(parser, "--allow-same-job", default=False,
             help="do not warn when the agent ran earlier in this job")
    add_token_option(parser)


def agent_ran_in_this_job(env: Mapping[str, str]) -> bool:
    """Whether the run step of this action ran earlier in this job (its state directories are
    in this job's RUNNER_TEMP)."""
    return bool(env.get("RUNNER_TEMP")) and any(state_root(env).glob(f"{STATE_PREFIX}*"))


def placeholder_values(env: Mapping[str, str], ctx: Context, head_sha: str) -> dict[str, str]:
    number = ctx.issue_number()
    return {
        "head_ref": env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME", ""),
        "base_ref": env.get("GITHUB_BASE_REF", ""),
        "ref_name": env.get("GITHUB_REF_NAME", ""),
        "pr_number": str(number) if number is not None else "",
        "run_id": ctx.run_id,
        "run_number": env.get("GITHUB_RUN_NUMBER", ""),
        "job": env.get("GITHUB_JOB", ""),
        "workflow": env.get("GITHUB_WORKFLOW", ""),
        "sha": head_sha[:7],
    }


def render(template: str, values: Mapping[str, str], *, what: str, branch: bool = False) -> str:
    """Fill ``{placeholder}``s; for a branch, unsafe characters in values become '-'."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise UsageError(f"unknown placeholder {{{name}}} in {what} {template!r}.",
                             f"Use one of: {', '.join('{' + n + '}' for n in PLACEHOLDERS)}.")
        value = values[name]
        if not value:
            raise UsageError(f"placeholder {{{name}}} in {what} {template!r} is empty in this run "
                             f"({PLACEHOLDERS[name]}).",
                             f"Use a placeholder this event provides, or set the {what} literally.")
        return _UNSAFE_IN_BRANCH.sub("-", value).strip("-") if branch else value

    return _PLACEHOLDER.sub(fill, template)


def command(args: argparse.Namespace, runner: Runner) -> int:
    env = os.environ
    ctx = Context.from_env()
    # First: without a token nothing else matters (and the push credential is masked early).
    token = read_token(args.token_env, ctx, runner)
    runner.mask(gitops.basic_credential(token))  # the form git sends: as actions/checkout does
    if not args.allow_same_job and agent_ran_in_this_job(env):
        runner.warning(
            "publish runs in the same job as the agent: its write token shares a runner with "
            "whatever the agent's run left there, and the change comes from the agent's own "
            "tree. Fix: run the agent in a job with a read-only token, hand its patch-file to "
            "a second job that checks out the commit and runs publish with patch-file and "
            "allowed-paths (examples/docs-update.yml); or set allow-same-job: true to silence "
            "this.", title="publish in the agent's job")
    repo = gitops.toplevel(Path(args.working_directory))
    head = gitops.head_commit(repo)
    values = placeholder_values(env, ctx, head)
    branch = render(args.branch_template, values, what="branch template", branch=True)
    if not gitops.valid_branch(branch, repo):
        raise UsageError(f"{branch!r} (from --branch-template) is not a valid branch name.",
                         "Use letters, digits, '/', '-', '.' and '_' only.")
    base = args.base or values["head_ref"]
    if not base:
        raise UsageError("no base branch for the pull request.", "Set base (e.g. main).")
    if branch == base:
        raise UsageError(f"the bot branch {branch!r} is the base branch itself.",
                         "Choose a branch-template that names a separate branch.")
    title = render(args.title, values, what="title")
    message = render(args.commit_message or args.title, values, what="commit message")
    labels = items(args.labels)
    protected = [] if args.protected_paths.strip().lower() == "none" else lines(
        [args.protected_paths or DEFAULT_PROTECTED])

    tree = _new_tree(repo, head, args.patch_file)
    found = patchcheck.changes(repo, head, tree)
    if not found:
        what = "the patch changes nothing" if args.patch_file else "nothing changed in the "
        what += "" if args.patch_file else "working tree"
        runner.log(f"publish: {what}; no branch, no pull request.")
        runner.set_outputs({"changed": "false", "branch": "", "commit-sha": "",
                            "pr-number": "", "pr-url": ""})
        return 0
    judged = patchcheck.pages(repo, found, tree)
    refused = patchcheck.problems(repo, found, allowed=lines([args.allowed_paths]),
                                  protected=protected, tree=tree, allow_links=args.allow_links,
                                  judged=judged)
    if refused:
        raise patchcheck.refusal(refused)
    paths = [change.path for change in found]
    links = {"Workflow run": ctx.run_url} if ctx.run_url else {}
    note = executed_note(found, runner, judged.code)
    body = note + compose_body(transcript=args.transcript, final_message=args.final_message,
                               body=args.body, body_file=args.body_file, links=links,
                               max_chars=COMMENT_LIMIT - len(note), redact=runner.redact)

    with runner.group(f"publish {len(paths)} changed file(s) to {branch}"):
        runner.untrusted("\n".join(paths))  # names the agent chose: never workflow commands
        gh = GitHub(ctx, token, log=runner.log)
        try:
            sha = _push_branch(repo, args, branch=branch, head=head, tree=tree,
                               message=message, gh=gh, found=found, runner=runner)
        except gitops.AccessDenied as exc:
            exc.hint += fork_note(ctx)
            raise
        pull = _open_or_update(gh, branch=branch, base=base, title=title, body=body,
                               labels=labels, draft=args.draft, runner=runner)
    outputs = {"changed": "true", "branch": branch, "commit-sha": sha,
               "pr-number": str(pull.number), "pr-url": pull.html_url}
    runner.set_outputs(outputs)
    runner.append_summary(f"### Published\n\n{len(paths)} changed file(s) on `{branch}`: "
                          f"[pull request #{pull.number}]({pull.html_url})\n\n{note}")
    return 0


def executed_note(found: list[patchcheck.Change], runner: Runner,
                  code_pages: list[str] | None = None) -> str:
    """One warning naming the added or changed files a build, a test run or a docs toolchain
    usually executes (docpages.kinds.EXECUTED) and the pages compiled as code (MDX), even
    though allowed-paths let them through; the same line for the pull request's body and the
    summary ("" when there are none)."""
    executed = usually_executed([c.path for c in found if c.new_mode != ABSENT_MODE])
    shown = [shown_path(path) for path in executed] + list(code_pages or ())
    if not shown:
        return ""
    executed = shown
    runner.warning(f"The change holds {len(executed)} file(s) that builds, test runs or docs "
                   f"toolchains usually execute: {listing(shown)}. allowed-paths lets them "
                   "through; review them as code before merging (docs/permissions.md lists "
                   "these names).", title="executable files in the change")
    return (f"> [!WARNING]\n> This change holds {len(executed)} file(s) that builds, test runs "
            f"or docs toolchains usually execute: {inline(listing(shown), 1500)}. Review them "
            "as code.\n\n")


def _new_tree(repo: Path, head: str, patch_file: str) -> str:
    """The tree to publish: the patch on the checked-out commit, or the working tree."""
    if not patch_file:
        return patchcheck.tree_from_work_tree(repo, head)
    patch = Path(patch_file)
    if not patch.is_file():
        raise UsageError(f"patch-file {patch_file} does not exist or is not a file.",
                         "Pass the run step's patch-file output (in another job: upload it as "
                         "an artifact and download it first).")
    base = patchcheck.patch_base(patch)
    if base and base != head:
        raise GitHubError(
            f"the patch was made against commit {base[:12]}, but {head[:12]} is checked out.",
            "Check out the commit the agent worked on (actions/checkout with ref: the agent "
            "job's github.sha or the pull request's head sha) before publishing.")
    return patchcheck.tree_from_patch(repo, head, patch)


def _push_branch(repo: Path, args: argparse.Namespace, *, branch: str, head: str, tree: str,
                 message: str, gh: GitHub, found: list[patchcheck.Change],
                 runner: Runner) -> str:
    remote, ctx = args.remote, gh.ctx
    trailer = f"{gitops.TRAILER}: {ctx.run_url or 'local'}"
    full_message = f"{message.rstrip()}\n\n{trailer}\n"
    auth = gitops.auth_env(ctx.server_url, gh.token)
    tip = gitops.remote_tip(repo, remote, branch, auth)
    if tip is not None:
        tip_tree, tip_parent, tip_author, tip_trailer = gitops.commit_info(repo, tip)
        if not tip_trailer:
            raise PublishRefused(
                f"refused to publish: overwriting branch {branch} on {remote}, whose tip "
                f"{tip[:12]} (by {tip_author}) was not made by cursor-agent-action publish.",
                "Someone else's work is on that branch. Delete or rename it, or choose "
                "another branch-template.",
            )
        if (tip_tree, tip_parent) == (tree, head):
            runner.log(f"{branch} already holds exactly these changes ({tip[:12]}); not pushing.")
            return tip
    if args.commit_signing == "api":
        sha = signed.commit_on_branch(gh, repo, found, branch=branch, head=head,
                                      message=full_message, exists=tip is not None)
        runner.log(f"GitHub made the signed commit {sha[:12]} on {branch}"
                   + (f" (replacing {tip[:12]})" if tip else ""))
        return sha
    sha = gitops.commit_tree(repo, tree, head, message=full_message,
                             author_name=args.author_name, author_email=args.author_email)
    gitops.push(repo, remote, sha, branch, expected=tip or "", env=auth)
    runner.log(f"pushed {sha[:12]} to {branch}" + (f" (replacing {tip[:12]})" if tip else ""))
    return sha


def _open_or_update(gh: GitHub, *, branch: str, base: str, title: str, body: str,
                    labels: list[str], draft: bool, runner: Runner) -> Any:
    head = f"{gh.ctx.owner}:{branch}"
    perm = "pull-requests: write"

    def find() -> Any:
        found = list(gh.repo.get_pulls(state="open", head=head, base=base))
        return found[0] if found else None

    pull = gh.call("listing pull requests", find, permission="pull-requests: read")
    if pull is None:
        try:
            pull = gh.call(f"opening a pull request {branch} -> {base}",
                           lambda: gh.repo.create_pull(base=base, head=branch, title=title,
                                                       body=body, draft=draft),
                           permission=perm)
            runner.log(f"opened pull request #{pull.number}: {pull.html_url}")
        except GitHubError as exc:
            if "already exists" not in exc.message:  # another job opened it just now
                raise
            pull = gh.call("listing pull requests", find, permission="pull-requests: read")
            if pull is None:
                raise
    if not (pull.title == title and pull.body == body):
        current = pull
        gh.call(f"updating pull request #{current.number}",
                lambda: current.edit(title=title, body=body), permission=perm)
        runner.log(f"updated pull request #{current.number}: {current.html_url}")
    if labels:
        current = pull
        gh.call(f"labelling pull request #{current.number}",
                lambda: current.add_to_labels(*labels), permission=perm)
    return pull
