"""``gate``: may this event start the agent, and with what task?

For a comment command (``issue_comment``: ``/cursor [preset] task`` on a pull request) and for
any other event, the person who caused it must have ``write`` or higher on the repository
(REST collaborator permission; ``maintain`` and ``admin`` count), bots are refused unless
listed in ``--allowed-bots``, and a pull request from a fork is refused (the agent would run on
the fork's code in a job that holds your API key). A refusal is an answer, not a failure: the
step succeeds with ``allowed=false`` and a notice, so a busy thread does not turn into a storm
of red runs. Only a broken request (no token, the API unreachable) fails the step.

The comment is untrusted text: it leaves this step only as the ``task`` output (written with a
random delimiter) and is never printed as a workflow command.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from typing import Any

from cursor_agent_action.agent.guards.permissions import PRESETS
from cursor_agent_action.errors import GitHubError
from cursor_agent_action.gh.api import Context, GitHub, add_token_option, read_token
from cursor_agent_action.markdown import inline
from cursor_agent_action.options import add_option, items
from cursor_agent_action.runner_io import Runner, one_line

WRITE_LEVELS = ("admin", "maintain", "write")
DEFAULT_COMMAND = "/cursor"
TASK_LIMIT = 20_000


@dataclass
class Decision:
    allowed: bool
    reason: str
    actor: str = ""
    task: str = ""
    preset: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--command", default=DEFAULT_COMMAND, dest="trigger",
               help="the word a comment starts with to call the agent")
    add_option(parser, "--allowed-presets", default="docs\nedit",
               help="presets a comment may ask for (the first is used when it names none); "
               "comma or newline separated")
    add_option(parser, "--allowed-bots", default="",
               help="bot logins that may trigger the agent (e.g. dependabot[bot]); comma or "
               "newline separated", default_help="none")
    add_token_option(parser)


def parse_command(body: str, command: str, presets: list[str]) -> tuple[str, str, str]:
    """(preset, task, refusal): ``/cursor [preset] task``; a refusal when it is not one."""
    text = body.strip()
    if not re.match(rf"{re.escape(command)}(\s|$)", text):
        return "", "", f"the comment does not start with {command}"
    rest = text[len(command):].strip()
    first, _, after = rest.partition(" ")
    preset = presets[0]
    if first in PRESETS:
        if first not in presets:
            return "", "", (f"the comment asks for the {first} preset, which this workflow does "
                            f"not allow (allowed: {', '.join(presets)})")
        preset, rest = first, after.strip()
    if not rest:
        return "", "", f"no task after {command}"
    if len(rest) > TASK_LIMIT:
        return "", "", f"the task is over {TASK_LIMIT:,} characters"
    return preset, rest, ""


def _actor(event: dict[str, Any], fallback: str) -> dict[str, Any]:
    """Who caused the event: the comment's or review's author, else the sender."""
    candidates = [(event.get("comment") or {}).get("user"),
                  (event.get("review") or {}).get("user"), event.get("sender")]
    for user in candidates:
        if isinstance(user, dict) and user.get("login"):
            return user
    return {"login": fallback, "type": "User"}


def decide(ctx: Context, gh: GitHub, *, command: str, presets: list[str],
           bots: list[str], fallback_actor: str) -> Decision:
    event = ctx.event
    user = _actor(event, fallback_actor)
    login = str(user.get("login", ""))
    number = ctx.issue_number()
    preset, task = "", ""
    if ctx.event_name == "issue_comment":
        if event.get("action") != "created":
            return Decision(False, "only a new comment is a command (this one was "
                            f"{event.get('action', 'changed')})", login)
        if not (event.get("issue") or {}).get("pull_request"):
            return Decision(False, "comment commands work on pull requests only", login)
        preset, task, refusal = parse_command(str((event.get("comment") or {}).get("body", "")),
                                              command, presets)
        if refusal:
            return Decision(False, refusal, login)
    if not login:
        return Decision(False, "the event names nobody who caused it", login)
    is_bot = user.get("type") == "Bot" or login.endswith("[bot]")
    if is_bot and login not in bots:
        return Decision(False, f"{login} is a bot, and allowed-bots does not list it", login)
    if not is_bot:
        level = gh.call(f"reading {login}'s permission on {ctx.repository}",
                        lambda: _permission(gh, login), permission="metadata: read")
        if level not in WRITE_LEVELS:
            return Decision(False, f"{login} has {level} permission on {ctx.repository}; "
                            "write or higher is needed", login)
    outputs = {"pr-number": str(number) if number is not None else ""}
    if number is not None and (ctx.event_name == "issue_comment" or "pull_request" in event):
        pull = gh.call(f"reading pull request #{number}", lambda: gh.repo.get_pull(number),
                       permission="pull-requests: read")
        head_repo = pull.head.repo.full_name if pull.head.repo is not None else ""
        if head_repo != ctx.repository:
            return Decision(False, f"pull request #{number} comes from the fork "
                            f"{head_repo or '(deleted)'}: the agent would run its code next to "
                            "your API key", login)
        outputs.update({"head-sha": pull.head.sha, "head-ref": pull.head.ref,
                        "base-ref": pull.base.ref})
    return Decision(True, "", login, task, preset, outputs)


def _permission(gh: GitHub, login: str) -> str:
    from github import GithubException  # noqa: PLC0415 - only the gh wing imports PyGithub

    try:
        return str(gh.repo.get_collaborator_permission(login))
    except GithubException as exc:
        if exc.status == 404:  # not a collaborator (or no such user)
            return "none"
        raise


def command(args: argparse.Namespace, runner: Runner) -> int:
    ctx = Context.from_env()
    token = read_token(args.token_env, ctx, runner)
    presets = items(args.allowed_presets)
    unknown = [p for p in presets if p not in PRESETS]
    if not presets or unknown:
        raise GitHubError(f"allowed-presets: {', '.join(unknown) or '(empty)'} is not a preset.",
                          f"List presets from: {', '.join(PRESETS)}.")
    gh = GitHub(ctx, token, log=runner.log)
    decision = decide(ctx, gh, command=args.trigger, presets=presets,
                      bots=items(args.allowed_bots),
                      fallback_actor=os.environ.get("GITHUB_ACTOR", ""))
    outputs = {"allowed": "true" if decision.allowed else "false", "reason": decision.reason,
               "actor": decision.actor, "task": decision.task, "preset": decision.preset,
               "pr-number": "", "head-sha": "", "head-ref": "", "base-ref": "",
               **decision.outputs}
    runner.set_outputs(outputs)
    if decision.allowed:
        runner.log(one_line(f"gate: {decision.actor} may start the agent"
                            + (f" ({decision.preset} preset)" if decision.preset else ""), 400))
    else:
        runner.notice(one_line(f"Not starting the agent: {decision.reason}.", 600),
                      title="cursor-agent-action gate")
        reason = inline(runner.redact(decision.reason), 600)  # as text, before it is escaped
        runner.append_summary(f"### Agent not started\n\n{reason}.\n\n")
    return 0
