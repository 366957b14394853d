"""The agent's private copy of the working tree, made by root before the agent starts.

The copy holds every directory, regular file and symbolic link of the repository's work tree,
owned by the agent's user, with the modes and modification times of the originals (set-user-ID
and set-group-ID bits dropped). Not copied:

- ``.git`` directories at any depth: the box shows the real ones read-only instead
  (:mod:`.world`), with their config files masked (:mod:`.gitconfig`); a ``.git`` *file* (the
  pointer of a submodule or worktree) is copied as root's, read-only;
- fifos, sockets and devices (never opened), and an entry swapped for one after it was listed
  (:mod:`.filecopy` checks each file's type on its open descriptor; a directory is checked to
  be the one listed, by device and inode, before it is read);
- files larger than ``max_file_bytes`` (by their apparent size: a sparse file counts whole) and
  paths longer than :data:`MAX_PATH_BYTES`: they are named in :attr:`Copy.left_out`, and the
  patch never counts them as deleted.

Each file is cloned where the file system shares blocks copy-on-write (``FICLONE``), else its
data copied in the kernel (:mod:`.filecopy`). The walk is iterative (any depth), reads each
directory's listing (the entries' types from it: no ``lstat`` per file, links never followed),
works relative to open directory descriptors, and stops with :class:`CopyTooLarge` past
``max_total_bytes``. One thread: threads copying files at once made it slower on a busy disk
(their inode creations contend for the journal: bench/README.md). The ``stat`` of every copied
file and link is kept: after the run only entries whose ``stat`` changed
are hashed for the patch (the inode change time cannot be set by the agent).

A copy costs what the file system charges for the tree's inodes and data (``cp -a`` costs the
same: bench/README.md, the box's section): the tiers without an overlay say what it cost.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from cursor_agent_action.agent.contain.box import filecopy
from cursor_agent_action.changeset import StatKey, stat_key
from cursor_agent_action.protected import protected_name

MAX_PATH_BYTES = 3072
"""Longer relative paths are left out (Linux takes 4096 bytes for a whole path)."""


def protected(path: str) -> bool:
    """Whether a change at the repository path ``path`` must stay in the box: a protected name
    at any depth, in any case or Unicode form (:func:`cursor_agent_action.protected.
    protected_name`, the floor's and publish's own test)."""
    return bool(protected_name(path))


class CopyTooLarge(Exception):
    """The working tree is larger than the box takes."""


class Unreadable(OSError):
    """A directory of the working tree cannot be listed by the program that checks it: what
    it cannot read, it cannot check (no other way of running the agent is tried)."""


def too_heavy(max_total_bytes: int) -> CopyTooLarge:
    """The error for a tree whose files (of at most the per-file cap) hold more than
    ``max_total_bytes``."""
    return CopyTooLarge(f"the working tree holds more than {max_total_bytes >> 20} MiB of files")


def too_many(max_entries: int) -> CopyTooLarge:
    """The error for a tree of more than ``max_entries`` entries (``.git``'s uncounted)."""
    return CopyTooLarge(f"the working tree holds more than {max_entries:,} files and "
                        "directories (the box's cap)")


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


class _Copier:
    """One copy's walk, one directory at a time, relative to its open descriptors."""

    def __init__(self, made: Copy, owner: filecopy.Owner, *, max_file_bytes: int,
                 max_total_bytes: int) -> None:
        self.made, self.owner = made, owner
        self.max_file_bytes, self.max_total_bytes = max_file_bytes, max_total_bytes
        self.data = filecopy.Data()
        self.directories: list[tuple[str, os.stat_result]] = []

    def walk(self, source: str, target: str) -> None:
        pending: list[tuple[str, os.stat_result | None]] = [("", None)]
        while pending:
            relative, seen = pending.pop()
            opened = _open_pair(source, target, relative, seen)
            if opened is None and not relative:
                raise OSError(f"the working tree {source} cannot be opened as a directory")
            if opened is None:  # swapped since it was listed: left out, unread
                self.made.left_out.append(relative)
                continue
            try:
                self._directory(relative, *opened, pending)
            finally:
                os.close(opened[0])
                os.close(opened[1])

    def _directory(self, relative: str, source: int, target: int,
                   pending: list[tuple[str, os.stat_result | None]]) -> None:
        with os.scandir(source) as listing:
            entries = list(listing)
        for entry in entries:
            name = entry.name
            path = f"{relative}/{name}" if relative else name
            if len(os.fsencode(path)) > MAX_PATH_BYTES:
                self.made.left_out.append(path)
            elif entry.is_dir(follow_symlinks=False):
                if name == ".git":  # the read-only original's place
                    self.made.git_dirs.append(path)
                    os.mkdir(name, 0o755, dir_fd=target)
                    continue
                os.mkdir(name, 0o700, dir_fd=target)
                os.chown(name, *self.owner, dir_fd=target, follow_symlinks=False)
                info = entry.stat(follow_symlinks=False)
                self.directories.append((path, info))
                pending.append((path, info))
            elif entry.is_symlink():
                os.symlink(os.readlink(name, dir_fd=source), name, dir_fd=target)
                os.chown(name, *self.owner, dir_fd=target, follow_symlinks=False)
                self.made.stats[path] = stat_key(os.stat(name, dir_fd=target,
                                                         follow_symlinks=False))
            elif entry.is_file(follow_symlinks=False):
                self._file(source, target, name, path)
            else:  # fifos, sockets, devices: never opened
                self.made.left_out.append(path)

    def _file(self, source: int, target: int, name: str, path: str) -> None:
        owner = None if name == ".git" else self.owner  # a pointer file: root's, read-only
        try:
            key, size = filecopy.copy_file(source, target, name, data=self.data, owner=owner,
                                           max_bytes=self.max_file_bytes)
        except filecopy.Gone:
            self.made.left_out.append(path)
            return
        self.made.stats[path] = key
        self.made.files += 1
        self.made.bytes += size
        if self.made.bytes > self.max_total_bytes:
            raise too_heavy(self.max_total_bytes)


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_pair(source: str, target: str, relative: str,
               seen: os.stat_result | None) -> tuple[int, int] | None:
    """The directory ``relative`` of the tree and of the copy, opened; ``None`` when the
    tree's is no longer the directory listed (``seen``: its device and inode)."""
    try:  # the top as named (as the box names it), each directory below never through a link
        fd = (os.open(os.path.join(source, relative), _DIRECTORY) if relative else
              os.open(source, _DIRECTORY & ~os.O_NOFOLLOW))
    except OSError:
        return None
    info = os.fstat(fd)
    if seen is not None and (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        return None
    try:
        return fd, os.open(os.path.join(target, relative) if relative else target, _DIRECTORY)
    except BaseException:
        os.close(fd)
        raise


def copy_tree(source: str, target: str, uid: int, gid: int, *, max_file_bytes: int,
              max_total_bytes: int) -> Copy:
    """Copy the work tree at ``source`` into the empty directory ``target`` (see the module
    docstring); everything made is owned by ``uid``:``gid``."""
    made = Copy()
    os.chown(target, uid, gid)
    os.chmod(target, stat.S_IMODE(os.stat(source).st_mode) & 0o777 | 0o700)
    copier = _Copier(made, filecopy.Owner(uid, gid), max_file_bytes=max_file_bytes,
                     max_total_bytes=max_total_bytes)
    copier.walk(source, target)
    for path, info in reversed(copier.directories):  # after their contents: as found
        dst = os.path.join(target, path)
        os.chmod(dst, stat.S_IMODE(info.st_mode) & 0o1777 | 0o700)
        os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
    made.cloned = copier.data.cloned
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
            raise too_many(max_entries)
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
                    raise too_heavy(max_total_bytes)
    return found
