"""The agent's invocation: its allowlisted environment, its command line, its prompt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pwd
import re
import signal
import stat
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action.agent.contain.box.net.credentials import (
    HELD_ASKED,
    HELD_FALLBACK,
    HELD_MASKED,
    HELD_NO_RELAY,
    MASKED_OR_FAIL,
    OFF,
    Credentials,
)
from cursor_agent_action.agent.contain.box.net.placeholders import key_placeholder
from cursor_agent_action.agent.contain.box.net.policy import DEFAULT_DOMAINS
from cursor_agent_action.agent.contain.box.net.upstream import NAMES as PROXY_VARIABLES
from cursor_agent_action.agent.contain.box.net.upstream import RunnerProxy
from cursor_agent_action.agent.contain.isolation import Isolation, Jail, jail_for
from cursor_agent_action.agent.guards.cli_sandbox import (
    CURSOR_DOMAINS,
    environment_tmpdir,
    sandbox_json,
)
from cursor_agent_action.agent.guards.cli_sandbox import HOME_FILE as SANDBOX_FILE
from cursor_agent_action.agent.guards.repo_config import POLICY_FILE, VIEW_LEFT_OUT
from cursor_agent_action.agent.guards.repo_config import TABLE as REPO_FILES
from cursor_agent_action.agent.launch.extra_args import with_extra_args
from cursor_agent_action.agent.launch.mcp import HOME_FILE
from cursor_agent_action.agent.launch.run_options import RunOptions
from cursor_agent_action.errors import SetupError
from cursor_agent_action.options import setting

PROMPT_ARG_LIMIT = 100 * 1024
"""Larger prompts go into a file: Linux caps one argv string at 128 KiB (MAX_ARG_STRLEN)."""

HELP_PROBE_TIMEOUT_S = 15.0
# The agent's environment is built from these names only (plus --pass-env). Everything else,
# in particular GITHUB_TOKEN, GH_TOKEN, ACTIONS_* and INPUT_*, never reaches it.
ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "CI",
    "GITHUB_ACTIONS",
    "RUNNER_OS",
    "RUNNER_ARCH",
    "CURSOR_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
)
ENV_ALLOWLIST_PREFIXES = ("LC_",)


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


@dataclass
class AgentSite:
    """Where and as whom the agent runs: its environment and, contained, its jail's home and
    what the jail hides (:meth:`jail` makes the :class:`~..contain.isolation.Jail` of one
    start). Not the box itself: that is :mod:`..contain.box`."""

    isolation: Isolation
    env: dict[str, str]
    home: Path | None = None
    masks: list[Path] = dataclasses.field(default_factory=list)
    key_masking: str = OFF  # api-key-masking for this start (OFF after a fallback)
    placeholder: str = ""  # the agent's CURSOR_API_KEY when the relay holds the key
    fallback: str = ""  # why this start has the key in the box though masking was asked for

    def walled(self, options: RunOptions) -> bool:
        """The box has the network wall: its relay can hold the key."""
        return (self.isolation.contained and self.home is not None
                and options.network == "restricted" and options.net_policy is not None
                and self.isolation.walled)

    def key_in_box(self, options: RunOptions) -> str:
        """Where the key is for a start of this box (``credentials.HELD_*``)."""
        if not self.env.get("CURSOR_API_KEY"):
            return HELD_MASKED  # no key: none in the box
        if not self.walled(options):
            return HELD_NO_RELAY
        if self.fallback:
            return HELD_FALLBACK
        return HELD_ASKED if self.key_masking == OFF else HELD_MASKED

    def why_key_in_box(self) -> str:
        return self.fallback or self.isolation.why_not or "network is open"

    def _credentials(self, options: RunOptions) -> Credentials | None:
        key = self.env.get("CURSOR_API_KEY", "")
        if not key or self.key_masking == OFF or not self.walled(options):
            return None
        if not self.placeholder:
            self.placeholder = key_placeholder(key)
        return Credentials(key, self.placeholder, trust_file=self.env.get("SSL_CERT_FILE", ""),
                           trust_dir=self.env.get("SSL_CERT_DIR", ""), patterns=DEFAULT_DOMAINS,
                           fallback=self.key_masking != MASKED_OR_FAIL)

    def jail(self, options: RunOptions, argv: Sequence[str],
             repo_root: Path | None) -> Jail | None:
        """A fresh box for one start of the agent (None: not contained), on a private copy of
        the work tree at ``repo_root`` (the working directory when it is no repository)."""
        if not self.isolation.contained or self.home is None:
            return None
        agent = options.agent_bin.resolve()
        # Root writes the home's MCP file and the CLI's sandbox settings (the preset's and the
        # network allow-list's, not the CLI's defaults: agent.guards.cli_sandbox); everything
        # else in the home is new every run.
        walled = (options.network == "restricted" and options.net_policy is not None
                  and self.isolation.walled)
        domains = ([rule.pattern for rule in options.net_policy.rules]
                   if walled and options.net_policy is not None else list(CURSOR_DOMAINS))
        files = {HOME_FILE: options.mcp_config.text if options.mcp_config else None,
                 SANDBOX_FILE: sandbox_json(read_only=not options.policy.allows_writes,
                                            domains=domains,
                                            writable=environment_tmpdir(self.env))}
        env, network = self.env, None
        if walled and options.net_policy is not None:
            # The runner's proxy is the relay's to use; nothing in the box is a proxy.
            network = dataclasses.replace(options.net_policy,
                                          proxy=RunnerProxy.from_environ(self.env))
            env = {name: value for name, value in env.items() if name not in PROXY_VARIABLES}
        credentials = self._credentials(options)
        if credentials is not None:  # the relay holds the key; the box, its placeholder
            env = {**env, "CURSOR_API_KEY": credentials.placeholder}
        return jail_for(self.isolation, state_dir=options.state_dir,
                        repo_root=(repo_root or options.workspace).resolve(),
                        cwd=options.workspace.resolve(), home=self.home,
                        argv=[str(agent), *argv[1:]], env=env, masks=self.masks,
                        reveals=[_cli_install(agent)], shares=_shares(), files=files,
                        git=repo_root is not None and not options.view_commit,
                        network=network,
                        storage=os.environ.get(STORAGE_VARIABLE, "") or "auto",
                        max_files=options.max_tree_files, credentials=credentials,
                        view_commit=options.view_commit,
                        # A commit's view holds none of its own configuration or
                        # instructions: the run's policy file is ours.
                        view_skip=[*(entry.path for entry in REPO_FILES), *VIEW_LEFT_OUT],
                        view_files=[POLICY_FILE] if options.view_commit else [],
                        tree_read_only=not options.policy.allows_writes)


def _masks(options: RunOptions, environ: Mapping[str, str]) -> list[Path]:
    """What the contained agent must not read: the runner's home, its own directory and
    temporary files, its runtime directory (``XDG_RUNTIME_DIR``: registry logins and the
    like), the tool cache (the CLI's own install is shown again, read-only), the helper's
    state."""
    found = [options.state_dir.parent, Path("/root")]
    with contextlib.suppress(KeyError):
        found.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    for name in ("HOME", "RUNNER_TEMP", "RUNNER_TOOL_CACHE", "AGENT_TOOLSDIRECTORY",
                 "RUNNER_WORKSPACE", "XDG_RUNTIME_DIR"):
        if value := environ.get(name, ""):
            found.append(Path(value))
    found += _runner_roots(environ)
    return [path.resolve() for path in found if path.is_absolute() and str(path) != "/"]


def _runner_roots(environ: Mapping[str, str]) -> list[Path]:
    """The runner's own directory (its ``.runner``, ``.credentials*``, ``_diag``, ``.env``, and
    every job's ``_work``), wherever it is installed: the parent of the ``_work`` directory the
    job's workspace and temporary directory are in."""
    roots = []
    for name in ("RUNNER_WORKSPACE", "GITHUB_WORKSPACE", "RUNNER_TEMP"):
        parts = Path(environ.get(name, "")).parts
        if "_work" in parts[1:]:
            roots.append(Path(*parts[:parts.index("_work", 1)]))
    return roots


def _cli_install(agent: Path) -> Path:
    """What the box shows of the CLI, read-only: its directory (the real CLI is a script
    beside its own node and code), or only the file when others cannot enter the directory."""
    with contextlib.suppress(OSError):
        if agent.parent.stat().st_mode & stat.S_IXOTH:
            return agent.parent
    return agent


SHARE_VARIABLE = "CURSOR_AGENT_ACTION_BOX_SHARE"
"""For tests: one directory the contained agent shares with the runner, read-write (the
stand-in CLI records what it saw there). Never set in a workflow."""


STORAGE_VARIABLE = "CURSOR_AGENT_ACTION_BOX_STORAGE"
"""For tests: ``copy`` forces the box's copy of the tree where the overlay would be used (the
fallback's own tests). Never set in a workflow."""


def _shares() -> list[Path]:
    value = os.environ.get(SHARE_VARIABLE, "")
    return [Path(value).resolve()] if value else []


def agent_home(state_dir: Path) -> Path:
    """Where the contained agent's home is, as the agent sees it: new for every start of the
    agent (the box makes it; only the chats ``--resume`` needs are carried over)."""
    return state_dir.parent / "agent-home"


def agent_site(options: RunOptions, environ: Mapping[str, str],
                isolation: Isolation) -> AgentSite:
    """The agent's environment for ``isolation`` and, contained, what the box hides."""
    options.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not isolation.contained:
        config_dir = options.state_dir / "cli-config"
        config_dir.mkdir(exist_ok=True, mode=0o700)
        env = agent_environment(environ, config_dir, options.pass_env)
        if options.mcp_config is None:
            return AgentSite(isolation, env)
        # The MCP file goes in a home of this run's own, never the runner user's ~/.cursor.
        home = options.state_dir / "home"
        (home / HOME_FILE).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        (home / HOME_FILE).write_text(options.mcp_config.text, encoding="utf-8")
        env["HOME"] = str(home)
        return AgentSite(isolation, env)
    home = agent_home(options.state_dir)
    # A fresh home every run (the box makes it); the CLI's config this run's alone (--model).
    config_dir = home / ".config" / "cursor" / options.state_dir.name
    env = agent_environment(environ, config_dir, options.pass_env)
    env.update(HOME=str(home), USER=isolation.agent_user, LOGNAME=isolation.agent_user,
               TMPDIR="/tmp")  # noqa: S108 - the box's own, private
    return AgentSite(isolation, env, home, _masks(options, environ),
                     key_masking=options.key_masking)


def cli_help(agent: Path, env: Mapping[str, str], cwd: Path) -> bytes:
    """What this CLI build prints for ``--help`` (b"" if it hangs): which options it has."""
    try:
        proc = subprocess.Popen(
            [str(agent), "--help"], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
    except OSError as exc:
        raise SetupError(f"cannot run the Cursor CLI at {agent}: {exc.strerror or exc}.",
                         f"Check that {setting('--agent-bin')} points at an executable "
                         "cursor-agent.") from exc
    with proc:
        try:
            output, _ = proc.communicate(timeout=HELP_PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            output = b""
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    return output


def accepts_trust(help_output: bytes) -> bool:
    """Whether this CLI build lists ``--trust`` in its ``--help`` (some builds reject it)."""
    return re.search(rb"(^|\s)--trust\b", help_output) is not None


def build_argv(
    options: RunOptions, prompt_arg: str, *, trust: bool, sandbox: str = ""
) -> list[str]:
    """``sandbox``: the CLI's sandbox mode (``cli_sandbox.sandbox_mode``), "" for none."""
    argv = [str(options.agent_bin), "-p", "--output-format", "stream-json"]
    if sandbox:
        argv += ["--sandbox", sandbox]
    if options.policy.allows_writes:
        argv.append("--force")
    if options.model:
        argv += ["--model", options.model]
    if options.resume:
        argv += ["--resume", options.resume]
    if trust:
        argv.append("--trust")
    if options.mcp_config is not None:
        argv.append("--approve-mcps")  # the workflow's servers only: the file is ours
    return with_extra_args([*argv, "--", prompt_arg], options.extra_args)


def agent_argv(options: RunOptions, prompt: str, *, trust: bool, sandbox: str = "") -> list[str]:
    """The CLI's command line for ``prompt`` (:func:`prompt_argument`, then
    :func:`build_argv`)."""
    argument = prompt_argument(prompt, options.state_dir)
    return build_argv(options, argument, trust=trust, sandbox=sandbox)


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


