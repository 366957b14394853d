"""The agent's view of the filesystem, built by root in the agent's own mount namespace.

Built by PID 1 of the agent's namespaces before the agent starts (:func:`build`), in this order:

1. ``/proc`` anew: only the agent's processes are visible.
2. The sources of every bind (the private tree, home, read-only reveals, shares) are opened
   (``O_PATH``) while they are still visible.
3. Masks: an empty tmpfs over each directory the agent must not read (the runner's home,
   ``RUNNER_TEMP``, the tool cache, the helper's state), and a fresh, sized, sticky tmpfs at
   ``/tmp``, ``/var/tmp`` and ``/dev/shm``.
4. Mount points: each target path is made inside a mask (an ancestor the agent could not
   traverse becomes a mask too), never on the real filesystem.
5. Binds, from the opened sources: reveals read-only (the CLI's install, a long prompt's file),
   shares read-write, the home, and the private tree at the working tree's own path (so paths in
   the transcript are right), its ``.git`` directories read-only with masked config.
6. Sockets: every unix socket bound on the runner (listed from ``/proc/net/unix`` on the
   runner's side, before the box's network namespace exists: :func:`host_sockets`) that is
   still in view is covered by ``/dev/null``. A read-only mount does not stop ``connect(2)``
   to a socket, and Landlock does not govern it: without this, a world-writable socket outside
   ``/run`` (a database's under ``/var/lib``, a daemon's under ``/opt``) was a way past the
   network wall.
7. Every other mount read-only: nothing the agent writes outside its tree, home and temporary
   directories exists after the run (``/run/lock``, ``/var/crash`` and the like included).

Everything here runs as root in a namespace nobody else sees: a mount changes nothing outside.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field

from cursor_agent_action.agent.contain.box.libc import libc

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - they are made private here
_SPECIAL = ("/proc", "/sys")
"""Left as they are (the kernel's views). /dev is remounted read-only too (device nodes work
on a read-only mount; /dev/mqueue, a sticky 1777 directory on most runners, does not)."""


class WorldError(Exception):
    """The agent's view could not be built (before the agent started)."""

    def __init__(self, message: str, errno: int = 0) -> None:
        super().__init__(message)
        self.errno = errno


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    """mount(2); raises :class:`WorldError` naming the target."""
    result = libc().mount(
        None if source is None else os.fsencode(source),
        os.fsencode(target),
        None if fstype is None else fstype.encode(),
        flags,
        None if data is None else data.encode(),
    )
    if result != 0:
        code = ctypes.get_errno()
        raise WorldError(f"mounting {target} failed: {os.strerror(code)}", code)


def unmount(target: str) -> None:
    """umount2(MNT_DETACH); raises :class:`WorldError` naming the target."""
    if libc().umount2(os.fsencode(target), 2) != 0:
        code = ctypes.get_errno()
        raise WorldError(f"unmounting {target} failed: {os.strerror(code)}", code)


def make_private(path: str = "/") -> None:
    """No mount made from now on reaches any other namespace."""
    mount("none", path, None, MS_REC | MS_PRIVATE)


def tmpfs(target: str, *, size: str, mode: int, uid: int | None = None,
          gid: int | None = None, inodes: int = 0) -> None:
    """A tmpfs of ``size`` bytes (and at most ``inodes`` files and directories: 0, the
    kernel's default), owned by ``uid`` and ``gid`` (by default this process's: root's, or in
    the box's user namespace the runner's, the only ids mapped there)."""
    uid = os.geteuid() if uid is None else uid
    gid = os.getegid() if gid is None else gid
    count = f",nr_inodes={inodes}" if inodes else ""
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={size},mode={mode:o},uid={uid},gid={gid}{count}")


def bind(source_fd: int, target: str, *, read_only: bool, recursive: bool = True) -> None:
    """Bind what ``source_fd`` (an ``O_PATH`` descriptor) names at ``target``, with its
    submounts when ``recursive``; read-only binds become read-only, submounts included."""
    mount(f"/proc/self/fd/{source_fd}", target, None, MS_BIND | (MS_REC if recursive else 0))
    if read_only:
        remount_read_only(target)


def _unescape(field: bytes) -> str:
    """A mountinfo path: octal escapes (space, tab, newline, backslash) undone."""
    return os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), field))


def _mountinfo() -> list[tuple[str, set[str]]]:
    """Mount points and their per-mount options, in the kernel's order."""
    with open("/proc/self/mountinfo", "rb") as handle:
        lines = handle.read().splitlines()
    return [(_unescape(fields[4]), set(fields[5].decode().split(",")))
            for fields in (line.split() for line in lines)]


def _remount_one(point: str, options: set[str]) -> None:
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    flags |= sum(bit for name, bit in _FLAGS.items() if name in options)
    mount(None, point, None, flags)


def _remount_hidden_ok(point: str, options: set[str], *, hidden_ok: bool) -> None:
    """Remount ``point`` read-only; a mount hidden under another (not at its path in this view:
    ENOENT, EINVAL) is out of the agent's reach anyway."""
    try:
        _remount_one(point, options)
    except WorldError as exc:
        if not (hidden_ok and exc.errno in (errno.ENOENT, errno.EINVAL)):
            raise


def remount_read_only(target: str) -> None:
    """Every mount at or below ``target``, read-only (their other options kept); a submount
    hidden under another mount is out of reach and need not be."""
    for point, options in _mountinfo():
        if _under(point, [target]):
            _remount_hidden_ok(point, options, hidden_ok=point != target)


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _traversable(path: str) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and bool(info.st_mode & stat.S_IXOTH)


