"""Extraction where ``tarfile`` has no data filter (Python 3.10.0-3.10.11, 3.11.0-3.11.3, e.g.
Debian 12's 3.11.2): the members written one by one by our own code, refusing and changing what
``filter="data"`` refuses and changes, so the CLI installs the same on every Python we support.

The caller has already checked the member list (:func:`.archive.unpack`: no absolute name, no
``..``, no member behind a link, no device or pipe). Here, as the data filter does:

- a symbolic or hard link whose target, resolved on the disk as extracted so far, leaves the
  destination is refused (so is an absolute target); a hard link's source must be a regular
  file already extracted;
- a device, fifo or anything but a file, directory or link is refused;
- modes lose set-user-ID, set-group-ID and sticky bits and group and world write (``& 0o755``);
  a file not executable by its owner is executable by nobody; the owner may read and write;
  directories get 0755; nothing is owned by the archive's user or group (the files are ours);
- nothing is written through a link: every file is created with ``O_EXCL | O_NOFOLLOW``.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

_COPY_CHUNK = 1 << 20


class UnsafeMember(Exception):
    """A member the data filter would refuse (the message names it, in the filter's words)."""


def data_mode(member: tarfile.TarInfo) -> int:
    """The mode ``filter="data"`` gives a regular file or hard link."""
    mode = member.mode & 0o755
    if not mode & 0o100:
        mode &= ~0o111
    return mode | 0o600


def _inside(dest: str, path: str) -> bool:
    return os.path.commonpath([dest, path]) == dest


def _resolved(dest: str, path: str) -> str:
    return os.path.realpath(os.path.join(dest, path))


def _check_link(member: tarfile.TarInfo, dest: str) -> str:
    """Where the link leads, resolved on disk (refused outside ``dest``)."""
    if os.path.isabs(member.linkname):
        raise UnsafeMember(f"{member.name!r} is a link to an absolute path")
    if member.issym():
        target = _resolved(dest, os.path.join(os.path.dirname(member.name), member.linkname))
    else:
        target = _resolved(dest, member.linkname)
    if not _inside(dest, target):
        raise UnsafeMember(f"{member.name!r} would link to {target!r}, which is outside the "
                           "destination")
    return target


def _write_file(tar: tarfile.TarFile, member: tarfile.TarInfo, path: str) -> None:
    source = tar.extractfile(member)
    if source is None:
        raise UnsafeMember(f"{member.name!r} has no data")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    with os.fdopen(fd, "wb") as handle, source:
        while chunk := source.read(_COPY_CHUNK):
            handle.write(chunk)
        os.fchmod(handle.fileno(), data_mode(member))
    os.utime(path, (member.mtime, member.mtime), follow_symlinks=False)


def extract(tar: tarfile.TarFile, members: list[tarfile.TarInfo], dest: Path) -> None:
    """Write ``members`` (checked by the caller) under ``dest``, an existing empty directory.
    Raises :class:`UnsafeMember`, ``OSError`` or ``tarfile.TarError``."""
    root = os.path.realpath(dest)
    for member in members:
        name = os.path.normpath(member.name)
        if name == ".":
            continue
        path = os.path.join(root, name)
        if not _inside(root, os.path.realpath(os.path.dirname(path))):
            raise UnsafeMember(f"{member.name!r} would be extracted to {path!r}, which is "
                               "outside the destination")
        if member.isdir():
            os.makedirs(path, 0o755, exist_ok=True)
            if os.path.islink(path) or not os.path.isdir(path):
                raise UnsafeMember(f"{member.name!r} is a directory over another member")
            os.chmod(path, 0o755)  # noqa: S103 - what the data filter leaves a directory
            continue
        os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
        if member.isfile():
            _write_file(tar, member, path)
        elif member.issym():
            _check_link(member, root)
            os.symlink(member.linkname, path)
        elif member.islnk():
            source = _check_link(member, root)
            if not os.path.isfile(source) or os.path.islink(os.path.join(root, member.linkname)):
                raise UnsafeMember(f"{member.name!r} is a hard link to {member.linkname!r}, "
                                   "which is not a file extracted before it")
            os.link(source, path, follow_symlinks=False)
            os.chmod(path, data_mode(member))
        else:
            raise UnsafeMember(f"{member.name!r} is a special file")
