"""The agent's private copy of the working tree, made by root before the agent starts.

The copy holds every directory, regular file and symbolic link of the repository's work tree,
owned by the agent's user, with the modes and modification times of the originals (set-user-ID
and set-group-ID bits dropped). Not copied:

- ``.git`` directories at any depth: the box shows the real ones read-only instead
  (:mod:`.world`), with their config files masked (:mod:`.gitconfig`); a ``.git`` *file* (the
  pointer of a submodule or worktree) is copied as root's, read-only;
- fifos, sockets and devices (never opened);
- files larger than ``max_file_bytes`` (by their apparent size: a sparse file counts whole) and
  paths longer than :data:`MAX_PATH_BYTES`: they are named in :attr:`Copy.left_out`, and the
  patch never counts them as deleted.

Each file is cloned where the file system shares blocks copy-on-write (``FICLONE``), else its
data copied. The walk is iterative (any depth), reads each entry with ``lstat`` (links are
never followed) and stops with :class:`CopyTooLarge` past ``max_total_bytes``. The ``lstat`` of
every copied file and link is kept: after the run only entries whose ``lstat`` changed are
hashed for the patch (the inode change time cannot be set by the agent).
"""

from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass, field

from cursor_agent_action.protected import protected_name

MAX_PATH_BYTES = 3072
"""Longer relative paths are left out (Linux takes 4096 bytes for a whole path)."""
_CHUNK = 1 << 30
FICLONE = 0x40049409  # <linux/fs.h>: _IOW(0x94, 9, int)


def protected(path: str) -> bool:
    """Whether a change at the repository path ``path`` must stay in the box: a protected name
    at any depth, in any case or Unicode form (:func:`cursor_agent_action.protected.
    protected_name`, the floor's and publish's own test)."""
    return bool(protected_name(path))


class CopyTooLarge(Exception):
    """The working tree is larger than the box takes."""


StatKey = tuple[int, int, int, int, int]  # as changeset.StatKey: mode, size, inode, mtime, ctime


def stat_key(info: os.stat_result) -> StatKey:
    return (info.st_mode, info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


@dataclass
class Copy:
    """What :func:`copy_tree` made."""

    stats: dict[str, StatKey] = field(default_factory=dict)  # relative path -> lstat of copy
    git_dirs: list[str] = field(default_factory=list)  # relative paths of .git directories
    left_out: list[str] = field(default_factory=list)  # too large, too long, or not a file
    absent: list[str] = field(default_factory=list)  # in HEAD, not in the tree when copied
    files: int = 0
    bytes: int = 0
    git_files: list[str] = field(default_factory=list)  # ".git" files, shown read-only
    storage: str = "copy"  # or "overlay" (:mod:`.overlay`): the tree is not copied
    note: str = ""  # which storage, and why: one line for the summary
    dirty: dict[str, tuple[str, str]] = field(default_factory=dict)  # the copy's base
    cloned: int = 0  # files cloned (FICLONE: shared blocks, copied on write), not copied
    skipped_config: int = 0  # a commit's view (:mod:`.commitview`): its own CLI config left out


def nested_repositories(copy: Copy) -> list[str]:
    """The directories below the top that held a repository when copied (a ``.git``
    directory or a submodule's or worktree's ``.git`` file)."""
    marks = [*copy.git_dirs, *copy.git_files,
             *(path for path in copy.stats if os.path.basename(path) == ".git")]
    return sorted({os.path.dirname(path) for path in marks} - {""})


def _copy_file(source: str, target: str, info: os.stat_result, *, clone: bool) -> bool:
    """Copy ``source`` to the new ``target``: a copy-on-write clone (``FICLONE``: no data
    written, on btrfs, XFS with reflink, bcachefs...) when ``clone``, else (or when the file
    system has none) by ``sendfile``. Whether it was cloned."""
    src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600)
        try:
            if clone and info.st_size:
                try:
                    fcntl.ioctl(dst, FICLONE, src)
                except OSError:
                    pass  # ext4, tmpfs, another file system: the data is copied
                else:
                    return True
            left = info.st_size
            while left > 0:
                sent = os.sendfile(dst, src, None, min(left, _CHUNK))
                if sent == 0:  # the file shrank while we copied it
                    break
                left -= sent
        finally:
            os.close(dst)
    finally:
        os.close(src)
    return False


