"""The agent's box: run as root (directly, or through ``sudo -n``), start the CLI as its own
unprivileged user, in its own PID and mount namespaces, and put the workspace back after.

    python -I -m cursor_agent_action.agent.jail SPEC.json

The helper (the runner's user) writes ``SPEC.json`` (mode 0600: it holds the agent's
environment, API key included) and starts this program with three pipes: stdout and stderr are
the agent's own (passed through untouched, so the live log loses no time), stdin is the control
channel. The helper writes ``T`` to ask the agent to stop (SIGTERM), ``K`` (or closes the pipe,
also by dying) to kill it at once. The order of things:

1. Prepare (:mod:`.workspace_access`): the agent user exists (created once, no password, no
   login shell, no groups); its home is private; the workspace is the agent's to write, except
   ``.git`` and the protected directories, which stay the runner's (and cannot be renamed
   away: their parent directories get the sticky bit); the paths it must reach are traversable.
2. Run: ``unshare(CLONE_NEWPID | CLONE_NEWNS)`` and fork. The child is PID 1 of the new
   namespace: it mounts a fresh ``/proc`` (only the agent's processes are visible), forks the
   agent (new session, no groups, the agent's uid and gid, ``PR_SET_NO_NEW_PRIVS``, a process
   limit, stdin on /dev/null, no other descriptor) and reaps until the agent exits. When PID 1
   exits, the kernel kills every process left in the namespace, however it forked, and waits for
   them: nothing the agent started survives the run.
3. Finish: the status goes to ``status_file`` (JSON ``{"returncode": N}``, negative for a
   signal), then the workspace is given back to the runner's user, modes and groups restored.

Errors before the agent starts are written to ``status_file`` as ``{"error": "..."}`` and end
this program with code 125.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import sys
from pathlib import Path
from typing import Any

from cursor_agent_action.agent import workspace_access

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
AGENT_MAX_PROCESSES = 4096  # RLIMIT_NPROC: a fork bomb hits this, not the runner
EXIT_SETUP = 125
_POLL_S = 0.2


class JailError(Exception):
    """Preparing the box failed; nothing was started."""


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise JailError(f"{what} failed: {os.strerror(errno)}")


def _write_status(path: str, status: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        Path(path).write_text(json.dumps(status), encoding="utf-8")


def _exec_agent(spec: dict[str, Any], uid: int, gid: int) -> None:
    """In the agent's process (never returns): drop to the agent user and exec the CLI."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.closerange(3, 65536)
        limit = (AGENT_MAX_PROCESSES, AGENT_MAX_PROCESSES)
        resource.setrlimit(resource.RLIMIT_NPROC, limit)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
        if os.getuid() != uid or os.geteuid() != uid or os.getgroups() not in ([], [gid]):
            raise JailError("the agent's identity could not be set")
        _check(_libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
        os.umask(0o022)
        os.chdir(spec["cwd"])
        os.execve(spec["argv"][0], spec["argv"], spec["env"])  # noqa: S606 - no shell wanted
    except BaseException as exc:  # in a forked child: report and leave, never unwind
        with contextlib.suppress(OSError):
            os.write(2, f"cursor-agent-action: cannot start the agent: {exc}\n".encode())
        os._exit(127)


def _namespace_init(spec: dict[str, Any], uid: int, gid: int, report: int) -> None:
    """PID 1 of the agent's namespace (never returns): start the agent, reap, pass signals."""
    try:
        libc = _libc()
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # Our own view of the mounts, so the new /proc is seen by nobody else.
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making / private")
        _check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None),
               "mounting /proc")  # fmt: skip
        agent = os.fork()
        if agent == 0:
            os.close(report)
            _exec_agent(spec, uid, gid)

        def forward(signum: int, frame: object) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(agent, signum)
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent, signum)

        signal.signal(signal.SIGTERM, forward)
        while True:  # reap every orphan the namespace hands us until the agent itself ends
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                os._exit(0)
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            if pid == agent:
                os.write(report, f"{status}\n".encode())
                os._exit(0)  # the kernel now kills the rest of the namespace
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.write(report, f"error {exc}\n".encode())
        os._exit(1)


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _control(init: int, report: int) -> str:
    """Relay the helper's control bytes to the namespace until PID 1 exits; its report."""
    stdin_open = True
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
                stdin_open = bool(data)
        if report in ready:
            chunk = os.read(report, 256)
            answer += chunk
        pid, _ = os.waitpid(init, os.WNOHANG)
        if pid:
            with contextlib.suppress(OSError):
                answer += os.read(report, 256)
            return answer.decode("ascii", "replace").strip()


def run(spec: dict[str, Any]) -> int:
    """Prepare, run and finish (see the module docstring); the exit code of this program."""
    status_file = spec["status_file"]
    try:
        agent = workspace_access.agent_user(spec["user"])
        access = workspace_access.prepare(spec, agent)
    except (JailError, workspace_access.AccessError, OSError, KeyError) as exc:
        _write_status(status_file, {"error": str(exc)})
        return EXIT_SETUP
    try:
        read_end, write_end = os.pipe()
        try:
            _check(_libc().unshare(CLONE_NEWPID | CLONE_NEWNS), "unshare (PID namespace)")
        except JailError as exc:
            _write_status(status_file, {"error": f"{exc}. Containment needs a kernel with PID "
                                        "namespaces and CAP_SYS_ADMIN (a privileged container)."})
            return EXIT_SETUP
        init = os.fork()
        if init == 0:
            os.close(read_end)
            _namespace_init(spec, agent.uid, agent.gid, write_end)
        os.close(write_end)
        answer = _control(init, read_end)
        if answer.lstrip("-").isdigit():
            _write_status(status_file, {"returncode": _returncode(int(answer))})
        else:
            _write_status(status_file, {"error": answer or "the agent's namespace ended early"})
    finally:
        access.restore()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or os.geteuid() != 0:
        sys.stderr.write("usage (as root): python -I -m cursor_agent_action.agent.jail SPEC\n")
        return 2
    path = Path(args[0])
    spec = json.loads(path.read_text(encoding="utf-8"))
    spec["owner"] = [path.stat().st_uid, path.stat().st_gid]  # whoever wrote it: the helper
    path.unlink()  # the agent's environment (its API key) is not left on disk
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())
