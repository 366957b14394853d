"""The agent's home: fresh for every start of the agent, holding only root's files (the
workflow's MCP servers, the CLI's sandbox settings) and the chats a later ``--resume`` needs.

Nothing else carries over from one run to the next: hooks, ``sandbox.json``, shell start-up
files or links the agent left in its home are gone with the box. The chats are carried by root,
checked both ways (:func:`carry`): directories and regular files only (a link, fifo or device is
dropped), bounded in count and size, never followed, stored root's own between runs.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from cursor_agent_action.agent.contain.box.user import AgentUser

KEPT = (".cursor/chats", ".config/Cursor/chats")
"""Where the CLI keeps its chats (``<dir>/<workspace>/<chat>/store.db``): what ``--resume``
reads. Public reports: the CLI's chat store under ``~/.cursor/chats`` (or the XDG config dir)."""
MAX_KEPT_FILES = 2000
MAX_KEPT_BYTES = 256 << 20


class HomeError(Exception):
    """The home could not be made."""


def carry(source: str, target: str, uid: int, gid: int) -> int:
    """Copy the directories and regular files below ``source`` into the new ``target``, owned
    by ``uid``:``gid`` (0600/0700); bounded by :data:`MAX_KEPT_FILES` (directories and files)
    and :data:`MAX_KEPT_BYTES` (what is over is dropped). The number of entries copied."""
    copied = total = 0
    pending = [""]
    os.makedirs(target, mode=0o700, exist_ok=True)
    os.chown(target, uid, gid)
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(os.path.join(source, relative)) as listing:
                names = [entry.name for entry in listing]
        except OSError:
            continue
        for name in names:
            path = os.path.join(relative, name)
            src, dst = os.path.join(source, path), os.path.join(target, path)
            info = os.lstat(src)
            if stat.S_ISDIR(info.st_mode) and len(path) < 1024 and copied < MAX_KEPT_FILES:
                copied += 1  # a directory counts as a file against the bound
                os.mkdir(dst, 0o700)
                os.chown(dst, uid, gid)
                pending.append(path)
            elif (stat.S_ISREG(info.st_mode) and copied < MAX_KEPT_FILES
                  and total + info.st_size <= MAX_KEPT_BYTES):
                fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                try:
                    with os.fdopen(fd, "rb", closefd=False) as reader, open(
                        os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600),
                        "wb",
                    ) as writer:
                        shutil.copyfileobj(reader, writer)
                finally:
                    os.close(fd)
                os.chown(dst, uid, gid)
                copied += 1
                total += info.st_size
    return copied


def make_home(home: Path, agent: AgentUser, files: Mapping[str, str | None],
              store: Path | None) -> None:
    """The fresh home (the agent's, 0700) with root's ``files`` (0644, root's) and the chats
    kept in ``store``."""
    home.mkdir(mode=0o700)
    os.chown(home, agent.uid, agent.gid)
    for kept in KEPT:
        source = store / kept if store is not None else None
        if source is not None and source.is_dir() and not source.is_symlink():
            _agent_dirs(home, Path(kept).parent, agent)
            try:
                carry(str(source), str(home / kept), agent.uid, agent.gid)
            except OSError:  # a store an earlier agent closed (its mode: red team 6): not
                continue  # carried, and never a reason to run the agent another way
    for relative, text in files.items():
        path = home / relative
        if relative.startswith("/") or ".." in Path(relative).parts or path.parent == home:
            raise HomeError(f"{relative} is not a file in a directory of the agent's home")
        if text is None:
            continue
        _agent_dirs(home, Path(relative).parent, agent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)


def _agent_dirs(home: Path, relative: Path, agent: AgentUser) -> None:
    current = home
    for part in relative.parts:
        current = current / part
        if not current.exists():
            current.mkdir(mode=0o700)
            os.chown(current, agent.uid, agent.gid)


def _opened(top: Path) -> None:
    """Every directory below ``top`` (ours) opened to us again, from the top down, before it is
    removed: as the runner's own user, the agent could close one (Landlock does not govern a
    mode), and the store would stay as it left it."""
    pending = [str(top)]
    while pending:
        directory = pending.pop()
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode):
            continue
        os.chmod(directory, 0o700)
        with os.scandir(directory) as listing:
            pending += [entry.path for entry in listing if entry.is_dir(follow_symlinks=False)]


def keep_chats(home: Path, store: Path, owner: tuple[int, int]) -> None:
    """After the run (no agent process left): the chats of ``home`` replace those in
    ``store``, made anew by root and then given to ``owner`` (the runner's user, 0700: it
    cleans its temporary directory; the agent never sees the store)."""
    if store.exists():
        _opened(store)
        shutil.rmtree(store)
    store.mkdir(mode=0o700, parents=True)
    for kept in KEPT:
        source = home / kept
        info = os.lstat(source) if os.path.lexists(source) else None
        if info is not None and stat.S_ISDIR(info.st_mode):
            parents_ok = all(
                not (home / p).is_symlink() for p in Path(kept).parents if str(p) != "."
            )
            if parents_ok:  # as this program (root, or the runner's own user: tier 1b)
                carry(str(source), str(store / kept), os.geteuid(), os.getegid())
    for directory, dirs, files in os.walk(store):  # our own files, just made
        for name in [directory, *(os.path.join(directory, n) for n in [*dirs, *files])]:
            os.lchown(name, *owner)
