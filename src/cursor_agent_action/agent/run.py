"""``cursor-agent-action run``: run cursor-agent headless, safely, and report on it live.

The agent gets the effective permission policy in ``.cursor/cli.json`` (restored afterwards),
an allowlisted environment, a private ``CURSOR_CONFIG_DIR``, closed stdin and its prompt after
``--``. Its stdout goes to the transcript file (byte for byte, except secrets replaced by
``***``) and live through the stream engine; the run record then gets the CLI's stderr
(explained for known failures), the conclusions ``timeout``/``cancelled``, and a cross-check of
the changed files against ``git status``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cursor_agent_action import safegit
from cursor_agent_action.agent import cli_sandbox
from cursor_agent_action.agent.answer import structured_outputs, with_structured_output
from cursor_agent_action.agent.box.net import notices as net_notices
from cursor_agent_action.agent.cancel import interruptible, stop_on_signals
from cursor_agent_action.agent.changes import (
    Applied,
    ChangeTracker,
    check_policy,
    git_config_files,
)
from cursor_agent_action.agent.failures import (
    SANDBOX_FAILURE,
    _stderr_excerpt,
    classify,
    explain_exit,
)
from cursor_agent_action.agent.filestate import FileState
from cursor_agent_action.agent.isolation import (
    ContainmentFailed,
    Isolation,
    decide,
    fallback_warning,
    landlock_warning,
)
from cursor_agent_action.agent.mcp import unreachable_servers
from cursor_agent_action.agent.options import (
    MAX_RETRY_DELAY_S,
    RunOptions,
    add_run_options,
    options_from_args,
)
from cursor_agent_action.agent.outcome import (
    conclude_box,
    fail_run,
    limits_label,
    warn_missing_key,
    warn_persisted_credentials,
)
from cursor_agent_action.agent.plan import (
    Box,
    accepts_trust,
    agent_environment,
    build_argv,
    cli_help,
    make_box,
    prompt_argument,
)
from cursor_agent_action.agent.process import AgentExit, run_agent_process
from cursor_agent_action.agent.repo_config import PolicyGuard
from cursor_agent_action.agent.runnerfiles import restore_files, snapshot_file_commands
from cursor_agent_action.agent.structured import instruction
from cursor_agent_action.errors import SetupError
from cursor_agent_action.options import number_text
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.engine import StreamProcessor
from cursor_agent_action.stream.record import RunRecord
from cursor_agent_action.stream.report import report

# -- the run -----------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One start of the agent: its record, how it ended, and (contained) what came back."""

    record: RunRecord
    ended: AgentExit
    tampered: bool
    applied: Applied | None = None


def _attempt(
    options: RunOptions, runner: Runner, argv: Sequence[str], box: Box, *,
    stop: threading.Event, tracker: ChangeTracker, timeout_s: float | None = None,
    append: bool = False,
) -> Attempt:
    processor = StreamProcessor(runner, verbose=options.verbose,
                                max_tool_calls=options.max_tool_calls)
    applied = None
    guard = PolicyGuard(options.workspace, options.policy,
                        instructions=options.repo_instructions)
    with guard:
        ended = run_agent_process(
            argv, cwd=options.workspace, env=box.env, sink=processor, runner=runner,
            transcript=options.transcript, stop=stop,
            jail=box.jail(options, argv, tracker.repo),
            timeout_s=options.timeout_minutes * 60 if timeout_s is None else timeout_s,
            append=append,
        )
        # Inside the guard: a change of the policy files comes back as tampering.
        if ended.box is not None and ended.box.status is not None and not ended.box_error:
            applied = tracker.apply_box(ended.box.status)
    record = processor.close()
    if guard.changes:
        record.notes.append("The repository's CLI configuration was touched during the run and "
                            f"has been restored: {'; '.join(guard.changes)}.")
    return Attempt(record, ended, guard.tampered, applied)


def _uncontained(options: RunOptions, runner: Runner, environ: Mapping[str, str],
                 isolation: Isolation) -> Box:
    """The box without containment; ``auto`` says so in a warning that names what is lost."""
    if options.isolation == "auto":
        runner.warning(fallback_warning(isolation), title="agent not contained")
    return make_box(options, environ, isolation)


