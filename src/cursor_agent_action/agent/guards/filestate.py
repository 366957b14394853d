"""Files (and whole entries) the agent must not change, captured before a run and put back byte
for byte after it.

Used for the permission policy and the configuration the CLI reads (``repo_config.PolicyGuard``)
and for the runner's file-command files (``runnerfiles``): the agent runs as the same user, so it
could change either; we notice and undo it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_OTHER = -1  # mode of a state that is neither a regular file nor absent


@dataclass(frozen=True)
class FileState:
    """What a path held: a regular file's bytes and mode, nothing (``data`` None), or something
    else that is never restored (a link, directory or fifo: ``data`` None, mode -1)."""

    data: bytes | None
    mode: int = 0o644

    @classmethod
    def of(cls, path: Path) -> FileState:
        """The state of ``path`` now (not following a symbolic link at ``path``)."""
        try:
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                return cls(None, _OTHER)
            return cls(path.read_bytes(), stat.S_IMODE(info.st_mode))
        except FileNotFoundError:
            return cls(None)
        except OSError:
            return cls(None, _OTHER)

    def put_back(self, path: Path) -> None:
        """Make ``path`` hold this state again: remove whatever is there, then write the bytes
        (atomically, with the mode) if there were any. Raises ``OSError``."""
        with contextlib.suppress(FileNotFoundError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        if self.data is not None:
            write_atomic(path, self.data, self.mode)


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write via a temporary file and a rename, so no reader ever sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)  # whatever the umask
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- whole entries: files, links and directories -------------------------------------------


class TooLarge(Exception):
    """An entry holds more than a snapshot may keep in memory."""


@dataclass
class Budget:
    """What a snapshot may still take: bytes of file data and number of entries."""

    data_bytes: int = 64 * 1024 * 1024
    entries: int = 100_000

    def take(self, path: Path, data_bytes: int) -> None:
        self.data_bytes -= data_bytes
        self.entries -= 1
        if self.data_bytes < 0 or self.entries < 0:
            raise TooLarge(f"{path}: more than the set-aside keeps (64 MiB, 100,000 entries)")


@dataclass(frozen=True)
class EntryState:
    """What a path held, never following a link: ``none``, a ``file`` (bytes and mode), a
    ``link`` (its target's bytes), a ``dir`` (mode and entries, recursively) or ``other`` (a
    fifo, socket or device: never created again). Times are kept but not compared."""

    kind: str
    data: bytes = b""
    mode: int = 0
    entries: tuple[tuple[str, EntryState], ...] = ()
    times_ns: tuple[int, int] = field(default=(0, 0), compare=False)

    @classmethod
    def of(cls, path: Path, budget: Budget | None = None) -> EntryState:
        """The state of ``path`` now. Raises :class:`TooLarge` past ``budget``."""
        budget = budget if budget is not None else Budget()
        try:
            info = path.lstat()
        except FileNotFoundError:
            return cls("none")
        times = (info.st_atime_ns, info.st_mtime_ns)
        mode = stat.S_IMODE(info.st_mode)
        budget.take(path, info.st_size if stat.S_ISREG(info.st_mode) else 0)
        if stat.S_ISLNK(info.st_mode):
            return cls("link", os.fsencode(os.readlink(path)), times_ns=times)
        if stat.S_ISREG(info.st_mode):
            return cls("file", path.read_bytes(), mode, times_ns=times)
        if stat.S_ISDIR(info.st_mode):
            names = sorted(os.listdir(path))
            entries = tuple((name, cls.of(path / name, budget)) for name in names)
            return cls("dir", mode=mode, entries=entries, times_ns=times)
        return cls("other", mode=mode, times_ns=times)

    def put_back(self, path: Path) -> None:
        """Make ``path`` hold this state again: remove whatever is there (never following a
        link), then create it as it was, times included. Raises ``OSError``."""
        remove(path)
        if self.kind == "file":
            write_atomic(path, self.data, self.mode)
        elif self.kind == "link":
            os.symlink(os.fsdecode(self.data), path)
        elif self.kind == "dir":
            path.mkdir(mode=0o700)
            for name, entry in self.entries:
                entry.put_back(path / name)
            os.chmod(path, self.mode)
        elif self.kind == "other":
            raise OSError(f"{path} was neither a file, a directory nor a link: not recreated")
        if self.kind != "none":
            os.utime(path, ns=self.times_ns, follow_symlinks=False)

    def describe(self) -> str:
        """``a file``, ``a symbolic link``, ``a directory``, ... (for messages)."""
        return {"none": "nothing", "file": "a file", "link": "a symbolic link",
                "dir": "a directory", "other": "a special file"}[self.kind]


def remove(path: Path) -> None:
    """Remove whatever ``path`` is (a directory with everything in it, even read-only parts),
    never following a link. Raises ``OSError``."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        path.unlink()
        return
    try:
        shutil.rmtree(path)
    except OSError:  # a read-only directory inside: open everything up, then once more
        os.chmod(path, 0o700)
        for root, dirs, _files in os.walk(path):  # os.walk does not follow links
            for name in dirs:
                if not os.path.islink(os.path.join(root, name)):
                    with contextlib.suppress(OSError):
                        os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(path)
