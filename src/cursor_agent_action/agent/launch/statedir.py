"""Where each run keeps its private state (``run-*``), made safely for one OS user.

On a runner: ``$RUNNER_TEMP/cursor-agent-action`` (one job's temp, emptied by the runner).
Elsewhere: ``<system temp>/cursor-agent-action-<uid>``, one per OS user, so a second user on
the same machine never meets a directory an earlier (root) run left. The directory must be a
real directory (not a link), owned by this user; anything else is refused with the real cause.
Outside a runner, old ``run-*`` folders are pruned at the start of each run (bounded; a link
or another user's folder is never followed or removed).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from cursor_agent_action.errors import SetupError

STATE_PREFIX = "run-"
NAME = "cursor-agent-action"
PRUNE_AGE_S = 7 * 24 * 3600
"""A ``run-*`` folder untouched this long is removed (outside a runner)."""
PRUNE_KEEP = 50
"""Beyond the newest this many, a ``run-*`` folder goes once a day old."""
PRUNE_SURPLUS_AGE_S = 24 * 3600
PRUNE_SCAN = 10_000
"""At most this many entries of the state root are looked at per run."""
PRUNE_REMOVE = 100
"""At most this many folders are removed per run."""


def state_root(environ: Mapping[str, str]) -> Path:
    """``$RUNNER_TEMP/cursor-agent-action`` on a runner, else a per-user directory in the
    system temp directory (``cursor-agent-action-<uid>``)."""
    if runner_temp := environ.get("RUNNER_TEMP"):
        return Path(runner_temp) / NAME
    return Path(tempfile.gettempdir()) / f"{NAME}-{os.getuid()}"


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _fix(environ: Mapping[str, str]) -> str:
    where = "RUNNER_TEMP" if environ.get("RUNNER_TEMP") else "TMPDIR"
    return f"or set {where} to a directory of your own"


def _cannot(root: Path, why: str, fix: str) -> SetupError:
    return SetupError(f"cannot create a state directory under {root}: {why}.", fix)


def _make_root(root: Path, environ: Mapping[str, str]) -> None:
    """``root`` made (0700) or checked: a directory, not a link, owned by us, private."""
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            root.mkdir(mode=0o700)
        info = os.lstat(root)
    except OSError as exc:
        parent = root.parent
        detail = exc.strerror or str(exc)
        with contextlib.suppress(OSError):
            owner = os.stat(parent).st_uid
            if exc.errno in (13, 1) and owner != os.getuid():  # EACCES, EPERM
                detail += f" ({parent} belongs to {_owner(owner)}, you are {_owner(os.getuid())})"
        raise _cannot(root, detail, f"Make {parent} writable for you, {_fix(environ)}."
                      ) from exc
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a directory"
        raise _cannot(root, f"it exists and is {kind}",
                      f"Remove {root} (nothing of ours is a link there), {_fix(environ)}.")
    if info.st_uid != os.getuid():
        raise _cannot(root, f"it belongs to {_owner(info.st_uid)}, you are "
                      f"{_owner(os.getuid())} (an earlier run by another user left it)",
                      f"Remove it as its owner (e.g. sudo rm -rf {root}), {_fix(environ)}.")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(root, 0o700, follow_symlinks=False)


def prune(root: Path, *, now: float | None = None) -> int:
    """Remove old ``run-*`` folders of ``root`` (see the module docstring); how many."""
    now = time.time() if now is None else now
    found: list[tuple[float, str]] = []
    me = os.getuid()
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for count, entry in enumerate(entries):
            if count >= PRUNE_SCAN:
                break
            if not entry.name.startswith(STATE_PREFIX):
                continue
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_uid == me:
                    found.append((info.st_mtime, entry.name))
    found.sort(reverse=True)  # newest first
    removed = 0
    for rank, (mtime, name) in enumerate(found):
        age = now - mtime
        if removed >= PRUNE_REMOVE:
            break
        if age <= PRUNE_AGE_S and (rank < PRUNE_KEEP or age <= PRUNE_SURPLUS_AGE_S):
            continue
        path = root / name
        with contextlib.suppress(OSError):
            if not stat.S_ISDIR(os.lstat(path).st_mode):  # swapped for a link meanwhile
                continue
            # rmtree never follows a link inside (it works on descriptors on Linux).
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def new_state_dir(environ: Mapping[str, str]) -> Path:
    """A fresh private directory for one run, ``<state root>/run-*``: two runs never share a
    transcript, result file or CLI config (``--model``)."""
    root = state_root(environ)
    _make_root(root, environ)
    if not environ.get("RUNNER_TEMP"):
        prune(root)
    try:
        return Path(tempfile.mkdtemp(prefix=STATE_PREFIX, dir=root))
    except OSError as exc:
        raise _cannot(root, exc.strerror or str(exc),
                      f"Free space in {root.parent}, {_fix(environ)}.") from exc