def _describe(record: RunRecord, options: RunOptions) -> None:
    """What the report says about the request itself (once, for the whole run)."""
    record.transcript_file = str(options.transcript)
    record.transcript_artifact = options.transcript_artifact
    record.transcript_temporary = options.transcript.is_relative_to(options.state_dir.parent)
    record.preset = (f"{options.policy.preset} (writes "
                     f"{'allowed' if options.policy.allows_writes else 'denied'})")
    record.prompt = options.prompt


def _conclude(attempt: Attempt, options: RunOptions) -> None:
    """How this start of the agent ended, into its record."""
    record, ended, tampered = attempt.record, attempt.ended, attempt.tampered
    record.stderr = ended.stderr
    record.exit_code = ended.returncode
    if ended.transcript_error:
        record.notes.append(f"Writing the transcript file failed ({ended.transcript_error}); it "
                            "is incomplete. The log and this summary cover the whole run.")
    if ended.ended_by in ("timeout", "cancelled", "budget"):
        record.conclusion = ended.ended_by
        record.failure_reason = explain_exit(ended, options.timeout_minutes,
                                             options.max_tool_calls)
    elif not record.has_result:
        record.conclusion = "failure"
        record.failure_reason = explain_exit(ended, options.timeout_minutes)
    elif ended.returncode is not None and ended.returncode < 0:
        record.notes.append("cursor-agent kept running after its result event and was stopped "
                            "(hence the negative exit code); the run itself had finished.")
    conclude_box(attempt.record, attempt.ended, attempt.applied)
    if tampered:
        fail_run(record, (
            ".cursor/cli.json was changed during the run, or a configuration file the CLI "
            "reads (hooks, MCP servers, sandbox, ...) appeared, so the agent may have widened "
            "its own permissions or planted commands; the repository's own files have been "
            "restored (the notes list what was found). Fix: review the agent's changes; keep "
            ".cursor/** denied (it is in every preset's floor)."
        ))


