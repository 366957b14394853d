"""Reading a work tree the agent may have touched, without trusting it: every entry by
``lstat`` (links never followed, directories holding a ``.git`` never entered), regular files
and links only; a fifo, socket or device is never opened, and a file we must read (a
``.gitignore``) is opened so that it cannot hold us: no link followed, no wait for a writer,
``fstat`` before a byte is read."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

MAX_PATH_BYTES = 3072
"""Longer relative paths are not read (Linux takes 4096 bytes for a whole path)."""
MAX_RULES_BYTES = 1 << 20
"""A ``.gitignore`` is read up to this size (git itself reads at most 100 MiB)."""
MAX_RULES_TOTAL_BYTES = 16 << 20
"""The ``.gitignore`` files read for one check, in all: more fails the check."""


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def shown_path(path: str) -> str:
    """A path as people read it (outputs, the summary, an error): bytes that are not UTF-8,
    kept in the path as surrogate escapes, shown as U+FFFD."""
    return _encode(path).decode("utf-8", "replace")


@dataclass
class Unread:
    """What a walk of the tree did not read, by why."""

    nested: list[str] = field(default_factory=list)  # nested repositories (not entered)
    special: list[str] = field(default_factory=list)  # fifos, sockets, devices (never opened)
    too_long: list[str] = field(default_factory=list)  # over MAX_PATH_BYTES (not entered)


def walk(repo: Path, unread: Unread) -> dict[str, os.stat_result]:
    """Regular files and links of the work tree (not ``.git``), by relative path. Directories
    holding a ``.git`` (nested repositories, submodules) are not entered. Iterative (any depth);
    a path longer than :data:`MAX_PATH_BYTES` is not entered; a fifo, socket or device is
    never opened. What was not read is in ``unread``, by why."""
    found: dict[str, os.stat_result] = {}
    root = str(repo)
    pending = [""]
    while pending:
        prefix = pending.pop()
        with os.scandir(os.path.join(root, prefix) if prefix else root) as listing:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in listing]
        names = {name for name, _ in entries}
        if prefix and ".git" in names:
            unread.nested.append(prefix.rstrip("/"))
            continue
        for name, is_dir in entries:
            if not prefix and name == ".git":
                continue
            path = prefix + name
            if len(_encode(path)) > MAX_PATH_BYTES:
                unread.too_long.append(path)
                continue
            if is_dir:
                pending.append(path + "/")
                continue
            info = os.lstat(os.path.join(root, path))
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                found[path] = info
            else:
                unread.special.append(path)
    return found


def read_regular(path: str, limit: int = MAX_RULES_BYTES) -> bytes | None:
    """The first ``limit`` bytes of the regular file ``path``, or None for anything else (a
    link, a fifo, a socket, a device, a directory, nothing): opened without following a link
    and without waiting for a writer, checked with ``fstat`` before a byte is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
