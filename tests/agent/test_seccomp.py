"""The seccomp filter as the Landlock tiers install it (``host_ipc=False``): no unix socket made
by ``socket()``, pathname or abstract; ``socketpair`` kept, and with it what Node does with
its children (stdio pipes, the ``fork()`` IPC channel); io_uring and POSIX message queues
refused; the box's filter (``host_ipc=True``) leaves unix sockets alone.

Each check runs in a forked child that installs the filter on itself (``no_new_privs`` first,
as an unprivileged process must), through the kernel."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import resource
import shutil
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.box import seccomp
from cursor_agent_action.agent.contain.box.libc import libc
from tests.support.forked import in_child

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="the filter knows x86_64, arm64")
NODE = shutil.which("node") or ""
IO_URING_SETUP = 425


def _filtered(host_ipc: bool, probe: Callable[[], dict[str, str]]) -> dict[str, str]:
    def restrict() -> None:
        lib = libc()
        lib.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        seccomp.install(lib, host_ipc=host_ipc)

    return in_child(probe, before=restrict)


def _try(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, "refused")
    return "ok"


def _syscall(number: int) -> Callable[[], None]:
    def call() -> None:
        lib = libc()
        if lib.syscall(ctypes.c_long(number), 0, None) < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
    return call


def _sockets() -> dict[str, str]:
    def pair() -> None:
        one, two = socket.socketpair()
        one.sendall(b"x")
        assert two.recv(1) == b"x"

    return {
        "unix": _try(lambda: socket.socket(socket.AF_UNIX).close()),
        "unix_dgram": _try(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).close()),
        "inet": _try(lambda: socket.socket(socket.AF_INET).close()),
        "socketpair": _try(pair),
        "io_uring": _try(_syscall(IO_URING_SETUP)),
        "kill_all": _try(lambda: os.kill(-1, 0)),
        "kill_self": _try(lambda: os.kill(os.getpid(), 0)),
    }


def test_without_the_box_no_unix_socket_can_be_made_but_socketpair_works() -> None:
    """And no kill(-1): as the runner's own user, every process of the runner at once."""
    seen = _filtered(False, _sockets)
    assert seen == {"unix": "EACCES", "unix_dgram": "EACCES", "inet": "ok", "socketpair": "ok",
                    "io_uring": "ENOSYS", "kill_all": "EACCES", "kill_self": "ok"}


def test_the_box_s_filter_leaves_unix_sockets_alone() -> None:
    seen = _filtered(True, _sockets)
    assert seen["unix"] == "ok"
    assert seen["socketpair"] == "ok"


FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602


def _attributes(target: Path) -> Callable[[], dict[str, str]]:
    """Set and remove an extended attribute, set inode flags (``chattr``) and, for contrast,
    read them and change the file's mode."""
    def flags(request: int) -> None:
        with target.open("rb") as handle:
            fcntl.ioctl(handle.fileno(), request, b"\0" * 8)

    def probe() -> dict[str, str]:
        return {
            "setxattr": _try(lambda: os.setxattr(target, "user.planted", b"x")),
            "lsetxattr": _try(lambda: os.setxattr(target, "user.planted", b"x",
                                                  follow_symlinks=False)),
            "removexattr": _try(lambda: os.removexattr(target, "user.kept")),
            "listxattr": _try(lambda: os.listxattr(target)),
            "set_flags": _try(lambda: flags(FS_IOC_SETFLAGS)),
            "chmod": _try(lambda: target.chmod(0o640)),
        }
    return probe


def test_without_the_box_no_extended_attribute_or_inode_flag_can_be_set(
    tmp_path: Path,
) -> None:
    """Landlock does not govern a file's attributes: as the runner's own user, the agent could
    mark the runner's files (its checkout, shown in place to a read-only run). The filter
    refuses setting and removing extended attributes and setting inode flags as a file system
    without them would (EOPNOTSUPP); reading them and chmod stay (the latter is checked after
    a read-only run: agent/contain/inplace.py). Before: each call went through."""
    target = tmp_path / "file"
    target.write_text("x")
    try:
        os.setxattr(target, "user.kept", b"1")
    except OSError:
        pytest.skip("this file system has no user extended attributes")
    seen = _filtered(False, _attributes(target))
    unsupported = errno.errorcode[errno.EOPNOTSUPP]
    assert seen == {"setxattr": unsupported, "lsetxattr": unsupported,
                    "removexattr": unsupported, "listxattr": "ok", "set_flags": unsupported,
                    "chmod": "ok"}
    assert os.listxattr(target) == ["user.kept"]
    assert _filtered(True, _attributes(target))["setxattr"] == "ok"  # the box: its own files


