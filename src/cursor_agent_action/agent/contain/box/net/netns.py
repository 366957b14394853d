"""A new network namespace for the box, and the way back (root only).

:func:`enter_new_netns` moves the calling *thread* into a new network namespace that has only
a loopback interface, brought up here (an ``ioctl``, no ``ip`` binary needed), and returns a
descriptor of the namespace it left; :func:`return_to_netns` goes back. Sockets keep the
namespace they were made in, and a process forked meanwhile lives in the new one: that is how
the jail makes the wall's listeners and the agent's namespace inside the box, then returns to
run the relay on the runner's side.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
_IFREQ = struct.Struct("16sh22x")  # struct ifreq: the name, then ifr_flags in the union
THIS_NETNS = "/proc/thread-self/ns/net"


class NetnsError(OSError):
    """Entering or leaving a network namespace failed."""


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise NetnsError(errno, f"{what} failed: {os.strerror(errno)}")


def loopback_up() -> None:
    """Bring ``lo`` of the current namespace up (a new namespace starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        current = fcntl.ioctl(sock, SIOCGIFFLAGS, _IFREQ.pack(b"lo", 0))
        flags = _IFREQ.unpack(current)[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | IFF_UP))


def enter_new_netns() -> int:
    """Move this thread into a new network namespace with ``lo`` up; a descriptor of the
    namespace it was in (give it to :func:`return_to_netns`)."""
    previous = os.open(THIS_NETNS, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _call(_libc().unshare(CLONE_NEWNET), "unshare (network namespace)")
    except BaseException:
        os.close(previous)
        raise
    try:
        loopback_up()
    except BaseException:
        return_to_netns(previous)
        raise
    return previous


def return_to_netns(previous: int) -> None:
    """Back into the namespace ``previous`` (from :func:`enter_new_netns`); closes it."""
    try:
        _call(_libc().setns(previous, CLONE_NEWNET), "setns (back to the runner's network)")
    finally:
        os.close(previous)


def open_current() -> int:
    """A descriptor of this thread's network namespace (to enter it later with
    :func:`enter`), e.g. the box's, for tools and tests that run something inside it."""
    return os.open(THIS_NETNS, os.O_RDONLY | os.O_CLOEXEC)


def enter(namespace: int) -> None:
    """Move this thread into the network namespace ``namespace`` (a descriptor; kept open)."""
    _call(_libc().setns(namespace, CLONE_NEWNET), "setns")


MS_BIND = 4096
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
RESOLVER_SIDE_DOORS = ("/run/systemd/resolve", "/run/nscd", "/var/run/nscd", "/run/dbus")
"""Unix sockets that would resolve names outside the wall (they are files, not network, so the
namespace does not hide them): systemd-resolved's varlink socket (glibc's ``resolve`` NSS
module, ``resolvectl``), nscd's (glibc asks it first when it exists) and the D-Bus system bus
(resolved's ``org.freedesktop.resolve1`` answers any user). Each is covered by an empty tmpfs."""


def mount_resolver_files(resolv_conf: str, hosts: str, directory: Path,
                         hide: Sequence[str] = RESOLVER_SIDE_DOORS) -> None:
    """Show the box its own /etc/resolv.conf and /etc/hosts and no resolver outside the wall:
    each directory of ``hide`` that exists gets an empty tmpfs over it, then ``resolv_conf``
    and ``hosts``, written in ``directory`` (root's: not the agent's to change), are
    bind-mounted over the two files (over their targets when they are symbolic links, as
    /etc/resolv.conf is on Ubuntu). Call it in the box's mount namespace once it is private
    (the jail's namespace init, before it starts the agent)."""
    libc = _libc()
    for path in hide:
        if os.path.isdir(path) and not os.path.islink(path):
            _call(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                             b"size=16k,mode=755"), f"hiding {path}")
    for text, target in ((resolv_conf, "/etc/resolv.conf"), (hosts, "/etc/hosts")):
        source = directory / Path(target).name
        source.write_text(text, encoding="utf-8")
        source.chmod(0o644)
        real = Path(os.path.realpath(target))
        if not real.exists():  # a link into a hidden directory: give the mount a file to cover
            real.parent.mkdir(parents=True, exist_ok=True)
            real.touch()
        _call(libc.mount(str(source).encode(), str(real).encode(), None, MS_BIND, None),
              f"bind-mounting {target}")


@contextlib.contextmanager
def new_netns() -> Iterator[int]:
    """Inside the block, this thread is in a new network namespace (its descriptor is
    yielded, open until the block ends); after it, back where it was, even on an error."""
    previous = enter_new_netns()
    box = -1
    try:
        box = open_current()
        yield box
    finally:
        if box >= 0:
            os.close(box)
        return_to_netns(previous)
