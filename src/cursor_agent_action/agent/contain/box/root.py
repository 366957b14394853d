"""The root side of the box: run as root (directly, or through ``sudo -n``).

    python -I -m cursor_agent_action.agent.contain.box.root SPEC.json

The helper (the runner's user) writes ``SPEC.json`` (0600: it holds the agent's environment,
API key included; removed as soon as it is read) and starts this program with three pipes:
stdout and stderr are the agent's own (passed through untouched), stdin is the control channel
(``T``: SIGTERM the agent; ``K``, or the pipe closing: kill everything).

1. Prepare, in a mount namespace of this program's own: the agent user; a tmpfs (sized) holding
   the private copy of the working tree (:mod:`.tree`, the real ``.git`` directories shown
   read-only over it with masked config, :mod:`.gitconfig`) and a fresh home (:mod:`.home`);
   the cgroup (:mod:`.limits`).
2. Run: new PID, mount and IPC namespaces; PID 1 builds the agent's view (:mod:`.world`), starts
   the agent (its own session, its uid and gid, no groups, ``PR_SET_NO_NEW_PRIVS``, stdin on
   ``/dev/null``, no other descriptor) and reaps until the agent exits; then the kernel kills
   everything else in the namespace.
3. Finish, with no agent process left: the patch of the copy against the tree it was made from
   (our hardened git, new objects in the box's own store, files over the size cap left out),
   the chats kept for ``--resume``, the cgroup removed. The copy, the home and everything the
   agent left anywhere are gone with this program's mount namespace.

The status goes to ``status_file``, a file the helper made and filled beforehand, written in
place (it needs no new disk space): ``{"returncode": N, ...}`` once the agent ran, or
``{"error": "...", "started": false}`` when the box could not be set up, the only case in which
the helper may run the agent another way. Written by this program, which waits for the agent,
never by anything the agent can stop.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import resource
import select
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

from cursor_agent_action.agent.contain.box import (
    finish,
    gitconfig,
    home,
    limits,
    seccomp,
    storage,
    tree,
    world,
)
from cursor_agent_action.agent.contain.box.contract import BoxSpec, BoxStatus
from cursor_agent_action.agent.contain.box.libc import die_with_parent, libc
from cursor_agent_action.agent.contain.box.net import netns, walllog
from cursor_agent_action.agent.contain.box.net.ca import CaError
from cursor_agent_action.agent.contain.box.net.jailside import BoxNetwork, hold_key
from cursor_agent_action.agent.contain.box.net.relay import HOSTS_TEXT, Wall
from cursor_agent_action.agent.contain.box.user import AgentUser, UserError, agent_user
from cursor_agent_action.stream.keyreport import MaskReport

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
PR_SET_NO_NEW_PRIVS = 38
EXIT_SETUP = 125
STATUS_BYTES = 256 * 1024
"""The status file's size, made and filled by the helper before the box starts."""
_POLL_S = 0.2


class SetupError(Exception):
    """Preparing the box failed; the agent was not started."""


def _check(result: int, what: str) -> None:
    if result != 0:
        raise SetupError(f"{what} failed: {os.strerror(ctypes.get_errno())}")


class Status:
    """The status file, opened at start and written in place (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def write(self, status: BoxStatus) -> None:
        data = status.encoded(STATUS_BYTES)
        with contextlib.suppress(OSError):
            os.pwrite(self.fd, data.ljust(STATUS_BYTES), 0)
            os.fsync(self.fd)


def setup_failed(exc: BaseException, *, final: bool = False) -> BoxStatus:
    """The status of a box not set up (``exc``); ``final``: the agent is run no other way."""
    too_large = isinstance(exc, tree.CopyTooLarge)
    if isinstance(exc, CaError):
        return BoxStatus(False, error=f"the relay could not make the run's certificate "
                         f"authority: {exc}", mask=MaskReport(ca_error=str(exc)))
    return BoxStatus(False, error=str(exc) + (" (the box's cap)" if too_large else ""),
                     too_large=too_large, final=final or too_large)


def silence_output() -> None:
    """The agent's output ends here: stdout and stderr to /dev/null from now on."""
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)


