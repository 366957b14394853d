"""Files the agent must not change, captured before a run and put back byte for byte after it.

Used for the permission policy in ``.cursor/`` (``permissions.PolicyGuard``) and for the
runner's file-command files (``agent_run``): the agent runs as the same user, so it could
change either; we notice and undo it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
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