def test_without_the_box_no_other_process_s_limits_or_scheduling_can_be_changed() -> None:
    """As the runner's own user (tier 1b), Landlock governs neither: red team 5 pinned the
    program that ends the agent's processes to one processor at the idle priority, and closed
    its files (``prlimit --nofile 3``) so that it died before its check. The filter refuses
    those calls on any process but the caller's own (pid 0); on itself they stay (glibc's
    ``setrlimit`` is ``prlimit64(0, ...)``). Before: each went through."""
    target = os.getpid()  # the test process: another process than the filtered child
    affinity = os.sched_getaffinity(0)
    files = resource.getrlimit(resource.RLIMIT_NOFILE)
    nice = os.getpriority(os.PRIO_PROCESS, 0)

    def probe() -> dict[str, str]:  # each change a no-op (what is there already), if let through
        return {
            "affinity_other": _try(lambda: os.sched_setaffinity(target, affinity)),
            "affinity_self": _try(lambda: os.sched_setaffinity(0, affinity)),
            "scheduler_other": _try(lambda: os.sched_setscheduler(
                target, os.SCHED_OTHER, os.sched_param(0))),
            "prlimit_other": _try(lambda: resource.prlimit(target, resource.RLIMIT_NOFILE,
                                                           files)),
            "prlimit_read_other": _try(lambda: resource.prlimit(target, resource.RLIMIT_CORE)),
            "rlimit_self": _try(lambda: resource.setrlimit(
                resource.RLIMIT_CORE, resource.getrlimit(resource.RLIMIT_CORE))),
            "nice_other": _try(lambda: os.setpriority(os.PRIO_PROCESS, target, nice)),
            "nice_self": _try(lambda: os.setpriority(os.PRIO_PROCESS, 0, nice + 1)),
        }

    def every_process_of_the_user() -> dict[str, str]:  # only ever run filtered
        return {**probe(), "nice_user": _try(lambda: os.setpriority(os.PRIO_USER, os.getuid(),
                                                                    nice))}

    seen = _filtered(False, every_process_of_the_user)
    assert seen == {"affinity_other": "EPERM", "affinity_self": "ok", "scheduler_other": "EPERM",
                    "prlimit_other": "EPERM", "prlimit_read_other": "EPERM", "rlimit_self": "ok",
                    "nice_other": "EPERM", "nice_user": "EPERM", "nice_self": "ok"}
    assert set(_filtered(True, probe).values()) == {"ok"}  # the box: its own PID namespace


def test_below_landlock_abi_3_no_file_can_be_emptied_by_its_path(tmp_path: Path) -> None:
    """Landlock governs truncation from ABI 3 (Linux 6.2): red team 6 emptied the real checkout
    and the runner's files by path as the runner's own user (``truncate(2)``, or an open for
    reading with ``O_TRUNC``). With ``truncate_by_path`` the filter refuses both; writing and
    ``ftruncate`` through a descriptor opened for writing (which Landlock governs) stay."""
    target = tmp_path / "file"

    def probe() -> dict[str, str]:
        target.write_text("kept\n")
        found = {
            "truncate": _try(lambda: os.truncate(target, 0)),
            "open_read_trunc": _try(lambda: os.close(os.open(target, os.O_RDONLY | os.O_TRUNC))),
            "open_read": _try(lambda: os.close(os.open(target, os.O_RDONLY))),
            "open_write_trunc": _try(lambda: os.close(os.open(target, os.O_WRONLY | os.O_TRUNC))),
        }
        return {**found, "left": target.read_text()}

    def restricted() -> None:
        lib = libc()
        lib.prctl(38, 1, 0, 0, 0)
        seccomp.install(lib, host_ipc=False, truncate_by_path=True)

    seen = in_child(probe, before=restricted)
    assert seen == {"truncate": "EACCES", "open_read_trunc": "EACCES", "open_read": "ok",
                    "open_write_trunc": "ok", "left": ""}
    assert _filtered(False, probe)["truncate"] == "ok"  # from ABI 3, Landlock's own


_NODE = """
const cp = require('child_process'), fs = require('fs'), net = require('net');
const out = {};
out.spawnSync = String(cp.spawnSync('sh', ['-c', 'echo spawned']).stdout).trim();
const done = () => { if (Object.keys(out).length === 5) console.log(JSON.stringify(out)); };
const piped = cp.spawn('cat', [], {stdio: ['pipe', 'pipe', 'inherit']});
piped.stdout.on('data', (d) => { out.pipe = String(d).trim(); done(); });
piped.stdin.end('through a pipe');
const child = cp.fork(process.argv[2]);
child.on('message', (m) => { out.fork = m; done(); });
child.send('hi');
fs.promises.readFile(__filename).then(() => { out.fs = 'ok'; done(); });
const server = net.createServer();
server.on('error', (e) => { out.listen = e.code; done(); });
server.listen(process.argv[3], () => { out.listen = 'ok'; server.close(); done(); });
"""


@pytest.mark.skipif(not NODE, reason="needs node (the CLI's runtime)")
def test_node_s_children_pipes_and_ipc_work_without_unix_sockets(tmp_path: Path) -> None:
    """What the CLI's runtime does with its tools (libuv: socketpair for stdio and the fork()
    channel, io_uring falling back); only listening on a unix socket is refused."""
    script, child = tmp_path / "main.js", tmp_path / "child.js"
    script.write_text(_NODE)
    child.write_text("process.on('message', (m) => { process.send(m + ' back'); "
                     "process.exit(0); });\n")
    where = str(tmp_path / "listen.sock")

    def run_node() -> dict[str, str]:
        done = subprocess.run([NODE, str(script), str(child), where], capture_output=True,
                              text=True, timeout=60, check=False)
        return {"out": done.stdout, "err": done.stderr}

    seen = _filtered(False, run_node)
    assert json.loads(seen["out"]) == {"spawnSync": "spawned", "pipe": "through a pipe",
                                       "fork": "hi back", "fs": "ok", "listen": "EACCES"}, seen
