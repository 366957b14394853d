"""An unprivileged user namespace: where the runner's user (no root, no sudo) can still have
namespaces of its own.

:func:`enter` makes one for this process, mapping only the caller's own uid and gid to
themselves (no other id exists inside: nothing can become root's or another user's file), with
``setgroups`` denied, together with the other namespaces asked for (mount, PID, IPC...): inside
it the process may mount and make namespaces, over nothing but what it owns. A program it runs
as its (non-zero) uid loses those capabilities at ``execve``.

:func:`run_as_init` runs the agent as a child of the init of new user, mount, PID and IPC
namespaces (the Landlock tier as the runner's own user, :mod:`.lockdown`).

Where it cannot be made, :func:`why_not` says why, in the runner's terms: the sysctls that turn
user namespaces off, and Ubuntu 24.04's AppArmor restriction (the namespace is made, but holds
no capability, so the first mount fails), each with its fix.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from cursor_agent_action.agent.contain.box.libc import die_with_parent, libc

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWPID = (0x00020000, 0x08000000, 0x40000000,
                                                         0x20000000)
MS_REC, MS_PRIVATE, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x4000, 0x40000, 0x2, 0x4, 0x8
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


def run_as_init(start: Callable[[], None]) -> NoReturn:
    """The runner's-own-user tier with namespaces: this process (the stage)
    makes a user, mount, PID and IPC namespace (:mod:`.userns`) and waits for their PID 1,
    which mounts the namespace's own /proc, starts the agent, passes SIGTERM on to it and,
    once it ended, kills what is left (the kernel kills the rest when PID 1 goes, and PID 1
    goes with the stage). The agent's wait status comes back through a pipe; the stage ends
    as the agent did."""
    try:
        os.setsid()  # the helper's SIGTERM reaches this group: PID 1 passes it to the agent
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ... and the stage waits on
        die_with_parent()
        enter(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)
        lib = libc()
        if lib.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            raise OSError(ctypes.get_errno(), "making the mounts private")
        read_end, write_end = os.pipe()
        init = os.fork()
    except BaseException as exc:  # in a forked child: report and leave, never unwind
        with contextlib.suppress(OSError):
            os.write(2, f"cursor-agent-action: cannot start the agent: {exc}\n".encode())
        os._exit(127)
    if init == 0:  # pragma: no cover - PID 1 of the namespace, reporting through the pipe
        try:
            os.close(read_end)
            die_with_parent()
            if lib.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                         None) != 0:
                raise OSError(ctypes.get_errno(), "mounting /proc in the PID namespace")
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not ignored in the agent
            agent_pid = os.fork()
            if agent_pid == 0:
                start()  # execs the agent, or exits
            signal.signal(signal.SIGTERM, lambda *_: _signal_group(agent_pid, signal.SIGTERM))
            while (found := os.wait())[0] != agent_pid:
                pass
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)  # everything else in the namespace
            with contextlib.suppress(ChildProcessError):
                while True:
                    os.wait()
            os.write(write_end, found[1].to_bytes(4, "little"))
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.write(2, f"cursor-agent-action: cannot start the agent: {exc}\n".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 4)
    os.waitpid(init, 0)
    status = int.from_bytes(answer, "little") if len(answer) == 4 else 127 << 8
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)
