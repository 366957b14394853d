"""No kernel keyrings for the agent: a seccomp filter, installed just before the CLI starts,
answers ``add_key``, ``request_key`` and ``keyctl`` with ENOSYS.

Keyrings are not namespaced by the box: ``setresuid`` keeps the session keyring of whoever
started the root side (a runner service's, or sudo's), and the agent user's own keyring lives
from one run to the next. Without these calls the agent can neither read nor plant a key in
either. Docker's default profile refuses the same calls. System calls of another ABI than the
machine's own (i386 on x86_64, x32) are refused whole: they would reach ``keyctl`` by another
number. The agent also joins a new, empty session keyring before the filter goes on.

Without the box (the Landlock tiers: no network or IPC namespace, the host's ``/run`` in
view), :func:`install` with ``host_ipc=False`` also refuses:

- ``socket(AF_UNIX, ...)`` (EACCES): no unix socket by path or abstract name can be made, so
  none can be connected to or listened on: not the container runtime's, D-Bus's, an SSH
  agent's or another job's under ``/run`` or ``/tmp``. Landlock does not govern connecting to a
  socket by path, and scopes abstract ones only from ABI 6; this holds from seccomp's first
  kernel on. ``socketpair`` stays: it is how Node (libuv) wires a child's stdio and its IPC
  channel, and it connects only the two ends it makes;
- ``io_uring_setup``, ``io_uring_enter``, ``io_uring_register`` (ENOSYS): io_uring makes
  sockets and connects them without the system calls a filter sees (libuv falls back);
- ``mq_open`` (ENOSYS): no POSIX message queue, none left for the next run (their file system
  is rarely mounted, so they could not even be found to remove);
- setting or removing an extended attribute, and the ``ioctl`` calls that set inode flags
  (``chattr``) (EOPNOTSUPP, as where a file system has none): Landlock does not govern a
  file's attributes, and a file the agent may only read (the runner's own, as the runner's
  user; a read-only run's checkout, shown in place) must not get any of its making;
- ``prlimit64``, ``sched_setaffinity``, ``sched_setscheduler``, ``sched_setparam`` and
  ``sched_setattr`` on another process than the caller (a pid other than 0), and
  ``setpriority``/``ioprio_set`` on anything but the caller itself (EPERM): Landlock governs
  neither, and as the runner's own user the agent could starve the program that ends it and
  checks the checkout after it, or close its files (``prlimit --nofile``) so that it dies;
  ``setrlimit``, ``nice``, ``taskset`` of a new command and the like act on the caller (pid 0)
  and stay;
- with ``truncate_by_path`` (Landlock below ABI 3, which does not govern truncation):
  ``truncate(2)`` by path, an ``open``/``openat`` for reading with ``O_TRUNC`` (which empties
  a file without asking to write it) and ``openat2`` (whose flags a filter cannot read; libc
  falls back to ``openat``) (EACCES, ENOSYS for ``openat2``): as the runner's own user the
  agent could empty any file of the runner's it can name, the real checkout's included;
- ``kill(-1, ...)`` (EACCES): no signal to every process its user may signal at once (as the
  runner's own user, below Landlock ABI 6, that would be the runner's whole session; a single
  process of the runner's found by its pid stays within reach there, and the summary says so).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass
from typing import Any

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_LD_ABS_W, _JEQ_K, _JGE_K, _RET_K, _AND_K = 0x20, 0x15, 0x35, 0x06, 0x54
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_ENOSYS = _ERRNO | errno.ENOSYS
_EACCES = _ERRNO | errno.EACCES
_EOPNOTSUPP = _ERRNO | errno.EOPNOTSUPP
_ARG0 = 16  # seccomp_data.args[0] (its low 32 bits on a little-endian machine)
_ARG1 = 24  # seccomp_data.args[1]
_EPERM = _ERRNO | errno.EPERM
_SET_FLAGS = (0x40086602, 0x40046602, 0x401C5820, 0x40087602, 0x40047602)
"""``ioctl`` requests that set a file's inode flags or attributes: FS_IOC_SETFLAGS (and its
32-bit form), FS_IOC_FSSETXATTR, FS_IOC_SETVERSION (and its 32-bit form)."""
AF_UNIX = 1
KEYCTL_JOIN_SESSION_KEYRING = 1


@dataclass(frozen=True)
class _Arch:
    audit: int
    keyrings: tuple[int, int, int]  # add_key, request_key, keyctl
    host_ipc: tuple[int, int, int, int]  # io_uring_setup, _enter, _register, mq_open
    socket: int
    kill: int
    attributes: tuple[int, ...]  # setxattr, lsetxattr, fsetxattr, the three removexattr,
    # setxattrat, removexattrat (Linux 6.13), file_setattr (6.17)
    ioctl: int
    on_pid: tuple[int, ...]  # prlimit64, sched_setaffinity, _setscheduler, _setparam, _setattr
    on_who: tuple[int, int]  # setpriority, ioprio_set: (which, who, ...)
    opens: tuple[tuple[int, int], ...]  # (open or openat, the offset of its flags argument)
    truncate: tuple[int, int]  # truncate, openat2
    x32: int = 0  # the x32 bit, or 0


_ARCHES = {
    "x86_64": _Arch(0xC000003E, (248, 249, 250), (425, 426, 427, 240), 41, 62,
                    (188, 189, 190, 197, 198, 199, 463, 466, 469), 16,
                    (302, 203, 144, 142, 314), (141, 251), ((2, 24), (257, 32)), (76, 437),
                    0x40000000),
    "aarch64": _Arch(0xC00000B7, (217, 218, 219), (425, 426, 427, 180), 198, 129,
                     (5, 6, 7, 14, 15, 16, 463, 466, 469), 29,
                     (261, 122, 119, 118, 274), (140, 30), ((56, 32),), (45, 437)),
}
_O_TRUNC, _O_ACCMODE = 0o1000, 0o3
"""An open that empties the file without asking to write it: ``O_TRUNC`` with ``O_RDONLY``."""
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1  # setpriority's and ioprio_set's "a process"
_ALL_PROCESSES = 0xFFFFFFFF  # kill(-1, ...): every process the caller may signal


class SeccompError(Exception):
    """The filter could not be installed."""


def supported() -> bool:
    """Whether this machine's architecture is one the filter knows."""
    return platform.machine() in _ARCHES


