"""What the agent changed in the workspace: git's view cross-checked with the write tools',
and checked against the policy.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

from cursor_agent_action.agent.permissions import (
    Policy,
)
from cursor_agent_action.runner_io import listing
from cursor_agent_action.stream.aggregate import RunRecord

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


