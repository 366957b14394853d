"""The ``run`` command's options: parsed, validated and turned into :class:`RunOptions`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cursor_agent_action import safegit
from cursor_agent_action.agent.contain.box.net.credentials import MASKED, MASKED_OR_FAIL
from cursor_agent_action.agent.contain.box.net.credentials import MODES as KEY_MASKING_MODES
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy, build_policy
from cursor_agent_action.agent.contain.isolation import BOX_MAX_FILES, DEFAULT_AGENT_USER, MODES
from cursor_agent_action.agent.guards.permissions import (
    Policy,
    add_policy_options,
    policy_from_args,
)
from cursor_agent_action.agent.guards.repo_config import INSTRUCTION_MODES
from cursor_agent_action.agent.launch.extra_args import parse_extra_args
from cursor_agent_action.agent.launch.mcp import McpConfig, parse_mcp_config
from cursor_agent_action.agent.launch.output_schema import OutputSchema, load_schema
from cursor_agent_action.agent.launch.statedir import new_state_dir
from cursor_agent_action.errors import SetupError, UsageError
from cursor_agent_action.options import (
    TakesDashValue,
    add_flag,
    add_list,
    add_number,
    add_option,
    read_input_file,
    setting,
)

NETWORK_MODES = ("restricted", "open")
DEFAULT_TIMEOUT_MINUTES = 30.0
DEFAULT_MAX_RETRIES = 2
MAX_RETRIES = 10
DEFAULT_RETRY_DELAY_S = 10.0
MAX_RETRY_DELAY_S = 120.0

# Names --pass-env refuses: runner credentials and the runner's own plumbing.
_NEVER_PASS = re.compile(r"^(GITHUB_.*|GH_.*|ACTIONS_.*|INPUT_.*|RUNNER_.*|CURSOR_CONFIG_DIR)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")



# -- options -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """A validated ``run`` request."""

    prompt: str
    agent_bin: Path
    workspace: Path
    state_dir: Path  # private to this run: CLI config dir, long prompt, result file, transcript
    transcript: Path
    policy: Policy
    timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES
    model: str = ""
    resume: str = ""
    fail_on_error: bool = True
    verbose: bool = False
    max_retries: int = DEFAULT_MAX_RETRIES
    retry_delay_s: float = DEFAULT_RETRY_DELAY_S
    pass_env: tuple[str, ...] = field(default=())
    isolation: str = "auto"
    agent_user: str = DEFAULT_AGENT_USER
    extra_args: tuple[str, ...] = field(default=())
    output_schema: OutputSchema | None = None
    max_tool_calls: int | None = None  # None: no budget
    max_tree_files: int = BOX_MAX_FILES  # the box's cap on the work tree's entries
    mcp_config: McpConfig | None = None
    transcript_artifact: str = ""  # the artifact the action uploads the transcript as
    repo_instructions: str = "keep"  # or "ignore": set the repository's instruction files aside
    network: str = "restricted"  # "restricted": the wall (contained runs only), or "open"
    net_policy: NetPolicy | None = None  # the wall's rules (defaults, allowed-domains, MCP)
    key_masking: str = MASKED  # api-key-masking (agent.contain.box.net.credentials)
    view_commit: str = ""  # view-commit: the box shows this commit's tree, not the checkout


def add_run_options(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--prompt", help="the task for the agent")
    add_option(parser, "--prompt-file", help="read the task from this UTF-8 file")
    add_option(parser, "--model", help="model name", default_help="the CLI's, Auto")
    add_option(parser, "--agent-bin", help="the CLI to run",
               default_help="cursor-agent, then agent, on PATH")
    add_option(parser, "--working-directory", default=".",
               help="the workspace the agent works in")
    add_number(parser, "--timeout-minutes", default=DEFAULT_TIMEOUT_MINUTES,
               above_minimum=True, help="stop the agent after this long; decimals allowed")
    add_option(parser, "--transcript", help="save the agent's stdout here (secrets replaced "
               "by ***)", default_help="transcript.jsonl in a new directory "
               "$RUNNER_TEMP/cursor-agent-action/run-* for each run (outside a runner: "
               "cursor-agent-action-UID in the temp directory)")
    add_option(parser, "--transcript-artifact", default="", metavar="NAME",
               help="the artifact the transcript is uploaded as (named in the job summary)")
    add_policy_options(parser)
    add_option(parser, "--resume", help="resume this chat session id", metavar="SESSION_ID")
    add_flag(parser, "--fail-on-error", default=True,
             help="exit 1 when the run does not succeed")
    add_flag(parser, "--verbose", default=False,
             help="print every tool call's full output in the log")
    add_number(parser, "--max-retries", default=DEFAULT_MAX_RETRIES, integer=True,
               maximum=MAX_RETRIES, help="retries of a transient failure (rate limit, API "
               "unavailable) before any tool ran")
    add_number(parser, "--retry-delay", default=DEFAULT_RETRY_DELAY_S, maximum=MAX_RETRY_DELAY_S,
               metavar="SECONDS", help="seconds before the first retry, doubled each time")
    add_option(parser, "--extra-args", default="", action=TakesDashValue, metavar="ARGS",
               help="more arguments for the CLI, one per line (no shell parsing); rights-"
               "widening ones are refused (see agent/launch/extra_args.py); --extra-args --x works")
    add_option(parser, "--isolation", default="auto", choices=MODES,
               help="contain the agent (its own user, PID namespace and home): auto (when the "
               "runner allows it, else warn), user (or fail) or none (unsafe)")
    add_option(parser, "--repo-instructions", default="keep", choices=INSTRUCTION_MODES,
               help="keep the repository's instruction files (AGENTS.md, CLAUDE.md, "
               ".cursorrules, .cursor/rules, commands and skills) for the agent, or ignore "
               "them (set aside for the run, as its configuration always is): for untrusted "
               "changes")
    add_option(parser, "--agent-user", default=DEFAULT_AGENT_USER,
               help="the unprivileged user a contained agent runs as (created if missing)")
    add_option(parser, "--output-schema", default="", metavar="JSON",
               help="a JSON Schema (JSON or YAML): the agent's answer must end with a JSON "
               "value matching it (set as structured-output; asked again once if it does not "
               "match)")
    add_option(parser, "--output-schema-file", default="", metavar="PATH",
               help="the JSON Schema in a file, instead of --output-schema")
    add_number(parser, "--max-tool-calls", default=0, integer=True, maximum=1_000_000,
               help="stop the agent when it starts more tool calls than this (conclusion "
               "budget); 0 for no limit")
    add_number(parser, "--max-tree-files", default=BOX_MAX_FILES, integer=True, minimum=1,
               maximum=100_000_000, help="the most files and directories the box takes from the "
               "working tree; a larger tree fails before the agent starts")
    add_option(parser, "--mcp-config", default="", metavar="JSON",
               help="MCP servers for this run, in the CLI's mcp.json format (JSON or YAML); "
               "their secrets as ${env:NAME} with NAME in --pass-env")
    add_option(parser, "--network", default="restricted", choices=NETWORK_MODES,
               help="a contained agent's network: restricted (out by name only: Cursor's "
               "domains, --allowed-domains and mcp-config's URL hosts) or open (the runner's "
               "network, with a warning)")
    add_option(parser, "--key-masking", default=MASKED, choices=KEY_MASKING_MODES,
               help="where the Cursor API key is while a walled agent runs: masked (the agent "
               "gets a placeholder and the relay swaps in the key for Cursor's names only; if "
               "the CLI refuses the relay's certificate before any request reached Cursor, it "
               "runs once more with the key), masked-or-fail (no such fallback) or off (the key "
               "in the agent's environment)")
    add_option(parser, "--view-commit", default="", metavar="SHA",
               help="show the contained agent this commit's tree (its objects must be in the "
               "repository: fetched, never checked out) instead of the checkout: for a fork's "
               "pull request; needs the box, the network wall, --key-masking masked-or-fail and "
               "the read-only preset; no patch comes back")
    add_list(parser, "--allowed-domains", metavar="HOST", help="more names a contained agent "
             "may reach: host or *.domain, optional :port (default ports 443 and 80)")
    add_list(parser, "--pass-env", metavar="NAME", help="also give the agent this environment "
             "variable; GITHUB_*, GH_*, ACTIONS_*, INPUT_*, RUNNER_* are refused")


def read_prompt(prompt: str | None, prompt_file: str | None) -> str:
    """The prompt from ``--prompt`` or ``--prompt-file`` (exactly one), non-empty."""
    if prompt and prompt_file:
        raise UsageError("both a prompt and a prompt file were given.",
                         "Pass either prompt or prompt-file, not both.")
    if prompt_file:
        prompt = read_input_file(prompt_file, "prompt-file")
    if not prompt or not prompt.strip():
        where = f"the prompt file {prompt_file} is empty" if prompt_file else "no prompt given"
        raise UsageError(f"{where}.", "Pass the task as prompt (or --prompt) or as a file in "
                         "prompt-file (or --prompt-file).")
    if "\0" in prompt:
        raise UsageError("the prompt contains a NUL character.", "Remove it from the prompt.")
    return prompt


def find_agent(requested: str) -> Path:
    """The CLI binary: ``requested`` (a path or a name on PATH), else cursor-agent, else agent."""
    candidates = [requested] if requested else ["cursor-agent", "agent"]
    for name in candidates:
        found = shutil.which(name)
        if found:
            return Path(found).absolute()
    if requested and os.sep in requested:  # a path: PATH plays no part
        if Path(requested).exists():
            raise SetupError(f"{setting('--agent-bin')}: {requested} is not an executable "
                             f"file.", f"Run 'chmod +x {requested}' or point "
                             f"{setting('--agent-bin')} at the Cursor CLI.")
        raise SetupError(f"{setting('--agent-bin')}: {requested} does not exist.",
                         f"Point {setting('--agent-bin')} at an installed Cursor CLI, or give "
                         "a command name to look up on PATH.")
    raise SetupError(
        f"the Cursor CLI was not found ({' or '.join(candidates)} on PATH).",
        "Install it first (the action's install step, or 'cursor-agent-action install') or "
        f"give its path in {setting('--agent-bin')}.",
    )


_USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,30}$")


def _agent_user(name: str) -> str:
    if not _USER_NAME.match(name) or name == "root":
        raise UsageError(f"agent-user {name!r} is not a valid name for an unprivileged user.",
                         "Use lower-case letters, digits, '_' and '-' (e.g. cursor-agent).")
    return name


def _pass_env_names(names: Sequence[str]) -> tuple[str, ...]:
    for name in names:
        if not _ENV_NAME.match(name):
            raise UsageError(f"pass-env: {name!r} is not an environment variable name.",
                             "List one variable name per line.")
        if _NEVER_PASS.match(name):
            raise UsageError(f"pass-env: {name} may not be passed to the agent (runner "
                             "credentials and plumbing never reach it).",
                             "Remove it; the action's own steps do the GitHub work.")
    return tuple(names)


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _single_line(value: str, label: str) -> str:
    """``value`` stripped; a UsageError if it still holds a control character (a newline
    could start a workflow command in the log, and no model or session id has one)."""
    value = value.strip()
    if _CONTROL.search(value):
        raise UsageError(f"{label} contains a control character (newline, tab, ...): "
                         f"{value!r}.", f"Pass {label} as one plain line.")
    return value


def options_from_args(args: argparse.Namespace) -> RunOptions:
    """Validate the command line (flags win over ``CURSOR_AGENT_ACTION_*`` env vars)."""
    prompt = read_prompt(args.prompt or None, args.prompt_file or None)
    workspace = Path(args.working_directory).absolute()
    if not workspace.is_dir():
        raise SetupError(f"the working directory {workspace} does not exist or is not a "
                         "directory.", "Check working-directory; it is relative to the job's "
                         "working directory (usually the checked-out repository).")
    policy = policy_from_args(args)
    model = _single_line(args.model, setting("--model"))
    resume = _single_line(args.resume, setting("--resume"))
    pass_env = _pass_env_names(args.pass_env)
    extra_args = parse_extra_args(args.extra_args)
    output_schema = load_schema(args.output_schema, args.output_schema_file)
    mcp_config = parse_mcp_config(args.mcp_config, pass_env)
    if args.network not in NETWORK_MODES:
        raise UsageError(f"{setting('--network')} must be restricted or open, not "
                         f"{args.network!r}.", "Use restricted (the default: out by name only) "
                         f"or open; list the names the agent needs in "
                         f"{setting('--allowed-domains')}.")
    if args.key_masking not in KEY_MASKING_MODES:
        raise UsageError(f"{setting('--key-masking')} must be masked, masked-or-fail or off, "
                         f"not {args.key_masking!r}.", "Use masked (the default: the agent "
                         "sees a placeholder, the relay holds the key), masked-or-fail, or off.")
    view_commit = _view_commit(args, policy, workspace)
    net_policy = build_policy(args.allowed_domains, mcp_config.urls if mcp_config else ())
    agent_bin = find_agent(args.agent_bin)
    state_dir = new_state_dir(os.environ)  # last: nothing is created for a refused request
    return RunOptions(
        prompt=prompt,
        agent_bin=agent_bin,
        workspace=workspace,
        state_dir=state_dir,
        transcript=(Path(args.transcript).absolute() if args.transcript
                    else state_dir / "transcript.jsonl"),
        policy=policy,
        timeout_minutes=args.timeout_minutes,
        model=model,
        resume=resume,
        fail_on_error=args.fail_on_error,
        verbose=args.verbose,
        max_retries=args.max_retries,
        retry_delay_s=args.retry_delay,
        pass_env=pass_env,
        isolation="user" if view_commit else args.isolation,  # the box, or no run at all
        extra_args=extra_args,
        output_schema=output_schema,
        max_tool_calls=args.max_tool_calls or None,
        max_tree_files=int(args.max_tree_files),
        mcp_config=mcp_config,
        transcript_artifact=_single_line(args.transcript_artifact,
                                         setting("--transcript-artifact")),
        agent_user=_agent_user(args.agent_user),
        repo_instructions=args.repo_instructions,
        network=args.network,
        net_policy=net_policy,
        key_masking=args.key_masking,  # the input api-key-masking
        view_commit=view_commit,
    )


_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _view_commit(args: argparse.Namespace, policy: Policy, workspace: Path) -> str:
    """``view-commit``: a full commit id, given only with what keeps a fork's tree harmless
    (the box, the wall, the key held by the relay with no fallback, no writes), and already in
    the repository's objects; "" without."""
    value = (args.view_commit or "").strip().lower()
    if not value:
        return ""
    name = setting("--view-commit")
    if not _COMMIT.fullmatch(value):
        raise UsageError(f"{name} must be a full commit id (40 hexadecimal digits), not "
                         f"{args.view_commit!r}.", "Give it the pull request's head commit: "
                         "${{ github.event.pull_request.head.sha }}.")
    needs = [
        (args.isolation == "none", f"{setting('--isolation')} none runs the agent outside "
         "the box", f"leave {setting('--isolation')} unset (auto) or set it to user"),
        (args.network != "restricted", f"{setting('--network')} open gives the agent the "
         "runner's network", f"leave {setting('--network')} unset (restricted)"),
        (args.key_masking != MASKED_OR_FAIL, f"{setting('--key-masking')} "
         f"{args.key_masking} can put the API key in the agent's box",
         f"set {setting('--key-masking')} to masked-or-fail"),
        (policy.allows_writes, f"the {policy.preset} preset lets the agent write, and no change "
         "comes back from a commit's view", "use the read-only preset"),
    ]
    for refused, why, fix in needs:
        if refused:
            raise UsageError(f"{name} shows the agent code you do not trust (a fork's pull "
                             f"request), so the agent runs only in the box, behind the network "
                             f"wall, with the API key masked; here {why}.",
                             f"{fix[0].upper()}{fix[1:]}.")
    try:  # the object itself a commit (a tag's id would show the commit it names)
        kind = safegit.git(["cat-file", "-t", value], workspace).stdout.decode().strip()
    except safegit.GitFailed as exc:
        raise SetupError(f"the commit {value} ({name}) is not in the repository at "
                         f"{workspace}: {exc.detail or exc}.",
                         "Fetch it first, as objects only (never check it out): git fetch "
                         "--no-tags --depth=1 origin <sha>, or the pull request's "
                         "refs/pull/<number>/head.") from exc
    if kind != "commit":
        raise UsageError(f"{name} must name a commit; {value} is a {kind or 'missing'} "
                         "object.", "Give it the pull request's head commit: "
                         "${{ github.event.pull_request.head.sha }}.")
    return value


