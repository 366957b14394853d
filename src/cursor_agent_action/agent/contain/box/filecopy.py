"""One regular file of the work tree copied into the agent's private copy: opened relative to
its directory's descriptor, never through a link, its type checked on the open descriptor (an
entry swapped for a fifo, a device or a link after it was listed is left out, never read);
its data cloned copy-on-write (``FICLONE``) where the file system shares blocks, else copied
in the kernel (``copy_file_range``, else ``sendfile``); owner, mode and times set on the new
descriptor, whose ``fstat`` is what the patch compares against later.

Each step is one system call on a descriptor (no path walked again, no data through Python):
what is left of the copy's cost is the file system's own, as ``cp -a``'s (bench/README.md).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import NamedTuple

from cursor_agent_action.changeset import StatKey, stat_key

FICLONE = 0x40049409  # <linux/fs.h>: _IOW(0x94, 9, int)
_CHUNK = 1 << 30
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

class Gone(Exception):
    """The entry is no longer a regular file of at most the size cap: left out, unread."""


class Owner(NamedTuple):
    """Who owns the copy's files."""

    uid: int
    gid: int


class Data:
    """How file data is moved, learnt once per copy rather than failed once per file: a clone
    until the file system refuses one, ``copy_file_range`` until it is refused, ``sendfile``
    after (both in the kernel, no data through Python)."""

    def __init__(self) -> None:
        self.clone = True
        self.copy_range = hasattr(os, "copy_file_range")
        self.cloned = 0

    def move(self, source: int, target: int, size: int) -> None:
        """Put the first ``size`` bytes of ``source`` in the empty ``target``."""
        if self.clone and size:
            try:
                fcntl.ioctl(target, FICLONE, source)
            except OSError:
                self.clone = self.cloned > 0  # a first refusal: this file system has none
            else:
                self.cloned += 1
                return
        left = size
        while left > 0:
            sent = self._send(source, target, size - left, min(left, _CHUNK))
            if sent == 0:  # the file shrank while we copied it
                break
            left -= sent

    def _send(self, source: int, target: int, offset: int, count: int) -> int:
        if self.copy_range:
            try:
                return os.copy_file_range(source, target, count, offset, offset)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                self.copy_range = False  # an older kernel, another file system: sendfile
                os.lseek(target, offset, os.SEEK_SET)  # where sendfile writes
        return os.sendfile(target, source, offset, count)


def copy_file(source_dir: int, target_dir: int, name: str, *, data: Data, owner: Owner | None,
              max_bytes: int) -> tuple[StatKey, int]:
    """Copy the regular file ``name`` of the directory ``source_dir`` to a new file of that
    name in ``target_dir``, owned by ``owner`` (``None``: root's, read-only: a ``.git``
    pointer file), with the original's permission bits (less set-user-ID and set-group-ID) and
    times; its ``stat`` key and size. :class:`Gone` when it is no longer a regular file of at
    most ``max_bytes``."""
    try:
        source = os.open(name, _READ, dir_fd=source_dir)
    except OSError as exc:  # vanished, or now a link (ELOOP)
        raise Gone(name) from exc
    try:
        info = os.fstat(source)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            raise Gone(name)
        target = os.open(name, _WRITE, 0o600, dir_fd=target_dir)
        try:
            data.move(source, target, info.st_size)
            if owner is None:
                os.fchmod(target, 0o444)
            else:
                os.fchown(target, owner.uid, owner.gid)
                os.fchmod(target, stat.S_IMODE(info.st_mode) & 0o1777)
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
            return stat_key(os.fstat(target)), info.st_size
        finally:
            os.close(target)
    finally:
        os.close(source)