def copy_tree(source: str, target: str, uid: int, gid: int, *, max_file_bytes: int,
              max_total_bytes: int) -> Copy:
    """Copy the work tree at ``source`` into the empty directory ``target`` (see the module
    docstring); everything made is owned by ``uid``:``gid``."""
    made = Copy()
    clone = True
    os.chown(target, uid, gid)
    os.chmod(target, stat.S_IMODE(os.stat(source).st_mode) & 0o777 | 0o700)
    pending: list[str] = [""]
    directories: list[tuple[str, os.stat_result]] = []
    while pending:
        relative = pending.pop()
        here = os.path.join(source, relative) if relative else source
        with os.scandir(here) as entries:
            names = [entry.name for entry in entries]
        for name in names:
            path = f"{relative}/{name}" if relative else name
            src, dst = os.path.join(source, path), os.path.join(target, path)
            if len(os.fsencode(path)) > MAX_PATH_BYTES:
                made.left_out.append(path)
                continue
            info = os.lstat(src)
            kind = stat.S_IFMT(info.st_mode)
            if name == ".git" and kind == stat.S_IFDIR:
                made.git_dirs.append(path)
                os.mkdir(dst, 0o755)  # the mount point of the read-only original
                continue
            if kind == stat.S_IFDIR:
                os.mkdir(dst, 0o700)
                os.chown(dst, uid, gid)
                directories.append((path, info))
                pending.append(path)
            elif kind == stat.S_IFLNK:
                os.symlink(os.readlink(src), dst)
                os.chown(dst, uid, gid, follow_symlinks=False)
                made.stats[path] = stat_key(os.lstat(dst))
            elif kind == stat.S_IFREG and info.st_size <= max_file_bytes:
                made.bytes += info.st_size
                if made.bytes > max_total_bytes:
                    raise CopyTooLarge(
                        f"the working tree holds more than {max_total_bytes >> 20} MiB of files")
                if _copy_file(src, dst, info, clone=clone):
                    made.cloned += 1
                else:
                    clone = made.cloned > 0  # one refusal: this file system has no clones
                mode = stat.S_IMODE(info.st_mode) & 0o1777
                if name == ".git":  # a submodule's or worktree's pointer: root's, read-only
                    os.chmod(dst, 0o444)
                else:
                    os.chown(dst, uid, gid)
                    os.chmod(dst, mode)
                os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
                made.stats[path] = stat_key(os.lstat(dst))
                made.files += 1
            else:
                made.left_out.append(path)
    for path, info in reversed(directories):  # after their contents: modes and times as found
        dst = os.path.join(target, path)
        os.chmod(dst, stat.S_IMODE(info.st_mode) & 0o1777 | 0o700)
        os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
    return made


@dataclass
class Survey:
    """What :func:`survey` found of the work tree, before anything is copied or mounted."""

    git_dirs: list[str] = field(default_factory=list)  # ".git" directories, at any depth
    git_files: list[str] = field(default_factory=list)  # ".git" files (submodules, worktrees)
    special: list[str] = field(default_factory=list)  # fifos, sockets, devices; paths too long
    entries: int = 0
    bytes: int = 0  # regular files up to the per-file cap (counted only when asked)


def survey(source: str, *, max_entries: int, count_bytes: bool = False,
           max_file_bytes: int = 0, max_total_bytes: int = 0) -> Survey:
    """Walk the work tree once, iteratively, from directory listings (``lstat`` only for
    ``count_bytes``; nothing is opened, no link followed), and stop with :class:`CopyTooLarge`
    as soon as it holds more than ``max_entries`` entries or (``count_bytes``) more than
    ``max_total_bytes`` in files of at most ``max_file_bytes``: the caps cost nothing."""
    found = Survey()
    pending: list[str] = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(os.path.join(source, relative) if relative else source) as listing:
            entries = [(entry.name, entry) for entry in listing]
        found.entries += len(entries)
        if found.entries > max_entries:
            raise CopyTooLarge(f"the working tree holds more than {max_entries:,} files and "
                               "directories (the box's cap)")
        for name, entry in entries:
            path = f"{relative}/{name}" if relative else name
            if len(os.fsencode(path)) > MAX_PATH_BYTES:
                found.special.append(path)
            elif entry.is_dir(follow_symlinks=False):
                (found.git_dirs if name == ".git" else pending).append(path)
            elif entry.is_symlink():
                continue
            elif not entry.is_file(follow_symlinks=False):
                found.special.append(path)
            elif name == ".git":
                found.git_files.append(path)
            elif count_bytes:
                size = entry.stat(follow_symlinks=False).st_size
                found.bytes += size if size <= max_file_bytes else 0
                if found.bytes > max_total_bytes:
                    raise CopyTooLarge(f"the working tree holds more than "
                                       f"{max_total_bytes >> 20} MiB of files")
    return found
