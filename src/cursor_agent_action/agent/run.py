"""``cursor-agent-action run``: run cursor-agent headless, safely, and report on it live.

The agent gets the effective permission policy in ``.cursor/cli.json`` (restored afterwards),
an allowlisted environment, a private ``CURSOR_CONFIG_DIR``, closed stdin and its prompt after
``--``. Its stdout goes to the transcript file (byte for byte, except secrets replaced by
``***``) and live through the stream engine; the run's verdict (:mod:`.verdict`) then gets the
CLI's stderr (explained for known failures), how the agent was stopped, and a cross-check of
the changed files against ``git status``; the one report made of it is written once.
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
from cursor_agent_action.agent.contain import sandbox
from cursor_agent_action.agent.contain.box.net import walllog
from cursor_agent_action.agent.contain.box.net.credentials import OFF
from cursor_agent_action.agent.contain.cancel import interruptible, stop_on_signals
from cursor_agent_action.agent.contain.isolation import (
    ContainmentFailed,
    Isolation,
)
from cursor_agent_action.agent.contain.process import run_agent_process
from cursor_agent_action.agent.contain.sandbox import AgentExit, EndedBy
from cursor_agent_action.agent.guards import cli_sandbox
from cursor_agent_action.agent.guards.repo_config import PolicyGuard
from cursor_agent_action.agent.guards.runnerfiles import Restored, file_command_paths
from cursor_agent_action.agent.judge import keyheld
from cursor_agent_action.agent.judge.answer import structured_outputs, with_structured_output
from cursor_agent_action.agent.judge.attempts import Next, StartSummary, next_step, retry_delay
from cursor_agent_action.agent.judge.changes import Applied, ChangeTracker, check_policy
from cursor_agent_action.agent.judge.failures import classify, explain_exit, stderr_excerpt
from cursor_agent_action.agent.judge.outcome import (
    conclude_box,
    label_start,
    tier_site,
    warn_missing_key,
    warn_persisted_credentials,
)
from cursor_agent_action.agent.judge.structured import instruction
from cursor_agent_action.agent.judge.verdict import STOPPED, Described, Verdict
from cursor_agent_action.agent.judge.withheld import withhold_key
from cursor_agent_action.agent.launch.invocation import (
    AgentSite,
    accepts_trust,
    agent_argv,
    agent_environment,
    cli_help,
)
from cursor_agent_action.agent.launch.mcp import announce_servers
from cursor_agent_action.agent.launch.run_options import (
    RunOptions,
    add_run_options,
    options_from_args,
)
from cursor_agent_action.agent.launch.view import decide_isolation
from cursor_agent_action.errors import SetupError
from cursor_agent_action.keyscan import KeyScan
from cursor_agent_action.options import number_text
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.engine import StreamProcessor
from cursor_agent_action.stream.record import Cause, Conclusion, RunReport, StreamResult
from cursor_agent_action.stream.render.report import report

# -- the run -----------------------------------------------------------------------------------


@dataclass
class Attempt:
    """One start of the agent: its verdict, how it ended, and (contained) what came back."""

    verdict: Verdict
    ended: AgentExit
    tampered: bool
    applied: Applied | None = None


def _attempt(run: Run, argv: Sequence[str], site: AgentSite, *,
             timeout_s: float | None = None, append: bool = False) -> Attempt:
    """One start of the agent, under a fresh guard of the policy files."""
    options, runner, tracker = run.options, run.runner, run.tracker
    processor = StreamProcessor(runner, verbose=options.verbose,
                                max_tool_calls=options.max_tool_calls)
    applied = None
    guard = PolicyGuard(options.workspace, options.policy,
                        instructions=options.repo_instructions)
    with guard:
        jail = site.jail(options, argv, tracker.repo)
        ended = run_agent_process(
            sandbox.for_run(jail, argv, options.workspace, site.env), sink=processor,
            runner=runner, transcript=options.transcript, stop=run.stop,
            timeout_s=options.timeout_minutes * 60 if timeout_s is None else timeout_s,
            append=append,
        )
        # Inside the guard: a change of the policy files comes back as tampering.
        if ended.box is not None and ended.box.status is not None and not ended.box_error:
            applied = tracker.apply_box(ended.box.status)
    verdict = Verdict.of(processor.close())
    if guard.changes:
        verdict.notes.append("The repository's CLI configuration was touched during the run and "
                             f"has been restored: {'; '.join(guard.changes)}.")
    return Attempt(verdict, ended, guard.tampered, applied)





def _described(options: RunOptions) -> Described:
    """What the report says about the request itself (once, for the whole run)."""
    return Described(
        transcript_file=str(options.transcript),
        transcript_artifact=options.transcript_artifact,
        transcript_temporary=options.transcript.is_relative_to(options.state_dir.parent),
        preset=(f"{options.policy.preset} (writes "
                f"{'allowed' if options.policy.allows_writes else 'denied'})"),
        prompt=options.prompt,
    )


def _conclude(attempt: Attempt, options: RunOptions) -> None:
    """How this start of the agent ended, into its verdict."""
    verdict, ended, tampered = attempt.verdict, attempt.ended, attempt.tampered
    verdict.stderr = ended.stderr
    verdict.exit_code = ended.returncode
    if ended.transcript_error:
        verdict.notes.append(f"Writing the transcript file failed ({ended.transcript_error}); "
                             "it is incomplete. The log and this summary cover the whole run.")
    if (stopped := STOPPED.get(ended.ended_by)) is not None:
        verdict.stop(stopped, explain_exit(ended, options.timeout_minutes,
                                           options.max_tool_calls))
    elif not verdict.stream.has_result:
        verdict.no_result(explain_exit(ended, options.timeout_minutes))
    elif ended.returncode is not None and ended.returncode < 0:
        verdict.notes.append("cursor-agent kept running after its result event and was stopped "
                             "(hence the negative exit code); the run itself had finished.")
    conclude_box(verdict, attempt.ended, attempt.applied)
    keyheld.conclude(verdict, attempt.ended, mcp_servers=options.mcp_config is not None)
    if tampered:
        verdict.fail(Cause.TAMPERED, (
            ".cursor/cli.json was changed during the run, or a configuration file the CLI "
            "reads (hooks, MCP servers, sandbox, ...) appeared, so the agent may have widened "
            "its own permissions or planted commands; the repository's own files have been "
            "restored (the notes list what was found). Fix: review the agent's changes; keep "
            ".cursor/** denied (it is in every preset's floor)."
        ))


def execute(
    options: RunOptions, runner: Runner, environ: Mapping[str, str], stop: threading.Event
) -> RunReport:
    """Run the agent (with retries), then write the summary, outputs and annotation: four
    phases, prepare, attempts, conclude and report. The snapshot-and-restore guards of the whole
    run (the runner's file commands, the repository's git config) are one ``ExitStack``: what
    the agent changed there is put back also when a phase fails; the policy files have a guard
    of their own for each start (:func:`_attempt`), so every start gets the policy afresh."""
    launch = _prepare(options, runner, environ)
    started = time.monotonic()
    with interruptible(stop):  # hashing a large tree: a cancelled job ends it at once
        tracker = ChangeTracker(options.workspace, contained=launch.site.isolation.contained,
                                keys=KeyScan([environ.get("CURSOR_API_KEY", "")]))
    run = Run(options, runner, environ, stop, started, tracker)
    warn_persisted_credentials(run.tracker, runner, launch.site.isolation.contained)
    with contextlib.ExitStack() as guards:
        file_commands = guards.enter_context(Restored(file_command_paths(environ)))
        git_config = guards.enter_context(Restored(tracker.git_config_files))
        done, launch = _attempts(run, launch)
        verdict = _conclude_run(run, done, launch)
    _fail_on_restored(verdict, git_config=git_config.changed,
                      file_commands=file_commands.changed)
    return _report(run, verdict, done.ended)


@dataclass(frozen=True)
class Run:
    """What every phase of one run shares: the options, the runner, the job's environment, the
    stop signal, the changes' baseline and when the agent was first started."""

    options: RunOptions
    runner: Runner
    environ: Mapping[str, str]
    stop: threading.Event
    started: float
    tracker: ChangeTracker