Instruction = tuple[int, "int | str", "int | str", int]


def _assemble(program: list[tuple[str, Instruction]]) -> bytes:
    """``struct sock_filter`` records; a jump may name a label (an instruction's tag)."""
    where = {label: index for index, (label, _) in enumerate(program) if label}
    records = []
    for index, (_, (code, true, false, k)) in enumerate(program):
        jumps = [where[jump] - index - 1 if isinstance(jump, str) else jump
                 for jump in (true, false)]
        records.append(struct.pack("HBBI", code, *jumps, k))
    return b"".join(records)


def _filter(arch: _Arch, *, host_ipc: bool, truncate_by_path: bool = False) -> bytes:
    """The BPF program (see the module docstring)."""
    refused = [*arch.keyrings, *(() if host_ipc else arch.host_ipc),
               *((arch.truncate[1],) if truncate_by_path else ())]
    program: list[tuple[str, Instruction]] = [
        ("", (_LD_ABS_W, 0, 0, 4)),  # seccomp_data.arch
        ("", (_JEQ_K, 1, 0, arch.audit)),
        ("", (_RET_K, 0, 0, _ENOSYS)),  # another ABI: nothing
        ("", (_LD_ABS_W, 0, 0, 0)),  # seccomp_data.nr
    ]
    if arch.x32:
        program.append(("", (_JGE_K, "refuse", 0, arch.x32)))
    program += [("", (_JEQ_K, "refuse", 0, call)) for call in refused]
    if truncate_by_path:
        program.append(("", (_JEQ_K, "emptying", 0, arch.truncate[0])))
        program += [("", (_JEQ_K, f"open{index}", 0, call))
                    for index, (call, _) in enumerate(arch.opens)]
    if not host_ipc:
        program += [("", (_JEQ_K, "unsupported", 0, call)) for call in arch.attributes]
        program += [("", (_JEQ_K, "self_only", 0, call)) for call in arch.on_pid]
        program += [
            ("", (_JEQ_K, "priority", 0, arch.on_who[0])),
            ("", (_JEQ_K, "io_priority", 0, arch.on_who[1])),
            ("", (_JEQ_K, "ioctl", 0, arch.ioctl)),
            ("", (_JEQ_K, "kill", 0, arch.kill)),
            ("", (_JEQ_K, 0, "allow", arch.socket)),
            ("", (_LD_ABS_W, 0, 0, _ARG0)),  # socket(domain, ...)
            ("", (_JEQ_K, "eacces", "allow", AF_UNIX)),
            ("kill", (_LD_ABS_W, 0, 0, _ARG0)),  # kill(pid, ...)
            ("", (_JEQ_K, 0, "allow", _ALL_PROCESSES)),
            ("eacces", (_RET_K, 0, 0, _EACCES)),
            ("ioctl", (_LD_ABS_W, 0, 0, _ARG1)),  # ioctl(fd, request, ...)
            *(("", (_JEQ_K, "unsupported", 0, request)) for request in _SET_FLAGS),
            ("", (_JEQ_K, "allow", "allow", 0)),
            ("unsupported", (_RET_K, 0, 0, _EOPNOTSUPP)),
            ("self_only", (_LD_ABS_W, 0, 0, _ARG0)),  # (pid, ...): 0 is the caller
            ("", (_JEQ_K, "allow", "eperm", 0)),
            ("priority", (_LD_ABS_W, 0, 0, _ARG0)),  # setpriority(which, who, ...)
            ("", (_JEQ_K, "who_self", "eperm", _PRIO_PROCESS)),
            ("io_priority", (_LD_ABS_W, 0, 0, _ARG0)),  # ioprio_set(which, who, ...)
            ("", (_JEQ_K, "who_self", "eperm", _IOPRIO_WHO_PROCESS)),
            ("who_self", (_LD_ABS_W, 0, 0, _ARG1)),
            ("", (_JEQ_K, "allow", "eperm", 0)),
            ("eperm", (_RET_K, 0, 0, _EPERM)),
        ]
    if truncate_by_path:  # open*(..., flags): reading, with O_TRUNC
        for index, (_, offset) in enumerate(arch.opens):
            program += [
                (f"open{index}", (_LD_ABS_W, 0, 0, offset)),
                ("", (_AND_K, 0, 0, _O_TRUNC | _O_ACCMODE)),
                ("", (_JEQ_K, "emptying", "allow", _O_TRUNC)),
            ]
        program.append(("emptying", (_RET_K, 0, 0, _EACCES)))
    program += [("allow", (_RET_K, 0, 0, _ALLOW)), ("refuse", (_RET_K, 0, 0, _ENOSYS))]
    return _assemble(program)


def install(libc: Any, *, host_ipc: bool = True, truncate_by_path: bool = False) -> bool:
    """Join a new session keyring, then refuse the keyring calls from now on (this process
    and what it starts), and without ``host_ipc`` (no box around) unix sockets, io_uring and
    POSIX message queues; False on a machine this does not know (nothing installed). Needs
    ``PR_SET_NO_NEW_PRIVS`` (or root). Raises :class:`SeccompError`."""
    arch = _ARCHES.get(platform.machine())
    if arch is None:
        return False
    libc.syscall(arch.keyrings[2], KEYCTL_JOIN_SESSION_KEYRING, None)  # best effort: new, empty
    program = ctypes.create_string_buffer(_filter(arch, host_ipc=host_ipc,
                                                  truncate_by_path=truncate_by_path))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program.raw) // 8, ctypes.addressof(program))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise SeccompError(f"seccomp: {ctypes.get_errno()}")
    return True