def execute(
    options: RunOptions, runner: Runner, environ: Mapping[str, str], stop: threading.Event
) -> RunRecord:
    """Run the agent (with retries), then write the summary, outputs and annotation."""
    isolation = decide(options.isolation, options.agent_user)
    net_notices.announce(runner, options.net_policy, network=options.network,
                         contained=isolation.walled)
    if isolation.contained:
        box = make_box(options, environ, isolation)
        if isolation.landlock:
            runner.warning(landlock_warning(isolation), title="agent under Landlock, no box")
    else:
        box = _uncontained(options, runner, environ, isolation)
    warn_missing_key(runner, environ)
    # The vendor's binary only prints its help: run as the helper, away from the workspace.
    probe_env = agent_environment(environ, options.state_dir / "probe-config")
    help_output = cli_help(options.agent_bin, probe_env, options.state_dir)
    trust = accepts_trust(help_output)
    support = cli_sandbox.probe()
    sandbox = cli_sandbox.sandbox_mode(support, listed=cli_sandbox.lists_sandbox_flag(help_output))
    if not trust and not options.policy.allows_writes:
        raise SetupError(
            f"this Cursor CLI ({options.agent_bin}) has no --trust option: builds from about May "
            "to July 2026 stop a read-only run at 'Workspace Trust Required', so the agent was "
            "not started.",
            "Use a CLI version with --trust: leave cli-version unset (the version this release "
            "is tested with) or set it to latest; a preset that allows writes also works (the "
            "action then passes --force, which trusts the workspace).")
    _mcp_checks(options, runner, environ)
    prompt = options.prompt + (instruction(options.output_schema) if options.output_schema else "")
    argv = build_argv(options, prompt_argument(prompt, options.state_dir), trust=trust,
                      sandbox=sandbox)
    # Paths and values may hold anything: one line, so none of it can act as a workflow command.
    runner.log(one_line(
        f"Running {shlex.join(argv[:-1])} <prompt: {len(options.prompt)} characters> in "
        f"{shlex.quote(str(options.workspace))} with the {options.policy.preset} policy "
        f"(writes {'allowed' if options.policy.allows_writes else 'denied'}), timeout "
        f"{number_text(options.timeout_minutes)} min.", 4000
    ))
    safegit.git_executable.cache_clear()  # found now, before the agent can plant one on PATH
    with contextlib.suppress(safegit.GitNotFound):
        safegit.git_executable()
    started = time.monotonic()
    with interruptible(stop):  # hashing a large tree: a cancelled job ends it at once
        tracker = ChangeTracker(options.workspace, contained=box.isolation.contained)
    warn_persisted_credentials(tracker, runner, box.isolation.contained)
    file_commands = snapshot_file_commands(environ)
    git_config = {path: FileState.of(path) for path in git_config_files(options.workspace)}
    attempts = options.max_retries + 1
    runner.log(f"Isolation: {box.isolation.label}.")
    runner.log(cli_sandbox.describe(sandbox, support))
    attempt = 0
    agent_ran = False  # once it has, nothing runs it with less containment
    seen: dict[str, int] = {}  # known failures by title, for their own retry caps
    while attempt < attempts:  # bounded: attempts, plus one start uncontained before any ran
        attempt += 1
        try:
            done = _attempt(options, runner, argv, box, stop=stop, tracker=tracker)
        except ContainmentFailed as exc:
            if (options.isolation != "auto" or not box.isolation.contained or agent_ran
                    or exc.cap):
                raise
            box = _uncontained(options, runner, environ, Isolation(
                False, why_not=f"the box could not be set up ({exc.reason})",
                fix=box.isolation.fix))
            with interruptible(stop):  # the real tree is the agent's now: its base, hashed
                tracker.uncontained()
            runner.log(f"Isolation: {box.isolation.label}.")
            attempt -= 1
            continue
        agent_ran = True
        record, ended = done.record, done.ended
        if record.network is None and (not box.isolation.walled or options.network == "open"):
            record.network = net_notices.unwalled_report(
                "open" if box.isolation.walled else box.isolation.wall_mode, box.isolation.why_not)
        record.isolation = box.isolation.label + limits_label(ended)
        known = classify(ended.stderr)
        # Only a transient failure before any tool ran: a retry cannot repeat the agent's work.
        if known is not None:
            seen[known.title] = seen.get(known.title, 0) + 1
        if (known is not None and known.title == SANDBOX_FAILURE and sandbox == "enabled"
                and not record.has_result and not record.tool_calls):
            # Before any event: run once more with the CLI's sandbox off (our box holds).
            sandbox = "disabled"
            argv = build_argv(options, prompt_argument(prompt, options.state_dir), trust=trust,
                              sandbox=sandbox)
            runner.warning("The CLI's own sandbox could not start on this runner; running "
                           "once more with --sandbox disabled (the action's box contains the "
                           "agent either way).", title="CLI sandbox not available")
            attempts += 1
            continue
        if not (
            attempt < attempts and ended.ended_by == "exit" and not record.has_result
            and not record.tool_calls and not done.tampered and known is not None
            and known.transient and not ended.box_error
            and (known.max_retries is None or seen[known.title] <= known.max_retries)
        ):
            break
        delay = min(options.retry_delay_s * 2 ** (attempt - 1), MAX_RETRY_DELAY_S)
        runner.warning(f"cursor-agent failed before any tool ran: {known.title}"
                       f" ({_stderr_excerpt(ended.stderr)}). Retrying in {number_text(delay)} s "
                       f"(attempt {attempt + 1} of {attempts}).", title="transient failure")
        runner.flush()
        if stop.wait(delay):
            done.ended = AgentExit("cancelled", ended.returncode, ended.stderr, ended.pgid)
            break
    _conclude(done, options)
    record = done.record
    ended = done.ended
    schema = options.output_schema
    if schema is not None and record.conclusion == "success":
        first = record

        def ask_again(prompt: str) -> RunRecord:
            return _ask_again(options, runner, box, stop, tracker, first=first, prompt=prompt,
                              flags=(trust, sandbox), started=started)

        record = with_structured_output(schema, record, runner, ask_again)
    if changed := restore_files(git_config):
        fail_run(record, (
            f"The agent changed the repository's git configuration ({', '.join(changed)}), "
            "where settings such as core.fsmonitor, hooks or filter drivers run commands in "
            "later git steps; the original has been restored. Fix: review what the agent ran "
            "(the transcript)."
        ))
    if changed := restore_files(file_commands):
        fail_run(record, (
            f"The agent tried to change the runner's file commands ({', '.join(changed)}), which "
            "set environment variables, PATH, outputs and state for later steps; the original "
            "files have been restored. Fix: review what the agent ran (the transcript); nothing "
            "the agent writes there is kept."
        ))
    if ended.stderr.strip():
        with runner.group("cursor-agent stderr"):
            runner.untrusted(ended.stderr)
    ignore = {options.transcript, options.state_dir / "prompt.md", options.state_dir / "home"}
    handoff = tracker.finish(record, options.state_dir, ignore)
    if handoff.message:
        runner.log(one_line(handoff.message, 4000))
        if tracker.applied_box:  # what came back from the box could not be checked: fail
            fail_run(record, f"{handoff.message} Fix: review the working tree before using it.")
    for warning in check_policy(record, options.policy):
        runner.warning(one_line(warning, 1000), title="write outside the working directory")
    _describe(record, options)
    net_notices.warn_refusals(runner, record.network)
    structured = structured_outputs(record, options.state_dir, runner.redact)  # may add a note
    report(record, runner, result_dir=options.state_dir,
           extra_outputs={"transcript-file": str(options.transcript),
                          "patch-file": handoff.patch_file,
                          "changed": "true" if handoff.changed else "false", **structured})
    return record