@dataclass(frozen=True)
class Launch:
    """How the agent is started: its site, what the CLI's help said (``--trust``, the CLI's
    sandbox mode), the prompt and the command line."""

    site: AgentSite
    trust: bool
    sandbox: str
    prompt: str
    argv: list[str]


def _prepare(options: RunOptions, runner: Runner, environ: Mapping[str, str]) -> Launch:
    """Everything before the first start: the site, the CLI's options, the checks and the log's
    opening lines."""
    isolation = decide_isolation(options)
    walllog.announce(runner, options.net_policy, network=options.network,
                         contained=isolation.walled)
    site = tier_site(options, runner, environ, isolation)
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
    if options.mcp_config is not None:
        announce_servers(options.mcp_config, options.policy, runner, environ)
    prompt = options.prompt + (instruction(options.output_schema) if options.output_schema else "")
    argv = agent_argv(options, prompt, trust=trust, sandbox=sandbox)
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
    runner.log(f"Isolation: {site.isolation.label}.")
    runner.log(cli_sandbox.describe(sandbox, support))
    return Launch(site, trust, sandbox, prompt, argv)


def _attempts(run: Run, launch: Launch) -> tuple[Attempt, Launch]:
    """Start the agent until :func:`next_step` says to conclude; the last start, and how it
    was launched. Bounded: the counted starts, one start without the CLI's sandbox (the
    decision asks for it only while the sandbox is on), one uncontained start before the
    agent ever ran (only a contained box falls back), one with the key in the box (keyheld)."""
    options, runner = run.options, run.runner
    allowed = options.max_retries + 1
    number = 1  # counted starts, this one included
    ran = False  # once the agent has run, nothing runs it with less containment
    seen: dict[str, int] = {}  # known failures by title, for their own retry caps
    for _ in range(allowed + 3):
        try:
            done = _attempt(run, launch.argv, launch.site)
        except ContainmentFailed as exc:
            if options.isolation != "auto" or not launch.site.isolation.contained or ran \
                    or exc.final:  # the tree's own reason (its cap, unreadable): no other way
                raise
            was = launch.site.isolation  # tier 1a could not be set up: tier 1b; else none
            site = tier_site(options, runner, run.environ, was.landlock_fallback(exc.reason)
                             if was.user_box else Isolation(
                                 False, why_not=f"the box could not be set up ({exc.reason})",
                                 fix=was.fix))
            if not was.user_box:
                with interruptible(run.stop):  # the real tree is the agent's now: its base
                    run.tracker.uncontained()
            runner.log(f"Isolation: {site.isolation.label}.")
            launch = dataclasses.replace(launch, site=site)
            continue
        ran = True
        if keyheld.falls_back(done.ended, done.verdict, launch.site.key_masking,
                              mcp_servers=options.mcp_config is not None):
            runner.warning(keyheld.fallback_warning(), title="API key in the box")
            launch = dataclasses.replace(launch, site=dataclasses.replace(
                launch.site, key_masking=OFF, fallback=keyheld.FALLBACK_WHY))
            continue
        label_start(done.verdict, done.ended, launch.site, options)
        known = classify(done.ended.stderr)
        if known is not None:
            seen[known.title] = seen.get(known.title, 0) + 1
        step = next_step(StartSummary(
            number=number, allowed=allowed, ended_by=done.ended.ended_by,
            has_result=done.verdict.stream.has_result,
            tool_calls=len(done.verdict.stream.tool_calls),
            tampered=done.tampered, box_error=bool(done.ended.box_error), failure=known,
            seen=seen.get(known.title, 0) if known is not None else 0,
            cli_sandbox=launch.sandbox))
        if step is Next.CONCLUDE:
            return done, launch
        if step is Next.WITHOUT_CLI_SANDBOX:
            launch = dataclasses.replace(launch, sandbox="disabled", argv=agent_argv(
                options, launch.prompt, trust=launch.trust, sandbox="disabled"))
            runner.warning("The CLI's own sandbox could not start on this runner; running "
                           "once more with --sandbox disabled (the action's box contains the "
                           "agent either way).", title="CLI sandbox not available")
            continue
        delay = retry_delay(options.retry_delay_s, number)
        runner.warning(f"cursor-agent failed before any tool ran: {known.title if known else ''}"
                       f" ({stderr_excerpt(done.ended.stderr)}). Retrying in "
                       f"{number_text(delay)} s (attempt {number + 1} of {allowed}).",
                       title="transient failure")
        runner.flush()
        if run.stop.wait(delay):
            ended = done.ended
            done.ended = AgentExit(EndedBy.CANCELLED, ended.returncode, ended.stderr, ended.pgid)
            return done, launch
        number += 1
    raise AssertionError("unreachable: every start is counted or happens once")


