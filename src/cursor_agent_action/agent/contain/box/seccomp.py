"""No kernel keyrings for the agent: a seccomp filter, installed just before the CLI starts,
answers ``add_key``, ``request_key`` and ``keyctl`` with ENOSYS.

Keyrings are not namespaced by the box: ``setresuid`` keeps the session keyring of whoever
started the root side (a runner service's, or sudo's), and the agent user's own keyring lives
from one run to the next. Without these calls the agent can neither read nor plant a key in
either. Docker's default profile refuses the same calls. System calls of another ABI than the
machine's own (i386 on x86_64, x32) are refused whole: they would reach ``keyctl`` by another
number. The agent also joins a new, empty session keyring before the filter goes on.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from typing import Any

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_LD_ABS_W, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW = 0x7FFF0000
_ENOSYS = 0x00050000 | errno.ENOSYS
KEYCTL_JOIN_SESSION_KEYRING = 1

# machine: (audit arch, add_key, request_key, keyctl, the x32 bit or 0)
_ARCHES = {
    "x86_64": (0xC000003E, 248, 249, 250, 0x40000000),
    "aarch64": (0xC00000B7, 217, 218, 219, 0),
}


class SeccompError(Exception):
    """The filter could not be installed."""


def _filter(arch: int, calls: tuple[int, ...], x32: int) -> bytes:
    """The BPF program (see the module docstring), as ``struct sock_filter`` records."""
    program: list[tuple[int, int, int, int]] = [
        (_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, arch),
        (_RET_K, 0, 0, _ENOSYS),  # another ABI: nothing
        (_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
    ]
    refuse_at = 4 + (1 if x32 else 0) + len(calls) + 1  # the index of the refusing return
    if x32:
        program.append((_JGE_K, refuse_at - len(program) - 1, 0, x32))
    for call in calls:
        program.append((_JEQ_K, refuse_at - len(program) - 1, 0, call))
    program += [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _ENOSYS)]
    return b"".join(struct.pack("HBBI", *record) for record in program)


def install(libc: Any) -> bool:
    """Join a new session keyring, then refuse the keyring calls from now on (this process
    and what it starts); False on a machine this does not know (nothing installed). Needs
    ``PR_SET_NO_NEW_PRIVS`` (or root). Raises :class:`SeccompError`."""
    known = _ARCHES.get(platform.machine())
    if known is None:
        return False
    arch, add_key, request_key, keyctl, x32 = known
    libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None)  # best effort: a new, empty one
    program = ctypes.create_string_buffer(_filter(arch, (add_key, request_key, keyctl), x32))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program.raw) // 8, ctypes.addressof(program))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise SeccompError(f"seccomp: {ctypes.get_errno()}")
    return True
