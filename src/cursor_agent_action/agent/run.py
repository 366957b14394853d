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
import hashlib
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cursor_agent_action.agent.filestate import FileState
from cursor_agent_action.agent.permissions import (
    Policy,
    PolicyGuard,
    add_policy_options,
    policy_from_args,
)
from cursor_agent_action.agent.process import AgentExit, run_agent_process, stop_on_signals
from cursor_agent_action.errors import SetupError, UsageError
from cursor_agent_action.options import add_flag, add_list, add_number, add_option
from cursor_agent_action.runner_io import Runner, listing, one_line
from cursor_agent_action.stream.aggregate import RunRecord
from cursor_agent_action.stream.engine import StreamProcessor, report

PROMPT_ARG_LIMIT = 100 * 1024
"""Larger prompts go into a file: Linux caps one argv string at 128 KiB (MAX_ARG_STRLEN)."""

DEFAULT_TIMEOUT_MINUTES = 30.0
DEFAULT_MAX_RETRIES = 2
MAX_RETRIES = 10
DEFAULT_RETRY_DELAY_S = 10.0
MAX_RETRY_DELAY_S = 120.0
HELP_PROBE_TIMEOUT_S = 15.0

# The agent's environment is built from these names only (plus --pass-env). Everything else,
# in particular GITHUB_TOKEN, GH_TOKEN, ACTIONS_* and INPUT_*, never reaches it.
ENV_ALLOWLIST = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR",
    "CI", "GITHUB_ACTIONS", "RUNNER_OS", "RUNNER_ARCH", "CURSOR_API_KEY",
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS",
)  # fmt: skip
ENV_ALLOWLIST_PREFIXES = ("LC_",)
# Names --pass-env refuses: runner credentials and the runner's own plumbing.
_NEVER_PASS = re.compile(r"^(GITHUB_.*|GH_.*|ACTIONS_.*|INPUT_.*|RUNNER_.*|CURSOR_CONFIG_DIR)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# -- known CLI failures ------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownFailure:
    """A failure the CLI reports on stderr, with what to do about it."""

    title: str
    pattern: re.Pattern[str]
    hint: str
    transient: bool = False


def _known(title: str, pattern: str, hint: str, transient: bool = False) -> KnownFailure:
    return KnownFailure(title, re.compile(pattern, re.IGNORECASE), hint, transient)


# First match wins: the free-plan message also names models, so it comes before unknown-model.
KNOWN_FAILURES = (
    _known(
        "authentication failed",
        r"authentication required|not authenticated|invalid api key|api key is invalid"
        r"|unauthori[sz]ed",
        "Create an API key in the Cursor dashboard (Integrations > User API Keys), store it as "
        "a repository secret and pass it as the action's api-key input (the CLI gets it as "
        "CURSOR_API_KEY).",
    ),
    _known(
        "named models need a paid plan",
        r"named models unavailable|free plans can only use auto",
        "Leave the model input empty (Auto), or use an API key of an account on a paid plan.",
    ),
    _known(
        "unknown model",
        r"cannot use this model|unknown model|model not found|invalid model",
        "Use one of the models the message lists (run 'cursor-agent models' locally), or leave "
        "the model input empty for Auto.",
    ),
    _known(
        "usage limit reached",
        r"usage limit|spending limit|spend limit",
        "Wait until the limit resets or raise it in the Cursor dashboard (Settings > Usage). "
        "Not retried: retrying cannot help.",
    ),
    _known(
        "workspace trust required",
        r"workspace trust|trust th(is|e) workspace|pass --trust",
        "Install a CLI version whose --help lists --trust (the action passes it then), or use "
        "a permissions preset that allows writes (the action then passes --force, which implies "
        "trust).",
    ),
    _known(
        "rate limited",
        r"rate.?limit|too many requests|\b429\b|resource.?exhausted",
        "Cursor's API rate-limited the run and the retries ran out. Rerun later, or run fewer "
        "agent jobs at once (a workflow-level concurrency group).",
        transient=True,
    ),
    _known(
        "Cursor API unavailable",
        r"\[unavailable\]|service unavailable|temporarily unavailable|\b50[234]\b"
        r"|ECONNRESET|ETIMEDOUT|ECONNREFUSED|ENOTFOUND|EAI_AGAIN",
        "Cursor's API could not be reached and the retries ran out. Rerun the job later "
        "(status: https://status.cursor.com); on self-hosted runners check the proxy settings.",
        transient=True,
    ),
)


def classify(stderr: str) -> KnownFailure | None:
    """The known failure that ``stderr`` reports, if any."""
    return next((known for known in KNOWN_FAILURES if known.pattern.search(stderr)), None)


def _stderr_excerpt(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return one_line(" / ".join(lines[-3:]), 400) if lines else ""


def explain_exit(ended: AgentExit, timeout_minutes: float) -> str:
    """One paragraph on why a run without a ``result`` event failed, with a fix."""
    if ended.ended_by == "timeout":
        return (
            f"The agent did not finish within {timeout_minutes:g} minutes and was stopped. "
            "Fix: raise timeout-minutes or give the agent a smaller task."
        )
    if ended.ended_by == "cancelled":
        return "The run was cancelled (the helper got SIGTERM/SIGINT) and the agent was stopped."
    excerpt = _stderr_excerpt(ended.stderr)
    said = f' It said: "{excerpt}".' if excerpt else " It printed nothing on stderr."
    known = classify(ended.stderr)
    if known is not None:
        return f"cursor-agent failed: {known.title}.{said} Fix: {known.hint}"
    code = ended.returncode
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return (
            f"cursor-agent was killed by {name} before it finished.{said} Fix: if nothing "
            "else killed it, the runner may have run out of memory; try a larger runner."
        )
    if code == 0:
        return (
            "cursor-agent exited with code 0 but never sent its final result event, so the run "
            f"did not finish.{said} Fix: some CLI builds do this when the workspace is not "
            "trusted; install a CLI version that accepts --trust, and check the transcript."
        )
    return (
        f"cursor-agent exited with code {code} without a final result event.{said} Fix: see "
        "the stderr in the job summary and the transcript file."
    )


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


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--prompt", help="the task for the agent")
    add_option(parser, "--prompt-file", help="read the task from this UTF-8 file")
    add_option(parser, "--model", help="model name", default_help="the CLI's, Auto")
    add_option(parser, "--agent-bin", help="the CLI to run",
               default_help="cursor-agent, then agent, on PATH")
    add_option(parser, "--working-directory", default=".",
               help="the workspace the agent works in")
    add_number(parser, "--timeout-minutes", default=DEFAULT_TIMEOUT_MINUTES,
               help="stop the agent after this long; decimals allowed")
    add_option(parser, "--transcript", help="save the agent's stdout here (secrets replaced "
               "by ***)", default_help="transcript.jsonl in a new directory "
               "$RUNNER_TEMP/cursor-agent-action/run-* for each run")
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
    add_list(parser, "--pass-env", metavar="NAME", help="also give the agent this environment "
             "variable; GITHUB_*, GH_*, ACTIONS_*, INPUT_*, RUNNER_* are refused")


def read_prompt(prompt: str | None, prompt_file: str | None) -> str:
    """The prompt from ``--prompt`` or ``--prompt-file`` (exactly one), non-empty."""
    if prompt and prompt_file:
        raise UsageError("both a prompt and a prompt file were given.",
                         "Pass either prompt or prompt-file, not both.")
    if prompt_file:
        try:
            # utf-8-sig: an editor's byte-order mark is not part of the task.
            prompt = Path(prompt_file).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise UsageError(f"cannot read the prompt file {prompt_file}: {reason}.",
                             "Check the path (relative to the job's working directory) and "
                             "that the file is UTF-8 text.") from exc
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
            raise SetupError(f"the agent binary {requested} is not an executable file.",
                             f"Run 'chmod +x {requested}' or point agent-bin at the CLI.")
        raise SetupError(f"the agent binary {requested} does not exist.",
                         "Point agent-bin at the installed CLI (the install step's cli-path "
                         "output), or pass a command name to look up on PATH.")
    raise SetupError(
        f"the Cursor CLI was not found ({' or '.join(candidates)} on PATH).",
        "Install it first (the action's install step, or 'cursor-agent-action install') or "
        "pass its path as agent-bin (--agent-bin).",
    )


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


def new_state_dir(environ: Mapping[str, str]) -> Path:
    """A fresh private directory for one run, ``$RUNNER_TEMP/cursor-agent-action/run-*``: two
    runs in one job never share a transcript, result file or CLI config (``--model``)."""
    root = Path(environ.get("RUNNER_TEMP") or tempfile.gettempdir()) / "cursor-agent-action"
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return Path(tempfile.mkdtemp(prefix="run-", dir=root))
    except OSError as exc:
        raise SetupError(f"cannot create a state directory under {root}: "
                         f"{exc.strerror or exc}.",
                         "Check that RUNNER_TEMP (or the system temp directory) is writable."
                         ) from exc


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
    if args.timeout_minutes <= 0:
        raise UsageError("timeout-minutes must be more than 0.", "Pass e.g. 30 or 2.5.")
    model = _single_line(args.model, "--model")
    resume = _single_line(args.resume, "--resume")
    pass_env = _pass_env_names(args.pass_env)
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
    )


# -- the agent's environment and command line --------------------------------------------------


def agent_environment(
    environ: Mapping[str, str], config_dir: Path, pass_env: Sequence[str] = ()
) -> dict[str, str]:
    """The allowlisted environment the agent runs with."""
    env = {
        name: value
        for name, value in environ.items()
        if name in ENV_ALLOWLIST or name.startswith(ENV_ALLOWLIST_PREFIXES) or name in pass_env
    }
    env.setdefault("PATH", os.defpath)
    # --model rewrites the CLI's global config; keep that out of the user's home.
    env["CURSOR_CONFIG_DIR"] = str(config_dir)
    return env


def accepts_trust(agent: Path, env: Mapping[str, str], cwd: Path) -> bool:
    """Whether this CLI build lists ``--trust`` in its ``--help`` (some builds reject it)."""
    try:
        proc = subprocess.Popen(
            [str(agent), "--help"], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
    except OSError as exc:
        raise SetupError(f"cannot run the Cursor CLI at {agent}: {exc.strerror or exc}.",
                         "Check that agent-bin points at an executable cursor-agent.") from exc
    with proc:
        try:
            output, _ = proc.communicate(timeout=HELP_PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            output = b""
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    return re.search(rb"(^|\s)--trust\b", output) is not None


def build_argv(options: RunOptions, prompt_arg: str, *, trust: bool) -> list[str]:
    argv = [str(options.agent_bin), "-p", "--output-format", "stream-json"]
    if options.policy.allows_writes:
        argv.append("--force")
    if options.model:
        argv += ["--model", options.model]
    if options.resume:
        argv += ["--resume", options.resume]
    if trust:
        argv.append("--trust")
    return [*argv, "--", prompt_arg]


def prompt_argument(prompt: str, state_dir: Path) -> str:
    """The prompt itself, or for a long one an instruction to read the file it was saved to."""
    if len(prompt.encode("utf-8")) <= PROMPT_ARG_LIMIT:
        return prompt
    path = state_dir / "prompt.md"
    path.write_text(prompt, encoding="utf-8")
    return (
        f"Your task is in the file {path} (it was too long for the command line). Read that "
        "whole file first and follow its instructions exactly."
    )


# -- files changed: cross-check with git --------------------------------------------------------


# Our own git runs right after the agent, in a checkout and a HOME it could write to: no
# fsmonitor or hooks (they run commands), no global or system config (~/.gitconfig is the
# agent's to write), and the repository's .git/config is restored before (see execute).
_SAFE_GIT = ("git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
_GIT_ENV_NAMES = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")


def _git(workspace: Path, *args: str) -> bytes | None:
    env = {name: os.environ[name] for name in _GIT_ENV_NAMES if name in os.environ}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
    try:
        done = subprocess.run([*_SAFE_GIT, *args], cwd=workspace, capture_output=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def git_config_files(workspace: Path) -> list[Path]:
    """The repository's own config files (where fsmonitor, hooks and filter drivers live)."""
    git_dir = _git(workspace, "rev-parse", "--absolute-git-dir")
    if git_dir is None:
        return []
    root = Path(os.fsdecode(git_dir.strip()))
    return [root / "config", root / "config.worktree"]


def git_snapshot(workspace: Path) -> dict[str, str] | None:
    """Status and content hash of every changed or untracked file, by workspace-relative path
    (a name that is not UTF-8 shown with U+FFFD, as outputs and summary need text); None
    outside a git work tree."""
    prefix = _git(workspace, "rev-parse", "--show-prefix")
    status = _git(workspace, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                  "--no-renames", "--", ".")
    if prefix is None or status is None:
        return None
    cut = len(prefix.decode().strip())
    snapshot: dict[str, str] = {}
    for entry in status.decode("utf-8", "surrogateescape").split("\0"):
        if len(entry) < 4:
            continue
        path = entry[3:][cut:]  # porcelain paths are relative to the repository root
        shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        snapshot[shown] = f"{entry[:2]} {_digest(workspace / path)}"
    return snapshot


_DIGEST_MAX_BYTES = 64 * 1024 * 1024


def _digest(path: Path) -> str:
    """What a path holds, cheaply and without blocking: a regular file's SHA-256 (read in
    chunks; past 64 MiB its size and mtime instead), a link's target, "-" for anything else.

    Never opened through a link or as a device or fifo: the agent could point a name at
    /dev/zero or a fifo and make this read forever."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return f"link:{os.readlink(path)}"
        if not stat.S_ISREG(info.st_mode):
            return "-"
        if info.st_size > _DIGEST_MAX_BYTES:
            return f"size:{info.st_size}:mtime:{info.st_mtime_ns}"
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "-"
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped in meanwhile
            return "-"
        left = _DIGEST_MAX_BYTES
        while left > 0 and (chunk := handle.read(min(1024 * 1024, left))):
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def cross_check_files(
    record: RunRecord, before: dict[str, str], after: dict[str, str], ignore: set[str]
) -> None:
    """Add what git saw changing to ``files_changed`` and note any mismatch with the tools."""
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)} - ignore
    reported = set(record.files_changed)
    inside = {path for path in reported if not path.startswith("/")}
    by_shell = sorted(changed - reported)
    unseen = sorted(inside - changed)
    record.files_changed = sorted(reported | changed)
    if by_shell:
        record.notes.append(
            f"{len(by_shell)} file(s) changed in the working tree without a write tool "
            f"(e.g. through the shell): {listing(by_shell)}."
        )
    if unseen:
        record.notes.append(
            f"{len(unseen)} file(s) reported written by a tool show no change in the working "
            f"tree (same content, reverted, or ignored by .gitignore): {listing(unseen)}."
        )


def check_policy(record: RunRecord, policy: Policy) -> None:
    """Fail the run if the workspace changed where the policy does not allow writing.

    With ``--force`` the CLI enforces only the deny list, and a shell command can write files
    without any write tool, so the allow list is checked here, after the fact.
    """
    outside = [
        path for path in record.files_changed
        if not path.startswith("/") and not policy.permits_write(path)
    ]
    if not outside:
        return
    message = (
        f"The agent changed {len(outside)} file(s) that the {policy.preset} policy does not "
        f"allow writing: {listing(outside)}. Fix: review and revert them before publishing, "
        "or allow them explicitly with the allow input (e.g. Write(src/**))."
    )
    if record.conclusion == "success":
        record.conclusion = "failure"
        record.failure_reason = message
    else:
        record.notes.append(message)


# -- the run -----------------------------------------------------------------------------------


def _attempt(
    options: RunOptions, runner: Runner, argv: Sequence[str], env: Mapping[str, str],
    stop: threading.Event,
) -> tuple[RunRecord, AgentExit, bool]:
    processor = StreamProcessor(runner, verbose=options.verbose)
    with PolicyGuard(options.workspace, options.policy) as guard:
        ended = run_agent_process(
            argv, cwd=options.workspace, env=env, sink=processor, runner=runner,
            transcript=options.transcript, timeout_s=options.timeout_minutes * 60, stop=stop,
        )
    return processor.close(), ended, guard.tampered


def _conclude(record: RunRecord, ended: AgentExit, tampered: bool, options: RunOptions) -> None:
    record.stderr = ended.stderr
    record.exit_code = ended.returncode
    record.transcript_file = str(options.transcript)
    if ended.transcript_error:
        record.notes.append(f"Writing the transcript file failed ({ended.transcript_error}); it "
                            "is incomplete. The log and this summary cover the whole run.")
    if ended.ended_by in ("timeout", "cancelled"):
        record.conclusion = ended.ended_by
        record.failure_reason = explain_exit(ended, options.timeout_minutes)
    elif not record.has_result:
        record.conclusion = "failure"
        record.failure_reason = explain_exit(ended, options.timeout_minutes)
    elif ended.returncode is not None and ended.returncode < 0:
        record.notes.append("cursor-agent kept running after its result event and was stopped "
                            "(hence the negative exit code); the run itself had finished.")
    if tampered:
        fail_run(record, (
            ".cursor/cli.json was changed during the run (or .cursor/hooks.json or mcp.json "
            "appeared), so the agent may have widened its own permissions or planted commands; "
            "the workspace's original files have been restored. Fix: review the agent's "
            "changes; keep .cursor/** denied (it is in every preset's floor)."
        ))


def fail_run(record: RunRecord, message: str) -> None:
    """A failure that outweighs the run's own result (timeout and cancelled stay)."""
    record.conclusion = "failure" if record.conclusion == "success" else record.conclusion
    record.failure_reason = " ".join(filter(None, [message, record.failure_reason]))


# -- the runner's file commands ----------------------------------------------------------------

# Files the runner reads after the step to set env vars, PATH, outputs, summary and state for
# later steps (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#environment-files).
# The agent runs as the runner user, so it could append BASH_ENV=... to GITHUB_ENV.
FILE_COMMAND_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                     "GITHUB_STATE")


def snapshot_file_commands(environ: Mapping[str, str]) -> dict[Path, FileState]:
    """The runner's file-command files named in ``environ``, as they are now."""
    paths = {Path(value) for name in FILE_COMMAND_VARS if (value := environ.get(name, ""))}
    return {path: FileState.of(path) for path in sorted(paths)}


def restore_files(before: Mapping[Path, FileState]) -> list[str]:
    """Put back every file that changed since ``before``, byte for byte; the changed paths."""
    changed = []
    for path, state in before.items():
        if FileState.of(path) == state:
            continue
        changed.append(str(path))
        try:
            state.put_back(path)
        except OSError as exc:
            raise SetupError(
                f"the agent changed {path} and it could not be restored: "
                f"{exc.strerror or exc}.",
                "Cancel the workflow run: later steps could run with variables, PATH entries "
                "or git settings the agent planted.",
            ) from exc
    return changed


def execute(
    options: RunOptions, runner: Runner, environ: Mapping[str, str], stop: threading.Event
) -> RunRecord:
    """Run the agent (with retries), then write the summary, outputs and annotation."""
    options.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    config_dir = options.state_dir / "cli-config"
    config_dir.mkdir(exist_ok=True, mode=0o700)
    env = agent_environment(environ, config_dir, options.pass_env)
    if not env.get("CURSOR_API_KEY"):
        runner.warning("CURSOR_API_KEY is not set: the CLI will fail to authenticate unless it "
                       "is logged in. Pass the api-key input.", title="no API key")
    trust = accepts_trust(options.agent_bin, env, options.workspace)
    argv = build_argv(options, prompt_argument(options.prompt, options.state_dir), trust=trust)
    # Paths and values may hold anything: one line, so none of it can act as a workflow command.
    runner.log(one_line(
        f"Running {shlex.join(argv[:-1])} <prompt: {len(options.prompt)} characters> in "
        f"{shlex.quote(str(options.workspace))} with the {options.policy.preset} policy "
        f"(writes {'allowed' if options.policy.allows_writes else 'denied'}), timeout "
        f"{options.timeout_minutes:g} min.", 4000
    ))
    before = git_snapshot(options.workspace)
    file_commands = snapshot_file_commands(environ)
    git_config = {path: FileState.of(path) for path in git_config_files(options.workspace)}
    attempts = options.max_retries + 1
    for attempt in range(1, attempts + 1):
        record, ended, tampered = _attempt(options, runner, argv, env, stop)
        known = classify(ended.stderr)
        # Only a transient failure before any tool ran: a retry cannot repeat the agent's work.
        if not (
            attempt < attempts and ended.ended_by == "exit" and not record.has_result
            and not record.tool_calls and not tampered and known is not None and known.transient
        ):
            break
        delay = min(options.retry_delay_s * 2 ** (attempt - 1), MAX_RETRY_DELAY_S)
        runner.warning(f"cursor-agent failed before any tool ran: {known.title}"
                       f" ({_stderr_excerpt(ended.stderr)}). Retrying in {delay:g} s "
                       f"(attempt {attempt + 1} of {attempts}).", title="transient failure")
        runner.flush()
        if stop.wait(delay):
            ended = AgentExit("cancelled", ended.returncode, ended.stderr, ended.pgid)
            break
    _conclude(record, ended, tampered, options)
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
    after = git_snapshot(options.workspace)
    if before is not None and after is not None:
        ignore = {
            os.path.relpath(path, options.workspace)
            for path in (options.transcript, options.state_dir / "prompt.md")
            if path.is_relative_to(options.workspace)
        }
        cross_check_files(record, before, after, ignore)
    else:
        runner.log(one_line(f"{options.workspace} is not a git work tree (or git failed "
                            "there): files-changed lists only what the write tools reported.",
                            4000))
    check_policy(record, options.policy)
    report(record, runner, result_dir=options.state_dir,
           extra_outputs={"transcript-file": str(options.transcript)})
    return record


def command(args: argparse.Namespace, runner: Runner) -> int:
    options = options_from_args(args)
    with stop_on_signals() as stop:
        record = execute(options, runner, os.environ, stop)
    return 0 if record.conclusion == "success" or not options.fail_on_error else 1
