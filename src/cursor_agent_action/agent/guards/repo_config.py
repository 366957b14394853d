"""The repository's own configuration for the CLI, set aside for a run and put back after it.

The Cursor CLI reads configuration from every directory between the git root and its working
directory (``.cursor/cli.json`` files are merged, deeper wins). A pull request can put any of
them at any level, so :class:`PolicyGuard`, for the length of a run, moves every file of
:data:`TABLE` that can change the agent's rights or run commands out of the way at each of
those levels (kept in memory: files, symbolic links and whole directories), puts our policy in
``<working directory>/.cursor/cli.json``, and afterwards restores each one byte for byte (mode
and times too). With ``repo-instructions: ignore`` the instruction files (prompt content, not
rights) are set aside the same way. Names are matched case-folded (``protected.fold``): on a
case-insensitive checkout ``.Cursor`` is ``.cursor``.

The guard works on the real tree: whatever the tree holds while the guard is active is what a
box that copies the tree sees, and an uncontained agent sees it directly. What such an agent
put in their place during the run is removed and reported (:attr:`PolicyGuard.changes`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from cursor_agent_action.agent.guards.filestate import Budget, EntryState, TooLarge, remove
from cursor_agent_action.agent.guards.permissions import Policy, write_policy
from cursor_agent_action.errors import SetupError
from cursor_agent_action.protected import fold

INSTRUCTION_MODES = ("keep", "ignore")
POLICY_FILE = ".cursor/cli.json"


@dataclass(frozen=True)
class RepoFile:
    """One file (or directory) the CLI reads at each level, what it does and where that is
    documented; ``rights`` ones are always set aside, the others with ``ignore``."""

    path: str
    rights: bool
    does: str
    source: str


_CLI_DOCS = "https://cursor.com/docs/cli/reference"
TABLE: tuple[RepoFile, ...] = (
    RepoFile(POLICY_FILE, True, "permission policy, merged from the git root down (deeper wins);"
             " ours replaces it in the working directory",
             f"{_CLI_DOCS}/permissions, developersdigest.tech/reference/cursor-cli/config-files"),
    RepoFile(".cursor/sandbox.json", True, "the CLI's sandbox for terminal commands; the "
             "repository's wins over the user's, `\"type\": \"insecure_none\"` turns it off",
             "https://cursor.com/docs/reference/sandbox"),
    RepoFile(".cursor/hooks.json", True, "hooks: commands run on agent events, which can also "
             "approve tool calls", "https://cursor.com/docs/agent/hooks"),
    RepoFile(".cursor/mcp.json", True, "MCP servers: commands started for the agent (found in "
             "parent directories too)", "developersdigest.tech/reference/cursor-cli/config-files"),
    RepoFile(".mcp.json", True, "MCP servers in the shared project format",
             "https://cursor.com/docs/context/mcp"),
    RepoFile(".cursor/permissions.json", True, "auto-run allowlists (the editor's; the CLI's "
             "use unconfirmed)", "https://cursor.com/docs/agent/terminal"),
    RepoFile(".cursor/environment.json", True, "`install` and `start` commands of an agent's "
             "machine (cloud agents)",
             "https://forum.cursor.com/t/cloud-agent-start-script-not-blocking/158583"),
    RepoFile(".cursor/worktrees.json", True, "setup commands run for `--worktree`",
             "https://cursor.com/docs/configuration/worktrees"),
    RepoFile(".claude/settings.json", True, "Claude Code hooks, which the CLI runs too",
             "https://cursor.com/docs/reference/third-party-hooks"),
    RepoFile(".claude/settings.local.json", True, "Claude Code hooks (local settings)",
             "https://cursor.com/docs/reference/third-party-hooks"),
    RepoFile("AGENTS.md", False, "instructions", "https://cursor.com/docs/context/rules"),
    RepoFile("CLAUDE.md", False, "instructions", "https://cursor.com/docs/context/rules"),
    RepoFile(".cursorrules", False, "instructions (legacy rules)",
             "https://cursor.com/docs/context/rules"),
    RepoFile(".cursor/rules", False, "rules (`*.mdc`): instructions",
             "https://cursor.com/docs/context/rules"),
    RepoFile(".cursor/commands", False, "custom commands: prompts",
             "https://cursor.com/docs/agent/chat/commands"),
    RepoFile(".cursor/skills", False, "skills (`*/SKILL.md`): instructions",
             "https://cursor.com/docs/context/skills"),
)  # fmt: skip
"""Every repository file the CLI reads that can change the agent's rights or run commands,
and the instruction files (facts of 2026-11; docs/permissions.md has the same table)."""

VIEW_LEFT_OUT = (".cursor", ".claude", ".codex", "CLAUDE.local.md", ".cursorignore",
                 ".cursorindexingignore")
"""What a commit's view (``view-commit``: a fork's tree, data only) leaves out beyond
:data:`TABLE`, at any depth: the agent tools' whole configuration directories (subagents,
skills, commands, ``BUGBOT.md`` and whatever they read next) and the instruction and ignore
files the table does not name. None of a fork's tree is the agent's configuration."""


def levels(workspace: Path) -> list[Path]:
    """The directories from the git root (the nearest one up with a ``.git``) down to the
    working directory, resolved; just the working directory outside a repository."""
    here = workspace.resolve()
    chain = [here]
    while not os.path.lexists(chain[-1] / ".git") and chain[-1] != chain[-1].parent:
        chain.append(chain[-1].parent)
    if not os.path.lexists(chain[-1] / ".git"):
        return [here]
    return chain[::-1]


def _kind(path: Path) -> str:
    """What ``path`` is, for a message (never following a link)."""
    if path.is_symlink():
        return "a symbolic link"
    return "a directory" if path.is_dir() else "a file" if path.exists() else "nothing"


def _named(directory: Path, name: str) -> list[Path]:
    """Entries of ``directory`` whose name folds to ``name``'s (none when it is no directory)."""
    try:
        names = os.listdir(directory) if directory.is_dir() and not directory.is_symlink() else []
    except OSError:
        return []
    wanted = fold(name)
    return [directory / entry for entry in sorted(names) if fold(entry) == wanted]


