"""The agent's writable view of the work tree as an overlay, made by root before the agent
starts, and what the agent wrote into it, read by root after it ended.

The real work tree is the lower layer, seen through an id-mapped, read-only, ``nosuid``,
``nodev`` mount (``open_tree`` + ``mount_setattr(MOUNT_ATTR_IDMAP)``, Linux 5.12+, overlayfs on
id-mapped layers 5.19+): its owner's uid and gid show as the agent's, so the agent can change
what it sees as it could in a copy; files of other owners show as the overflow id (65534) and
stay read-only. The upper and work directories are on the box's own sized tmpfs; the pages the
agent writes there are charged to the box's cgroup (the agent writes them). The overlay is
mounted with ``redirect_dir=off`` (a directory of the lower layer cannot be renamed: ``mv``
copies it and deletes the original), ``metacopy=off`` (a change of mode copies the whole file)
and ``index=off``, so the upper directory holds only: whole new or changed files and links,
directories, whiteouts (character devices 0/0, made by the kernel for a deletion) and opaque
directories (``trusted.overlay.opaque``, a directory made anew where one was deleted).

Nothing of the real tree is copied or hashed; :func:`written` reads only the upper directory.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from dataclasses import dataclass, field

from cursor_agent_action.agent.contain.box.libc import libc
from cursor_agent_action.agent.contain.box.world import MS_NODEV, MS_NOSUID, WorldError, mount
from cursor_agent_action.worktree import MAX_PATH_BYTES

SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # x86_64 and aarch64 alike
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, 0o2000000
AT_FDCWD, AT_EMPTY_PATH = -100, 0x1000
MOVE_MOUNT_F_EMPTY_PATH = 4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_IDMAP = 1, 2, 4, 0x100000
CLONE_NEWUSER = 0x10000000
OPTIONS = "redirect_dir=off,metacopy=off,index=off,xino=off,uuid=off"
OPAQUE = "trusted.overlay.opaque"
USER_OPTIONS = "userxattr,redirect_dir=nofollow,metacopy=off,index=off,xino=off,uuid=off"
"""Inside an unprivileged user namespace (the box of :mod:`.userbox`, Linux 5.11+): the
overlay's marks are ``user.overlay.*`` xattrs (``trusted.*`` needs the host's CAP_SYS_ADMIN),
and ``redirect_dir`` is ``nofollow`` (``off`` means ``follow``, which ``userxattr`` refuses):
no redirect is made either way."""
USER_OPAQUE = "user.overlay.opaque"
_FULL_MAP = ["0", "0", "4294967295"]


def unprivileged() -> bool:
    """Whether this process is in a user namespace of its own (its uid map is not the whole
    range): the overlay is then a ``userxattr`` one."""
    try:
        with open("/proc/self/uid_map", encoding="ascii") as handle:
            return handle.read().split() != _FULL_MAP
    except OSError:
        return False


class OverlayError(Exception):
    """The overlay could not be made here (the box falls back to its copy)."""


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _failed(what: str) -> OverlayError:
    return OverlayError(f"{what}: {os.strerror(ctypes.get_errno())}")


def _user_namespace(owner: tuple[int, int], agent: tuple[int, int]) -> int:
    """A descriptor of a new user namespace mapping ``owner`` (uid, gid) to ``agent``: the
    id map of the lower layer. Made by a child that only waits while root writes its maps."""
    ready_read, ready_write = os.pipe()
    done_read, done_write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - a forked child, reported through its exit code
        try:
            os.close(ready_read)
            os.close(done_write)
            code = libc().unshare(CLONE_NEWUSER)
            os.write(ready_write, b"y" if code == 0 else b"n")
            os.read(done_read, 1)
        finally:
            os._exit(0)
    os.close(ready_write)
    os.close(done_read)
    try:
        if os.read(ready_read, 1) != b"y":
            raise OverlayError("no user namespace could be made for the id map")
        base = f"/proc/{child}"
        for name, text in (("uid_map", f"{owner[0]} {agent[0]} 1\n"), ("setgroups", "deny"),
                           ("gid_map", f"{owner[1]} {agent[1]} 1\n")):
            fd = os.open(f"{base}/{name}", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        return os.open(f"{base}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise OverlayError(f"the id map could not be written: {exc}") from exc
    finally:
        os.close(ready_read)
        os.close(done_write)
        os.waitpid(child, 0)


def mount_lower(source: str, target: str, *, owner: tuple[int, int],
                agent: tuple[int, int]) -> None:
    """``source`` (the real tree, its submounts not included) at ``target``: read-only,
    ``nosuid``, ``nodev``, its ``owner`` ids shown as the ``agent``'s."""
    lib = libc()
    clone = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC
    same = owner == agent  # the agent is the tree's owner (the box in a user namespace)
    tree = lib.syscall(SYS_OPEN_TREE, AT_FDCWD, os.fsencode(source), clone)
    if tree < 0:
        raise _failed("open_tree of the work tree")
    try:
        userns = -1 if same else _user_namespace(owner, agent)
        try:
            flags = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
            attr = _MountAttr(flags | (0 if same else MOUNT_ATTR_IDMAP), 0, 0, max(userns, 0))
            set_attr = lib.syscall(
                SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)
            )
            if set_attr != 0:
                raise _failed("an id-mapped mount (mount_setattr)")
        finally:
            if userns >= 0:
                os.close(userns)
        into = os.fsencode(target)
        moved = lib.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, into, MOVE_MOUNT_F_EMPTY_PATH)
        if moved != 0:
            raise _failed("move_mount of the id-mapped tree")
    finally:
        os.close(tree)


