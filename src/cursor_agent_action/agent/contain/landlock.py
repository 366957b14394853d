"""Landlock (Linux 5.13+): file-system rules a process sets on itself, kept across exec, with no
namespace and no capability needed. Used where the box cannot be made (a container job without
CAP_SYS_ADMIN): the agent may read everything but the masked places, and write only where it is
given.

Landlock allows, it never denies: a rule grants rights beneath a directory (or on one file) and
everything the ruleset handles that no rule grants is refused. So "all but these places" is
built by :func:`read_roots`: from ``/`` down, a directory that holds no masked place gets one
rule; one that does is entered and each of its entries gets a rule (a masked one none). Links
are never followed (a link in ``/tmp`` to ``/root`` gets no rule: the place it leads to is
reached only through its own rules). What appears after the rules are made, beside a masked
place, is refused (the safe side).

ABI differences (:func:`abi`): 1 handles 13 file rights; 2 adds ``REFER`` (moving files between
directories), 3 ``TRUNCATE``, 5 ``IOCTL_DEV``; 6 adds scopes: no signal to, and no abstract
unix socket of, a process outside the domain. Each right is handled only when the kernel knows
it; the ruleset's size tells the kernel which fields we know.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field

from cursor_agent_action.agent.contain.box.libc import libc

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights a rule on a file (not a directory) may grant."""
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK
         | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM | REFER | TRUNCATE)
SERVICE_ACCOUNT_SECRETS = ("/run/secrets", "/var/run/secrets")
"""Masked wherever Landlock stands in for the box (which hides all of ``/run``): Kubernetes
mounts a pod's service-account token under ``/var/run/secrets`` (world-readable by default),
Docker and Compose their secrets under ``/run/secrets``."""
MAX_ENTRIES = 20_000
"""Entries looked at in the directories that hold a masked place; past it, the rest get no rule."""


class LandlockError(Exception):
    """Landlock is missing or refused a step."""


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (too old, or not enabled)."""
    lib = libc()
    lib.syscall.restype = ctypes.c_long
    version = lib.syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0),
                           ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def handled_rights(version: int) -> int:
    """The file rights ABI ``version`` knows (all of them are handled: refused unless granted)."""
    rights = (1 << 13) - 1
    if version >= 2:
        rights |= REFER
    if version >= 3:
        rights |= TRUNCATE
    if version >= 5:
        rights |= IOCTL_DEV
    return rights


class _Attr(ctypes.Structure):
    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


@dataclass
class Rules:
    """What the agent may do: ``(path, rights)`` pairs; a file gets only file rights."""

    grants: list[tuple[str, int]] = field(default_factory=list)

    def allow(self, path: str, rights: int) -> None:
        self.grants.append((path, rights))


def _inside(path: str, place: str) -> bool:
    return path == place or path.startswith(place.rstrip("/") + "/")


def read_roots(masks: Iterable[str], *, root: str = "/") -> list[str]:
    """Paths whose rules together cover everything under ``root`` but the ``masks`` (resolved,
    absolute) and what lies beneath them; links are left out, never followed."""
    hidden = sorted({os.path.realpath(mask) for mask in masks})
    found: list[str] = []
    pending = [root]
    seen = 0
    while pending:
        directory = pending.pop()
        if any(_inside(directory, mask) for mask in hidden):
            continue
        if not any(_inside(mask, directory) for mask in hidden):
            found.append(directory)
            continue
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            seen += 1
            if seen > MAX_ENTRIES:
                return found
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if stat.S_ISDIR(info.st_mode):
                    pending.append(path)
                elif not stat.S_ISLNK(info.st_mode) and not any(
                        _inside(path, mask) for mask in hidden):
                    found.append(path)
    return found


def make_ruleset(rules: Rules, version: int) -> int:
    """A ruleset file descriptor holding ``rules`` (opened now, as the caller: root may name
    places the agent's user could not open)."""
    if version < 1:
        raise LandlockError("this kernel has no Landlock (Linux 5.13 or later, with landlock in "
                            "the lsm= list)")
    lib = libc()
    lib.syscall.restype = ctypes.c_long
    handled = handled_rights(version)
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    attr = _Attr(handled, 0, scoped)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = lib.syscall(ctypes.c_long(SYS_CREATE_RULESET), ctypes.byref(attr),
                           ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise LandlockError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    try:
        for path, rights in rules.grants:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError:
                continue  # gone meanwhile: nothing to grant
            try:
                info = os.fstat(fd)
                if stat.S_ISLNK(info.st_mode):
                    continue
                allowed = rights & handled
                if not stat.S_ISDIR(info.st_mode):
                    allowed &= FILE_RIGHTS
                if not allowed:
                    continue
                beneath = _PathBeneath(allowed, fd)
                if lib.syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(ruleset),
                                ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(beneath),
                                ctypes.c_uint32(0)) != 0:
                    raise LandlockError(f"landlock_add_rule for {path} failed: "
                                        f"{os.strerror(ctypes.get_errno())}")
            finally:
                os.close(fd)
    except BaseException:
        os.close(ruleset)
        raise
    return int(ruleset)


def restrict_self(ruleset: int) -> None:
    """This process (and all it starts) under ``ruleset``, for good; sets no_new_privs first."""
    lib = libc()
    lib.syscall.restype = ctypes.c_long
    if lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LandlockError(f"PR_SET_NO_NEW_PRIVS failed: {os.strerror(ctypes.get_errno())}")
    if lib.syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset),
                    ctypes.c_uint32(0)) != 0:
        raise LandlockError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")


def agent_rules(*, masks: Iterable[str], writable: Iterable[str], readable: Iterable[str] = (),
                devices: Iterable[str] = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty",
                                          "/dev/urandom", "/dev/random")) -> Rules:
    """Read (and run) everything but ``masks``; write only ``writable`` and the harmless
    devices; ``readable`` read again even inside a mask (the CLI's install), but not a mask
    inside it."""
    rules = Rules()
    masks = [os.path.realpath(mask) for mask in masks]
    for path in read_roots(masks):
        rules.allow(path, READ)  # no device ioctl but on the devices below (ABI 5+)
    for shown in readable:  # shown again, but not what is masked inside it
        place = os.path.realpath(shown)
        inner = [mask for mask in masks if _inside(mask, place) and mask != place]
        for path in read_roots(inner, root=place):
            rules.allow(path, READ)
    for path in writable:
        rules.allow(path, READ | WRITE | IOCTL_DEV)
    for path in devices:
        rules.allow(path, READ_FILE | WRITE_FILE | IOCTL_DEV)
    return rules