@dataclass
class World:
    """What :func:`build` needs: sources (paths, opened before anything is masked) and where
    they go."""

    tree: str  # the private copy
    tree_target: str  # the working tree's own path
    home: str
    home_target: str
    masks: list[str]
    tmp_size: str
    reveals: list[str] = field(default_factory=list)  # shown read-only at their own path
    shares: list[str] = field(default_factory=list)  # shown read-write at their own path
    files: dict[str, str] = field(default_factory=dict)  # target -> source: read-only files
    sockets: list[str] = field(default_factory=list)  # the runner's bound unix sockets


def _mask(path: str, masked: list[str]) -> None:
    tmpfs(path, size="4m", mode=0o755)
    masked.append(path)


def _make_point(target: str, masked: list[str], *, is_dir: bool) -> None:
    """``target`` exists and every directory above it is traversable by the agent; what is
    missing is made inside a mask (an ancestor the agent cannot traverse becomes one)."""
    parts = target.strip("/").split("/")
    for depth in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:depth])
        if os.path.islink(ancestor):
            raise WorldError(f"{ancestor} (above {target}) is a symbolic link")
        if not _traversable(ancestor):
            if not _under(ancestor, masked):
                if not os.path.isdir(ancestor):
                    raise WorldError(f"{ancestor} (above {target}) is not a directory")
                _mask(ancestor, masked)
            elif not os.path.isdir(ancestor):
                os.mkdir(ancestor, 0o755)
    if os.path.lexists(target):
        return
    if not _under(target, masked):
        raise WorldError(f"{target} does not exist")
    if is_dir:
        os.mkdir(target, 0o755)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))


def build(world: World) -> None:
    """Build the agent's view (see the module docstring); raises :class:`WorldError`."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # fd, target, read-only, directory; opened now, while every source is still visible
    shown: list[tuple[int, str, bool, bool]] = []
    private: list[tuple[int, str, bool, bool]] = []
    try:
        shown += [(_open(path), path, True, os.path.isdir(path)) for path in world.reveals]
        shown += [(_open(path), path, False, True) for path in world.shares]
        private += [(_open(source), target, True, False) for target, source in world.files.items()]
        private.append((_open(world.home), world.home_target, False, True))
        private.append((_open(world.tree), world.tree_target, False, True))
        masked: list[str] = []
        for path in TMP_DIRS:
            if os.path.isdir(path) and not os.path.islink(path):
                tmpfs(path, size=world.tmp_size, mode=0o1777)
                masked.append(path)
        _masks(world.masks, masked)
        for fd, target, read_only, is_dir in sorted(shown, key=lambda bind: len(bind[1])):
            _make_point(target, masked, is_dir=is_dir)
            bind(fd, target, read_only=read_only, recursive=False)
        # What a reveal or share showed again beneath it is masked once more.
        _masks([path for path in world.masks if _under(path, [b[1] for b in shown])], masked,
               again=True)
        for fd, target, read_only, is_dir in sorted(private, key=lambda bind: len(bind[1])):
            _make_point(target, masked, is_dir=is_dir)
            bind(fd, target, read_only=read_only, recursive=target == world.tree_target)
    finally:
        for fd, *_ in [*shown, *private]:
            os.close(fd)
    # Not skipped under a mask: a reveal or share beneath one (the CLI's directory) shows
    # what is there again, sockets included.
    cover_sockets(world.sockets, [world.tree_target, world.home_target])
    writable = [world.tree_target, world.home_target, *TMP_DIRS, *world.shares, "/dev/pts"]
    for point, options in _mountinfo():
        if "ro" in options or _under(point, _SPECIAL) or _under(point, writable):
            continue
        _remount_hidden_ok(point, options, hidden_ok=point != "/")


_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ESTALE)
"""A socket that went between its listing and its cover (the runner's other jobs come and go):
it is not there to reach, and the box is not failed for it (a failed box set-up runs the agent
uncontained under ``isolation: auto``)."""
SOCKETS_LIMIT = 20_000
"""At most this many of the runner's sockets are read (a runner has tens)."""


def host_sockets(listing: str = "/proc/net/unix") -> list[str]:
    """The paths of the unix sockets bound in the caller's network namespace (abstract and
    unnamed ones have no path: the box's own network namespace has none of the runner's)."""
    try:
        with open(listing, "rb") as handle:
            lines = handle.read().splitlines()[1 : SOCKETS_LIMIT + 1]
    except OSError:
        return []
    paths = {os.fsdecode(fields[7]) for fields in (line.split(None, 7) for line in lines)
             if len(fields) == 8 and fields[7].startswith(b"/")}
    return sorted(paths)


def cover_sockets(paths: Sequence[str], skip: Sequence[str]) -> None:
    """Each of ``paths`` still a socket in this view gets ``/dev/null`` bound over it, so
    connecting there is refused (``skip``: the agent's own)."""
    null = -1
    try:
        for path in paths:
            if _under(path, skip):
                continue
            try:
                if not stat.S_ISSOCK(os.lstat(path).st_mode):
                    continue
            except OSError:
                continue
            if null < 0:
                null = _open("/dev/null")
            try:
                bind(null, path, read_only=False, recursive=False)  # read-only with the rest
            except WorldError as exc:  # gone or changed since listed: nothing to cover there
                if exc.errno not in _GONE:
                    raise
    finally:
        if null >= 0:
            os.close(null)


def _masks(paths: Sequence[str], masked: list[str], *, again: bool = False) -> None:
    for path in sorted(set(paths), key=len):
        if os.path.isdir(path) and not os.path.islink(path) and (
            again or not _under(path, masked)
        ):
            _mask(path, masked)


def _open(path: str) -> int:
    try:
        return os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        raise WorldError(f"cannot open {path}: {exc.strerror or exc}") from exc