def _conclude_run(run: Run, done: Attempt, launch: Launch) -> Verdict:
    """How the run ended, into its verdict; with ``output-schema``, the answer checked (and
    asked for once more when it does not match)."""
    _conclude(done, run.options)
    verdict = done.verdict
    schema = run.options.output_schema
    if schema is None or not verdict.succeeded:
        return verdict
    first = verdict.stream

    def ask_again(prompt: str) -> Verdict:
        return _ask_again(run, launch, first=first, prompt=prompt)

    return with_structured_output(schema, verdict, run.runner, ask_again)


def _fail_on_restored(verdict: Verdict, *, git_config: list[str],
                      file_commands: list[str]) -> None:
    """A change of the guarded files fails the run (they have been put back)."""
    if git_config:
        verdict.fail(Cause.GUARDED_FILES, (
            f"The agent changed the repository's git configuration ({', '.join(git_config)}), "
            "where settings such as core.fsmonitor, hooks or filter drivers run commands in "
            "later git steps; the original has been restored. Fix: review what the agent ran "
            "(the transcript)."
        ))
    if file_commands:
        verdict.fail(Cause.GUARDED_FILES, (
            f"The agent tried to change the runner's file commands ({', '.join(file_commands)}), "
            "which set environment variables, PATH, outputs and state for later steps; the "
            "original files have been restored. Fix: review what the agent ran (the "
            "transcript); nothing the agent writes there is kept."
        ))


