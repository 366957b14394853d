"""An unprivileged user namespace: where the runner's user (no root, no sudo) can still have
namespaces of its own.

:func:`enter` makes one for this process, mapping only the caller's own uid and gid to
themselves (no other id exists inside: nothing can become root's or another user's file), with
``setgroups`` denied, together with the other namespaces asked for (mount, PID, IPC...): inside
it the process may mount and make namespaces, over nothing but what it owns. A program it runs
as its (non-zero) uid loses those capabilities at ``execve``.

Where it cannot be made, :func:`why_not` says why, in the runner's terms: the sysctls that turn
user namespaces off, and Ubuntu 24.04's AppArmor restriction (the namespace is made, but holds
no capability, so the first mount fails), each with its fix.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path

from cursor_agent_action.agent.contain.box.libc import libc

CLONE_NEWUSER = 0x10000000
APPARMOR_RESTRICT = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
MAX_USER_NAMESPACES = Path("/proc/sys/user/max_user_namespaces")
UNPRIVILEGED_CLONE = Path("/proc/sys/kernel/unprivileged_userns_clone")  # Debian's older kernels


class UserNamespaceError(OSError):
    """The user namespace (or one of the others with it) could not be made."""


def enter(flags: int = 0) -> None:
    """This process in a new user namespace (and those in ``flags``), its own ids mapped to
    themselves. Raises :class:`UserNamespaceError` (``errno`` set)."""
    uid, gid = os.getuid(), os.getgid()
    if libc().unshare(CLONE_NEWUSER | flags) != 0:
        code = ctypes.get_errno()
        raise UserNamespaceError(code, f"unshare (user namespace): {os.strerror(code)}")
    try:
        Path("/proc/self/setgroups").write_text("deny", encoding="ascii")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1", encoding="ascii")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1", encoding="ascii")
    except OSError as exc:
        raise UserNamespaceError(exc.errno or errno.EPERM,
                                 f"mapping the user namespace's ids: {exc.strerror}") from exc


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def why_not(error: str) -> tuple[str, str]:
    """Why no user namespace could be made here (from the probe's ``error``), and the fix."""
    if _read(MAX_USER_NAMESPACES) == "0":
        return (f"user namespaces are turned off (user.max_user_namespaces is 0): {error}",
                "set the sysctl user.max_user_namespaces to a positive number (e.g. 15000)")
    if _read(UNPRIVILEGED_CLONE) == "0":
        return (f"unprivileged user namespaces are turned off "
                f"(kernel.unprivileged_userns_clone is 0): {error}",
                "set the sysctl kernel.unprivileged_userns_clone to 1")
    if _read(APPARMOR_RESTRICT) == "1":
        return ("AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later, "
                "24.04 included: kernel.apparmor_restrict_unprivileged_userns is 1, so a new "
                f"namespace holds no capability): {error}",
                "set the sysctl kernel.apparmor_restrict_unprivileged_userns to 0, or load an "
                "AppArmor profile that allows userns for the helper's Python")
    return (f"a user namespace cannot be made here: {error}",
            "allow unprivileged user namespaces on this machine (kernel and security profile)")
