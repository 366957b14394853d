"""Restricted-autonomy permission policies for the Cursor CLI (``.cursor/cli.json``).

A policy is a preset (``read-only``, ``docs``, ``edit``) plus the user's extra ``--allow`` and
``--deny`` tokens, on top of a hardened floor of deny rules that every preset carries and no
allow can lift (the CLI lets deny win over allow). ``repo_config.PolicyGuard`` puts the
policy in the workspace for the length of a run and restores the workspace's own file after.

Token grammar (Shell, Read, Write, WebFetch, Mcp): docs/permissions.md, and Cursor's reference
https://cursor.com/docs/cli/reference/permissions
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action.agent.guards.filestate import write_atomic
from cursor_agent_action.docpages.kinds import doc_globs, executed_globs
from cursor_agent_action.errors import SetupError, UsageError
from cursor_agent_action.globs import covers, names
from cursor_agent_action.options import add_list, add_option, env_name
from cursor_agent_action.protected import PROTECTED_DIRS, protected_name
from cursor_agent_action.runner_io import Runner

PRESETS: tuple[str, ...] = ("read-only", "docs", "edit")
DEFAULT_PRESET = "read-only"
CLI_JSON_VERSION = 1

# Shell commands that only read. The CLI matches the first word of a command only, so these
# still allow a `>` redirection: see the README for the limits (run checks every changed file
# against the policy afterwards). Not `find` or `rg`: they run any program (`find -exec`,
# `rg --pre`), like `xargs` in the floor; the CLI's own glob and grep tools search under Read().
_READ_ONLY_SHELL = (
    "basename",
    "cat",
    "cut",
    "diff",
    "dirname",
    "du",
    "echo",
    "file",
    "grep",
    "head",
    "ls",
    "pwd",
    "realpath",
    "stat",
    "tail",
    "wc",
)

# Never lifted. Writes that would change CI or the agent's own configuration, or plant git hooks
# that run in our later `git commit`, at any depth (the CLI reads configuration from every
# directory between the git root and the working directory); reads of secrets
# (actions/checkout keeps the job token in .git/config); commands that move data off the
# machine, act as git/GitHub, or escape the first-word match by running another command
# (`env curl ...`). The CLI matches these globs as written; Policy.permits_write (the check
# after the run) and publish also compare case-folded and normalized names (protected.py).
_FLOOR_WRITE = (
    *(f"**/{name}/**" for name in PROTECTED_DIRS),
    "**/.git*",
    "**/AGENTS.md",
    "**/CLAUDE.md",
    "**/.mcp.json",
    "**/.cursorrules",
    "**/.clinerules",
    "**/GEMINI.md",
    "**/.windsurfrules",
)
_SECRET_GLOBS = (
    "**/.env*",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*.jks",
    "**/*.keystore",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/.aws/**",
    "**/.gnupg/**",
    "**/.docker/config.json",
    "**/.kube/config",
    "**/.npmrc",
    "**/.pypirc",
    "**/.netrc",
    "**/.git-credentials",
    "**/.pgpass",
    "**/.yarnrc.yml",
    "**/credentials*",
    ".git/config",
)
_FLOOR_SHELL = (
    "curl",
    "doas",
    "env",
    "eval",
    "exec",
    "ftp",
    "gh",
    "git",
    "nc",
    "ncat",
    "netcat",
    "nohup",
    "printenv",
    "rsync",
    "scp",
    "setsid",
    "sftp",
    "socat",
    "ssh",
    "su",
    "sudo",
    "telnet",
    "wget",
    "xargs",
)

FLOOR: tuple[str, ...] = tuple(
    sorted(
        {f"Write({glob})" for glob in _FLOOR_WRITE}
        | {f"{kind}({glob})" for glob in _SECRET_GLOBS for kind in ("Read", "Write")}
        | {f"Shell({word})" for word in _FLOOR_SHELL}
    )
)
"""Deny rules in every policy."""

_READ_ONLY_ALLOW = ("Read(**)", *(f"Shell({word})" for word in _READ_ONLY_SHELL))
_PRESET_ALLOW: dict[str, tuple[str, ...]] = {
    "read-only": _READ_ONLY_ALLOW,
    "docs": (*_READ_ONLY_ALLOW, *(f"Write({glob})" for glob in doc_globs())),
    "edit": (*_READ_ONLY_ALLOW, "Write(**)"),
}
# The docs preset writes documentation, never what a build, a test run or a docs toolchain
# executes (docpages.kinds.EXECUTED), even where a wider allow (Write(docs/**)) would name it.
_PRESET_DENY: dict[str, tuple[str, ...]] = {
    "docs": tuple(f"Write({glob})" for glob in executed_globs()),
}

_TOKEN = re.compile(r"^(Shell|Read|Write|WebFetch|Mcp)\((.*)\)$", re.DOTALL)
_SHELL_WORD = re.compile(r"^[A-Za-z0-9_./+][A-Za-z0-9_./+-]*$")
# Shell(command:args): the arguments pattern, printable, `*` as a wildcard.
_SHELL_ARGS = re.compile(r"^[^()\x00-\x1f\x7f]+$")
# WebFetch(domain): a host name, `*` alone or as a leading label (`*.example.com`).
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
_DOMAIN = re.compile(rf"^(\*|(\*\.)?{_LABEL}(\.{_LABEL})*)$")
# Mcp(server:tool): names or `*`.
_MCP_NAME = re.compile(r"^(\*|[A-Za-z0-9_.-]+\*?)$")
_GLOB_BAD_CHARS = re.compile(r"[()\x00-\x1f\x7f]")
_GLOB_META = re.compile(r"[*?{\[]")
_GRAMMAR_HINT = (
    "Use one token per line: Shell(command) or Shell(command:args) (the CLI matches the command "
    "name, and the arguments with * as a wildcard), Read(glob) or Write(glob) with a "
    "workspace-relative glob, WebFetch(domain) (e.g. docs.python.org or *.example.com), "
    "Mcp(server:tool) (* for any), e.g. Shell(pytest), Shell(npm:run test*), Read(src/**), "
    "Write(docs/**/*.md), Mcp(github:get_issue)."
)


def _validate_token(token: str) -> str:
    match = _TOKEN.match(token)
    if match is None:
        raise UsageError(f"invalid permission token {token!r}.", _GRAMMAR_HINT)
    kind, arg = match.groups()
    if kind == "Shell":
        command, colon, args = arg.partition(":")
        if not _SHELL_WORD.match(command) or (colon and not _SHELL_ARGS.match(args)):
            raise UsageError(
                f"invalid permission token {token!r}: Shell() takes one command name (letters, "
                "digits, . _ + - /), optionally followed by ':' and an arguments pattern.",
                _GRAMMAR_HINT,
            )
    elif kind == "WebFetch":
        if not _DOMAIN.match(arg):
            raise UsageError(f"invalid permission token {token!r}: WebFetch() takes a domain "
                             "(a host name, * or *.domain).", _GRAMMAR_HINT)
    elif kind == "Mcp":
        server, colon, tool = arg.partition(":")
        if not (colon and _MCP_NAME.match(server) and _MCP_NAME.match(tool)):
            raise UsageError(f"invalid permission token {token!r}: Mcp() takes server:tool "
                             "(names, or * for any).", _GRAMMAR_HINT)
    elif not arg or arg != arg.strip() or _GLOB_BAD_CHARS.search(arg):
        raise UsageError(
            f"invalid permission token {token!r}: {kind}() takes a non-empty glob without "
            "parentheses, control characters or surrounding spaces.",
            _GRAMMAR_HINT,
        )
    return token


def parse_tokens(text_or_list: str | Sequence[str]) -> list[str]:
    """Tokens from newline-separated text or from a list of such texts, validated.

    Blank lines and lines starting with ``#`` are ignored; each other line, stripped, must be
    one token (commas are not separators: a glob may contain ``{a,b}``). Raises
    :class:`UsageError` naming the first bad token.
    """
    texts = [text_or_list] if isinstance(text_or_list, str) else list(text_or_list)
    tokens: list[str] = []
    for text in texts:
        for line in text.splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                tokens.append(_validate_token(stripped))
    return tokens


def _split(token: str) -> tuple[str, str]:
    """``(kind, argument)`` of a validated token."""
    kind, _, rest = token.partition("(")
    return kind, rest[:-1]


def _globs(kind: str, tokens: Iterable[str]) -> tuple[str, ...]:
    return _kind_globs(kind, tuple(tokens))


@functools.lru_cache(maxsize=64)  # a run checks every changed file against the same policy
def _kind_globs(kind: str, tokens: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(glob for token_kind, glob in map(_split, tokens) if token_kind == kind)


def _allows(kind: str, path: str, tokens: Iterable[str]) -> bool:
    """Whether an allow token of ``kind`` names the file ``path`` (:func:`globs.names`)."""
    return names(_globs(kind, tokens), path.removeprefix("./"))


def _denies(kind: str, path: str, tokens: Iterable[str]) -> bool:
    """Whether a deny token of ``kind`` covers ``path`` or a directory above it."""
    return covers(_globs(kind, tokens), path.removeprefix("./"))


def _floor_conflict(token: str) -> bool:
    """Whether an allow token asks for something the floor denies outright."""
    if token in FLOOR:
        return True
    kind, arg = _split(token)
    if kind == "Shell":  # Shell(git:status) is still git, and so are /usr/bin/git and ./git
        command = arg.partition(":")[0].rsplit("/", 1)[-1]
        return f"Shell({command})" in FLOOR
    # A literal path (no wildcard) inside a floor glob can never be allowed.
    if kind == "Write":  # a protected name written out in any component: Write(.github/**)
        named = "/".join("-" if _GLOB_META.search(part) else part for part in arg.split("/"))
        if protected_name(named):
            return True
    return kind != "Shell" and not _GLOB_META.search(arg) and _denies(kind, arg, FLOOR)


@dataclass(frozen=True)
class Policy:
    """An effective policy: sorted, de-duplicated allow and deny tokens (floor included)."""

    preset: str
    allow: tuple[str, ...]
    deny: tuple[str, ...]

    @property
    def allows_writes(self) -> bool:
        """Whether any Write() rule is allowed (the agent then runs with ``--force``)."""
        return any(token.startswith("Write(") for token in self.allow)

    def names_mcp_server(self, server: str) -> bool:
        """Whether an allow token names a tool of MCP ``server`` (``*`` and ``name*`` too)."""
        return any(kind == "Mcp" and fnmatch.fnmatchcase(server, arg.partition(":")[0])
                   for kind, arg in map(_split, self.allow))

    def permits_write(self, path: str) -> bool:
        """Whether a write to workspace-relative ``path`` is allowed and not denied; never for
        a protected name at any depth, in any case or Unicode form (``docs/.Cursor/x``)."""
        return (_allows("Write", path, self.allow) and not _denies("Write", path, self.deny)
                and not protected_name(path.removeprefix("./")))

    def to_cli_json(self) -> dict[str, object]:
        return {
            "version": CLI_JSON_VERSION,
            "editor": {"vimMode": False},
            "permissions": {"allow": list(self.allow), "deny": list(self.deny)},
        }

    def render(self) -> bytes:
        """The exact bytes written to ``.cursor/cli.json``."""
        return (json.dumps(self.to_cli_json(), indent=2) + "\n").encode("utf-8")


def build_policy(preset: str, allow: Sequence[str] = (), deny: Sequence[str] = ()) -> Policy:
    """The preset plus the user's tokens plus the floor. Raises :class:`UsageError`.

    An allow token that only names something the floor denies (``Shell(git)``,
    ``Write(.github/workflows/ci.yml)``) is an error, not silently ignored.
    """
    if preset not in _PRESET_ALLOW:
        raise UsageError(
            f"unknown permissions preset {preset!r}.",
            f"Use one of: {', '.join(PRESETS)}.",
        )
    user_allow = [_validate_token(token) for token in allow]
    user_deny = [_validate_token(token) for token in deny]
    for token in user_allow:
        kind, arg = _split(token)
        if kind in ("Read", "Write") and (arg.startswith(("/", "~")) or ".." in arg.split("/")):
            raise UsageError(
                f"cannot allow {token!r}: allow globs must stay inside the workspace.",
                "Use a workspace-relative glob without a leading / or ~ and without '..'.",
            )
        if _floor_conflict(token):
            raise UsageError(
                f"cannot allow {token!r}: it is denied by the hardened floor, which no allow "
                "can lift (deny wins).",
                "Remove it from the allow list; git and GitHub work is done by the action's "
                "own steps (publish, comment). The floor is listed in docs/permissions.md.",
            )
    # No web fetches and no MCP tools unless the workflow allows some explicitly: then the
    # CLI's deny-wins rule would cancel that allow, so the floor's blanket deny steps aside.
    closed = {
        kind: f"{kind}({arg})"
        for kind, arg in (("WebFetch", "*"), ("Mcp", "*:*"))
        if not any(t.startswith(f"{kind}(") for t in user_allow)
    }
    return Policy(
        preset=preset,
        allow=tuple(sorted({*_PRESET_ALLOW[preset], *user_allow})),
        deny=tuple(sorted({*FLOOR, *_PRESET_DENY.get(preset, ()), *closed.values(),
                           *user_deny})),
    )


# -- the policy file in a workspace ------------------------------------------------------------


def _policy_paths(workspace: Path) -> tuple[Path, Path]:
    """``(.cursor dir, cli.json)``, refusing symlinks a pull request could have planted."""
    if not workspace.is_dir():
        raise SetupError(
            f"working directory {workspace} does not exist or is not a directory.",
            "Pass the checked-out repository as the working directory.",
        )
    directory = workspace / ".cursor"
    path = directory / "cli.json"
    for candidate in (directory, path):
        if candidate.is_symlink():
            raise SetupError(
                f"{candidate} is a symbolic link; refusing to write the permission policy "
                "through it (a pull request could point it anywhere).",
                "Remove the link from the repository, or run on a trusted checkout.",
            )
    if path.exists() and not path.is_file():
        raise SetupError(
            f"{path} exists but is not a regular file.",
            "Remove it from the workspace so the policy can be put in place.",
        )
    if directory.exists() and not directory.is_dir():
        raise SetupError(
            f"{directory} exists but is not a directory.",
            "Remove it from the workspace: the Cursor CLI reads its policy from .cursor/cli.json.",
        )
    return directory, path


def write_policy(workspace: Path, policy: Policy) -> Path:
    """Write the policy to ``<workspace>/.cursor/cli.json`` (creating ``.cursor/``)."""
    directory, path = _policy_paths(workspace)
    directory.mkdir(exist_ok=True)
    write_atomic(path, policy.render())
    return path


# -- command -----------------------------------------------------------------------------------

def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """--preset, --allow and --deny, shared with ``run``."""
    add_option(parser, "--preset", env=env_name("--permissions"), default=DEFAULT_PRESET,
               help=f"permissions preset: one of {', '.join(PRESETS)}")
    add_list(parser, "--allow", metavar="TOKEN", help="extra allow token")
    add_list(parser, "--deny", metavar="TOKEN", help="extra deny token")


def policy_from_args(args: argparse.Namespace) -> Policy:
    """The policy for ``--preset/--allow/--deny`` (flags win over the env vars)."""
    return build_policy(args.preset.strip(), parse_tokens(args.allow), parse_tokens(args.deny))


def configure(parser: argparse.ArgumentParser) -> None:
    add_policy_options(parser)
    add_option(parser, "--working-directory", default=".", help="write <dir>/.cursor/cli.json")
    parser.add_argument("--print", action="store_true", dest="print_only",
                        help="print the effective cli.json to stdout and write nothing")


def command(args: argparse.Namespace, runner: Runner) -> int:
    policy = policy_from_args(args)
    if args.print_only:
        runner.log(policy.render().decode("utf-8").rstrip("\n"))
        return 0
    workspace = Path(args.working_directory)
    replaced = (workspace / ".cursor" / "cli.json").is_file()
    path = write_policy(workspace, policy)
    runner.log(
        f"Wrote the {policy.preset} policy to {path}{', replacing the file there' * replaced}: "
        f"{len(policy.allow)} allow and {len(policy.deny)} deny rules, writes "
        f"{'allowed' if policy.allows_writes else 'denied'}."
    )
    runner.set_outputs({"policy-file": str(path),
                        "allows-writes": "true" if policy.allows_writes else "false"})
    return 0