def mount_overlay(lower: str, upper: str, work: str, target: str) -> None:
    """The overlay of ``upper`` over ``lower`` at ``target`` (see the module docstring)."""
    for path in (lower, upper, work):
        if "," in path or ":" in path:
            raise OverlayError(f"{path} has a comma or colon (overlay options cannot hold it)")
    try:
        mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV,
              f"lowerdir={lower},upperdir={upper},workdir={work},"
              f"{USER_OPTIONS if unprivileged() else OPTIONS}")
    except WorldError as exc:
        raise OverlayError(str(exc)) from exc


def is_whiteout(info: os.stat_result) -> bool:
    """The kernel's mark of a deleted entry: a character device 0/0 (the agent cannot make
    one: mknod needs CAP_MKNOD)."""
    return stat.S_ISCHR(info.st_mode) and info.st_rdev == 0


def _opaque(path: str) -> bool:
    with contextlib.suppress(OSError):
        name = USER_OPAQUE if unprivileged() else OPAQUE
        return os.getxattr(path, name, follow_symlinks=False) == b"y"
    return False


@dataclass
class Written:
    """What the upper directory holds, by repository path: files and links new or changed,
    entries deleted (whiteouts), directories made anew over a deleted one (opaque: nothing
    below them in the lower layer is seen), and what cannot be in a patch: fifos, sockets
    (``special``, never opened) and paths too long to read."""

    files: dict[str, os.stat_result] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    too_long: list[str] = field(default_factory=list)
    entries: int = 0


def written(upper: str) -> Written:
    """Read the upper directory (iteratively, ``lstat`` only: links are never followed, nothing
    is opened). Directories are entered; an entry of another kind is never opened."""
    found = Written()
    pending = [""]
    while pending:
        prefix = pending.pop()
        here = os.path.join(upper, prefix) if prefix else upper
        with os.scandir(here) as listing:
            names = [entry.name for entry in listing]
        for name in names:
            path = prefix + name
            found.entries += 1
            if len(os.fsencode(path)) > MAX_PATH_BYTES:
                found.too_long.append(path)
                continue
            info = os.lstat(os.path.join(upper, path))
            if stat.S_ISDIR(info.st_mode):
                found.dirs.append(path)
                if _opaque(os.path.join(upper, path)):
                    found.opaque.append(path)
                pending.append(path + "/")
            elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                found.files[path] = info
            elif is_whiteout(info):
                found.deleted.append(path)
            else:
                found.special.append(path)
    return found