def _report(run: Run, verdict: Verdict, ended: AgentExit) -> RunReport:
    """The changes handed on, the checks on them, then the one report: the log, summary and
    outputs."""
    options, runner, tracker = run.options, run.runner, run.tracker
    if ended.stderr.strip():
        with runner.group("cursor-agent stderr"):
            runner.untrusted(ended.stderr)
    ignore = {options.transcript, options.state_dir / "prompt.md", options.state_dir / "home"}
    handoff = tracker.finish(verdict, options.state_dir, ignore)
    if handoff.message:
        runner.log(one_line(handoff.message, 4000))
        if tracker.applied_box:  # what came back from the box could not be checked: fail
            verdict.fail(Cause.UNCHECKED,
                         f"{handoff.message} Fix: review the working tree before using it.")
    for warning in check_policy(verdict, options.policy, handoff.code_pages):
        runner.warning(one_line(warning, 1000), title="write outside the working directory")
    structured = structured_outputs(verdict, options.state_dir, runner.redact)  # may add a note
    structured = withhold_key(verdict, tracker.keys, options.transcript, structured)
    done = verdict.report(_described(options))
    walllog.warn_refusals(runner, done.network)
    report(done, runner, result_dir=options.state_dir,
           extra_outputs={"transcript-file": str(options.transcript),
                          "patch-file": handoff.patch_file,
                          "changed": "true" if handoff.changed else "false", **structured})
    return done


def _ask_again(run: Run, launch: Launch, *, first: StreamResult, prompt: str) -> Verdict:
    """The follow-up turn: ``--resume`` the chat, what is left of the timeout (at least one
    minute) and of the tool-call budget, the transcript appended to."""
    options = run.options
    calls = (None if options.max_tool_calls is None
             else max(options.max_tool_calls - len(first.tool_calls), 0))
    resumed = dataclasses.replace(options, resume=first.session_id, max_tool_calls=calls)
    argv = agent_argv(resumed, prompt, trust=launch.trust, sandbox=launch.sandbox)
    left = max(options.timeout_minutes * 60 - (time.monotonic() - run.started), 60.0)
    run.runner.log(f"Asking the agent once more, in the same chat (--resume), for a JSON answer "
               f"matching {resumed.output_schema.source if resumed.output_schema else ''}.")
    done = _attempt(dataclasses.replace(run, options=resumed), argv, launch.site,
                    timeout_s=left, append=True)
    _conclude(done, options)
    return done.verdict


def configure(parser: argparse.ArgumentParser) -> None:
    add_run_options(parser)


def command(args: argparse.Namespace, runner: Runner) -> int:
    options = options_from_args(args)
    with stop_on_signals() as stop:
        done = execute(options, runner, os.environ, stop)
    return 0 if done.conclusion is Conclusion.SUCCESS or not options.fail_on_error else 1