def _mcp_checks(options: RunOptions, runner: Runner, environ: Mapping[str, str]) -> None:
    """Mask the secrets the MCP servers get; warn about servers the agent cannot call."""
    config = options.mcp_config
    if config is None:
        return
    for name in config.env_names:
        if value := environ.get(name, ""):
            runner.mask(value)
        else:
            runner.warning(f"mcp-config refers to ${{env:{name}}}, but {name} is not set on "
                           "this step. Fix: set it with env: (from a secret).",
                           title="MCP secret not set")
    if missing := unreachable_servers(config, options.policy):
        runner.warning(f"mcp-config starts {', '.join(missing)}, but no allow token names "
                       f"{'it' if len(missing) == 1 else 'them'}, so every one of "
                       f"{'its' if len(missing) == 1 else 'their'} tools is denied. Fix: allow "
                       f"the tools the agent needs, e.g. Mcp({missing[0]}:TOOL_NAME).",
                       title="MCP server not allowed")
    runner.log(f"MCP servers from mcp-config: {', '.join(config.servers)}.")


def _ask_again(options: RunOptions, runner: Runner, box: Box, stop: threading.Event,
               tracker: ChangeTracker, *, first: RunRecord, prompt: str,
               flags: tuple[bool, str], started: float) -> RunRecord:
    """The follow-up turn: ``--resume`` the chat, what is left of the timeout (at least one
    minute) and of the tool-call budget, the transcript appended to."""
    calls = (None if options.max_tool_calls is None
             else max(options.max_tool_calls - len(first.tool_calls), 0))
    resumed = dataclasses.replace(options, resume=first.session_id, max_tool_calls=calls)
    argv = build_argv(resumed, prompt_argument(prompt, options.state_dir), trust=flags[0],
                      sandbox=flags[1])
    left = max(options.timeout_minutes * 60 - (time.monotonic() - started), 60.0)
    runner.log(f"Asking the agent once more, in the same chat (--resume), for a JSON answer "
               f"matching {resumed.output_schema.source if resumed.output_schema else ''}.")
    done = _attempt(resumed, runner, argv, box, stop=stop, tracker=tracker, timeout_s=left,
                    append=True)
    _conclude(done, options)
    return done.record


def configure(parser: argparse.ArgumentParser) -> None:
    add_run_options(parser)


def command(args: argparse.Namespace, runner: Runner) -> int:
    options = options_from_args(args)
    with stop_on_signals() as stop:
        record = execute(options, runner, os.environ, stop)
    return 0 if record.conclusion == "success" or not options.fail_on_error else 1