def _exec_agent(spec: BoxSpec, agent: AgentUser, box_limits: limits.Limits) -> None:
    """In the agent's process (never returns): drop to the agent user and exec the CLI."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.closerange(3, 65536)
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.MAX_PROCESSES, limits.MAX_PROCESSES))
        box_limits.per_process()
        if not agent.keeps_groups:  # a user namespace's setgroups is denied (:mod:`.userbox`)
            os.setgroups([])
        os.setresgid(agent.gid, agent.gid, agent.gid)
        os.setresuid(agent.uid, agent.uid, agent.uid)
        if os.getuid() != agent.uid or os.geteuid() != agent.uid or (
            not agent.keeps_groups and os.getgroups() not in ([], [agent.gid])
        ):
            raise SetupError("the agent's identity could not be set")
        _check(libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
        # No kernel keyrings; the runner's uid on an open network: no unix socket (the host's)
        seccomp.install(libc(), host_ipc=not (agent.keeps_groups and spec.network is None))
        os.umask(0o022)
        os.chdir(spec.cwd)
        os.execve(spec.argv[0], spec.argv, dict(spec.env))  # noqa: S606 - no shell wanted
    except BaseException as exc:  # in a forked child: report and leave, never unwind
        with contextlib.suppress(OSError):
            os.write(2, f"cursor-agent-action: cannot start the agent: {exc}\n".encode())
        os._exit(127)


def _namespace_init(spec: BoxSpec, view: world.World, agent: AgentUser,
                    box_limits: limits.Limits, *, go: int, report: int,
                    net_files: Path | None) -> None:
    """PID 1 of the agent's namespaces (never returns): build the view, start the agent, reap."""
    try:
        die_with_parent()
        order = os.read(go, 1)  # we are in the cgroup once the jail has moved us into it
        if order not in (b"g", b"r"):
            os._exit(1)
        if order == b"r":
            box_limits.kind = "rlimit"
        _check(libc().unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare (mount namespace)")
        world.make_private()
        if net_files is not None:  # the box's own resolver; no resolver outside the wall
            # nor the host's services: /run holds their unix sockets, which a network
            # namespace does not cover (connect() needs no write to the file system)
            if os.path.isdir("/run") and not os.path.islink("/run"):
                world.tmpfs("/run", size="16m", mode=0o755)
            netns.mount_resolver_files(Wall.resolv_conf_text(), HOSTS_TEXT, net_files)
        world.build(view)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(report, f"setup {exc}\n".encode())
        os._exit(1)
    try:
        # Said before the fork: from here on the agent may run, and the box fails closed.
        os.write(report, b"started\n")
        child = os.fork()
        if child == 0:
            os.close(report)
            _exec_agent(spec, agent, box_limits)

        def forward(signum: int, frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signum)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

        signal.signal(signal.SIGTERM, forward)
        while True:  # reap every orphan the namespace hands us until the agent itself ends
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(0)
            if pid == child:
                os.write(report, f"exit {status}\n".encode())
                os._exit(0)  # the kernel now kills the rest of the namespace
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(report, f"error {exc}\n".encode())
        os._exit(1)


def _control(parent: int, init: int, report: int) -> str:
    """Relay the helper's control bytes to the namespace's PID 1 (``init``, as this program sees
    it) until ``parent`` (which waits for it) exits; what the namespace reported (``killed``
    added when it was killed on the helper's order)."""
    stdin_open = True
    killed = False
    answer = b""
    while True:
        readable = [report] + ([0] if stdin_open else [])
        ready, _, _ = select.select(readable, [], [], _POLL_S)
        if 0 in ready:
            data = os.read(0, 64)
            if b"T" in data:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(init, signal.SIGTERM)
            if not data or b"K" in data:  # the helper asked, or it is gone
                with contextlib.suppress(ProcessLookupError):
                    os.kill(init, signal.SIGKILL)
                killed = True
                stdin_open = bool(data)
        if report in ready:
            answer += os.read(report, 4096)
        pid, _ = os.waitpid(parent, os.WNOHANG)
        if pid:
            with contextlib.suppress(OSError):
                while chunk := os.read(report, 4096):
                    answer += chunk
            return answer.decode("ascii", "replace") + ("\nkilled\n" if killed else "")


def _start_namespace(spec: BoxSpec, view: world.World, agent: AgentUser,
                     box_limits: limits.Limits, *, go: int, report: int,
                     net: BoxNetwork | None) -> None:
    """The namespace's parent (never returns): a new PID namespace for its children only, PID 1
    forked into it, its pid reported; waits for it. This program itself stays outside, so it
    can still start git for the patch once the namespace is gone."""
    try:
        jail = os.getppid()
        die_with_parent()  # the jail dies: so do we all
        if os.getppid() != jail:
            os._exit(1)
        if net is not None:  # our copies of the wall's sockets would outlive a stopped relay
            net.join()  # the box's network namespace, when this program is not in it
            net.in_init(None)
        _check(libc().unshare(CLONE_NEWPID), "unshare (PID namespace)")
        init = os.fork()
        if init == 0:
            net_files = Path(spec.box_dir) / "net" if net is not None else None
            _namespace_init(spec, view, agent, box_limits, go=go, report=report,
                            net_files=net_files)
        os.close(go)
        namespace = os.readlink(f"/proc/{init}/ns/pid")
        os.write(report, f"init {init}\n".encode())
        os.close(report)
        os.waitpid(init, 0)
        _wait_namespace_empty(namespace)
        os._exit(0)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(report, f"setup {exc}\n".encode())
        os._exit(1)


def _wait_namespace_empty(namespace: str, limit_s: float = 5.0) -> None:
    """Until no process is left in the PID namespace ``namespace`` (the kernel kills them all
    when its PID 1 ends; some take a moment to go), at most ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        left = False
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                        left = True
                        break
        if not left:
            return
        time.sleep(0.01)


def _read_init(report: int, timeout_s: float = 30.0) -> tuple[int | None, bytes]:
    """The first line the namespace's parent reports: ``init PID`` (None: it failed)."""
    answer = b""
    while b"\n" not in answer:
        ready, _, _ = select.select([report], [], [], timeout_s)
        chunk = os.read(report, 4096) if ready else b""
        if not chunk:
            break
        answer += chunk
    first, _, rest = answer.partition(b"\n")
    words = first.split()
    if len(words) == 2 and words[0] == b"init" and words[1].isdigit():
        return int(words[1]), rest
    return None, answer


def _enter_network(spec: BoxSpec, *, beside: bool = False) -> BoxNetwork | None:
    """With a network policy in the spec: this thread in the box's new network namespace, the
    wall's sockets bound there, its first refusals reported live into ``network_events``
    (``beside``: :meth:`BoxNetwork.enter_beside`, for a jail in a user namespace)."""
    if spec.network is None:
        return None
    events = os.open(spec.network_events,
                     os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.fchown(events, *spec.owner)
    (Path(spec.box_dir) / "net").mkdir(mode=0o755)
    enter = BoxNetwork.enter_beside if beside else BoxNetwork.enter
    return enter(spec.network, on_event=walllog.jsonl_sink(events))


class Stopped(Exception):
    """This program got SIGTERM (the helper gave up waiting, or the job was cancelled)."""


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped


def run(spec: BoxSpec, status: Status, *, own_user: AgentUser | None = None) -> int:
    """Prepare, run and finish (see the module docstring); the exit code of this program.
    SIGTERM, in any phase, ends it within moments: what it started is killed, the cgroup
    removed, and the status says it was stopped (never that the agent did not start, once it
    may have). ``own_user``: the agent is this program's own user, in the user namespace this
    program is in (:mod:`.userbox`)."""
    state = _Held()
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        return _run(spec, status, state, own_user)
    except Stopped:
        if state.net is not None:
            with contextlib.suppress(Exception):
                state.net.finish()
        if state.limits is not None:
            state.limits.remove()  # kills what is left in it: the agent's, the finish's
        # "started": a stopped box is never a reason to run the agent another way
        status.write(BoxStatus(True, error="the box was stopped (SIGTERM) before it finished"))
        return EXIT_SETUP
    finally:
        signal.signal(signal.SIGTERM, previous)


@dataclasses.dataclass
class _Held:
    """What a SIGTERM must undo, whichever phase it comes in."""

    limits: limits.Limits | None = None
    net: BoxNetwork | None = None


def _run(spec: BoxSpec, status: Status, state: _Held, own_user: AgentUser | None) -> int:
    box_limits: limits.Limits | None = None
    net: BoxNetwork | None = None
    agent_init = [0]  # the agent's namespace init, once known (a failed key exchange stops it)
    try:
        agent = own_user or agent_user(spec.user)
        _check(libc().unshare(CLONE_NEWNS), "unshare (mount namespace)")
        view, copy = storage.prepare(spec, agent)
        box_limits = state.limits = limits.create(f"caa-box-{os.getpid()}",
                                                     spec.limits.memory_bytes)
        net = state.net = _enter_network(spec, beside=own_user is not None)
        spec, no_ca = hold_key(spec, view, net, agent_init)
    except (CaError, SetupError, UserError, world.WorldError, home.HomeError, tree.CopyTooLarge,
            gitconfig.GitConfigError, OSError, KeyError, ValueError, TypeError) as exc:
        if net is not None:
            net.finish()
        if box_limits is not None:
            box_limits.remove()
        status.write(setup_failed(exc))
        return EXIT_SETUP
    go_read, go_write = os.pipe()
    read_end, write_end = os.pipe()
    parent = os.fork()
    if parent == 0:
        os.close(read_end)
        os.close(go_write)
        _start_namespace(spec, view, agent, box_limits, go=go_read, report=write_end, net=net)
    os.close(write_end)
    os.close(go_read)
    if net is not None:  # this program back on the runner's side; the relay runs from there
        net.leave()
        net.start()
    init, early = _read_init(read_end)
    if init is not None:
        agent_init[0] = init
        try:
            box_limits.enter(init)
        except OSError:
            box_limits.kind = "rlimit"
        os.write(go_write, b"r" if box_limits.kind == "rlimit" else b"g")
    os.close(go_write)
    answer = early.decode("ascii", "replace") + _control(parent, init or parent, read_end)
    silence_output()  # the helper need not wait for the patch
    network = net.finish() if net is not None else None
    mask = (net.mask_report() if net is not None else None) or no_ca
    words = answer.split()
    if "started" not in words:
        box_limits.remove()
        reason = answer.partition("setup ")[2].strip() or answer.strip()
        status.write(BoxStatus(False, error=reason or "the agent's namespace ended early"))
        return EXIT_SETUP
    result = BoxStatus(True, limits=box_limits.label, storage=copy.note, network=network,
                       mask=mask)
    if "exit" in words and words[words.index("exit") + 1].lstrip("-").isdigit():
        result = replace(result, returncode=os.waitstatus_to_exitcode(
            int(words[words.index("exit") + 1])))
    elif "killed" in words:  # on the helper's order, before the agent's own end was seen
        result = replace(result, returncode=-signal.SIGKILL)
    else:
        result = replace(result, error=answer.strip() or
                         "the agent's namespace ended without a status")
    result = finish.bounded(spec, copy, box_limits).into(result)
    box_limits.remove()
    status.write(result)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or os.geteuid() != 0:
        sys.stderr.write(
            "usage (as root): python -I -m cursor_agent_action.agent.contain.box.root SPEC\n")
        return 2
    spec = BoxSpec.take(Path(args[0]))
    return run(spec, Status(spec.status_file))


if __name__ == "__main__":
    sys.exit(main())