def config_paths(workspace: Path, instructions: str = "keep") -> list[Path]:
    """Every entry to set aside now: each :data:`TABLE` path at each level (an instruction
    path only with ``ignore``); a ``.cursor`` or ``.claude`` that is a link, whole."""
    wanted = [entry.path for entry in TABLE if entry.rights or instructions == "ignore"]
    found: dict[Path, None] = {}
    chain = levels(workspace)
    for level in chain:
        for relative in wanted:
            first, _, rest = relative.partition("/")
            for top in _named(level, first):
                if not rest or top.is_symlink():
                    found[top] = None
                elif level == chain[-1] and first == ".cursor" and not top.is_dir():
                    found[top] = None  # our policy needs the directory
                else:
                    found.update(dict.fromkeys(_named(top, rest)))
    return list(found)


class PolicyGuard:
    """Our policy in ``.cursor/cli.json`` and none of the repository's configuration, for a run.

    On exit every set-aside entry is restored byte for byte (or removed if there was none),
    what the agent put where one of them is looked for is removed and listed in
    :attr:`changes`, and ``.cursor/`` is removed again if we created it and it is empty.
    :meth:`restore` is idempotent, so a signal handler may call it while ``__exit__`` is
    pending.
    """

    def __init__(self, workspace: Path, policy: Policy, *, instructions: str = "keep") -> None:
        self.workspace = workspace
        self.policy = policy
        self.instructions = instructions
        self.changes: list[str] = []
        self._originals: dict[Path, EntryState] = {}
        self._levels: list[Path] = []
        self._created_dir = False
        self._active = False

    @property
    def _policy_path(self) -> Path:
        return self._levels[-1] / POLICY_FILE

    def __enter__(self) -> PolicyGuard:
        if not self.workspace.is_dir():
            raise SetupError(
                f"working directory {self.workspace} does not exist or is not a directory.",
                "Pass the checked-out repository as the working directory.",
            )
        self._levels = levels(self.workspace)
        budget = Budget()
        try:
            originals = {path: EntryState.of(path, budget)
                         for path in config_paths(self.workspace, self.instructions)}
        except (TooLarge, OSError) as exc:
            raise SetupError(f"cannot set the repository's CLI configuration aside: {exc}.",
                             "Make these files smaller, or run on a trusted checkout.") from exc
        for path, state in originals.items():
            if state.kind == "other":
                raise SetupError(f"{path} is neither a file, a directory nor a link.",
                                 "Remove it from the repository; the CLI would read it.")
        self._originals = originals
        self.changes = []
        self._created_dir = not os.path.lexists(self._policy_path.parent)
        self._active = True
        try:
            for path in originals:
                remove(path)
            write_policy(self._levels[-1], self.policy)
        except BaseException:
            self.restore()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()

    @property
    def tampered(self) -> bool:
        """The policy or a set-aside entry was changed, removed, replaced or created during the
        run (set by :meth:`restore`)."""
        return bool(self.changes)

    def _relative(self, path: Path) -> str:
        with contextlib.suppress(ValueError):
            return str(path.relative_to(self._levels[0]))
        return str(path)

    def _ours(self, path: Path) -> bool:
        """Whether ``path`` is our policy file as we wrote it (read only if the size fits)."""
        ours = self.policy.render()
        try:
            info = path.lstat()
        except OSError:
            return False
        return (stat.S_ISREG(info.st_mode) and info.st_size == len(ours)
                and EntryState.of(path) == EntryState("file", ours, 0o644))

    def _check(self) -> list[Path]:
        """Note in :attr:`changes` what differs from what the run should have left; return
        every entry to clear before the originals go back."""
        moved = [level for level in self._levels
                 if level.is_symlink() or not level.is_dir() or level.resolve() != level]
        if moved:
            self.changes.extend(f"{self._relative(level)} was replaced" for level in moved)
            raise SetupError(
                f"{', '.join(map(str, moved))} was replaced during the run; the repository's "
                "CLI configuration could not be restored there.",
                "Do not commit the workspace as it is: check it out again.",
            )
        policy = self._policy_path
        cursor = policy.parent
        clear: list[Path] = []
        if cursor.is_symlink() or not cursor.is_dir():  # never remove anything through a link
            self.changes.append(f"{self._relative(cursor)}: our directory became {_kind(cursor)}")
            clear.append(cursor)
        elif not self._ours(policy):
            self.changes.append(f"{self._relative(policy)}: our policy became {_kind(policy)}"
                                " (or was changed)")
        clear.append(policy)
        for parent in {path.parent for path in self._originals} - set(self._levels):
            if parent.is_symlink() or (os.path.lexists(parent) and not parent.is_dir()):
                self.changes.append(f"{self._relative(parent)}: became {_kind(parent)}")
                clear.append(parent)
        try:
            found = config_paths(self.workspace, self.instructions)
        except OSError:
            found = []
        for path in found:
            if path not in clear:
                self.changes.append(f"{self._relative(path)}: {_kind(path)} appeared during the "
                                    "run (removed)")
                clear.append(path)
        return clear

    def restore(self) -> None:
        """Put the repository's own entries back. Safe to call more than once."""
        if not self._active:
            return
        self._active = False
        try:
            for path in self._check():
                remove(path)
            if not self._created_dir:  # the directory was there before: it stays
                self._policy_path.parent.mkdir(exist_ok=True)
            for path, original in self._originals.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                original.put_back(path)
            if self._created_dir:
                with contextlib.suppress(OSError):  # not empty: the agent's own files stay
                    self._policy_path.parent.rmdir()
        except OSError as exc:
            self.changes.append(f"restoring failed: {exc}")
            raise SetupError(
                f"could not restore the repository's CLI configuration after the run: {exc}.",
                "Do not commit the workspace as it is: .cursor/ may still hold the action's "
                "policy, or miss the repository's own files. Check the directories' "
                "permissions.",
            ) from exc
