"""Can the box be made here? A throwaway process tries what the box needs, before we choose.

    python -I -m cursor_agent_action.agent.contain.probe      (as root, directly or via sudo -n)

It creates the box's namespaces (mount, IPC, network, then PID with a child as its PID 1),
makes its mounts private, mounts a tmpfs and, inside the PID namespace, a ``/proc``: the same
kernel operations the box's root side makes, with nothing of the runner's touched (every mount
is in the throwaway's own namespace, gone when it exits). It prints one JSON line:
``{"ok": true}``, or ``{"ok": false, "step": ..., "errno": N, "error": ...}``.

With ``--user-namespace`` (the runner's user, no root, no sudo) it first makes an unprivileged
user namespace (:mod:`.userns`), then the same steps inside it.

Root inside a container without ``CAP_SYS_ADMIN`` (the default of ``container:`` jobs and of
most Kubernetes pods) fails the first step: that is the case the helper must name, with a fix
that works there.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from cursor_agent_action.agent.contain import userns
from cursor_agent_action.agent.contain.box.libc import libc
from cursor_agent_action.agent.contain.userns import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
)

CAP_SYS_ADMIN = 21


class ProbeFailed(Exception):
    def __init__(self, step: str, errno: int) -> None:
        super().__init__(f"{step} failed: {os.strerror(errno)}")
        self.step = step
        self.errno = errno


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found (``ok``), else the step that failed and why."""

    ok: bool
    step: str = ""
    errno: int = 0
    error: str = ""

    @classmethod
    def from_json(cls, text: str) -> ProbeResult:
        try:
            data = json.loads(text.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return cls(False, "the probe", 0, f"it printed no answer ({text.strip()[:200]!r})")
        if not isinstance(data, dict):
            return cls(False, "the probe", 0, "it printed no answer")
        return cls(bool(data.get("ok")), str(data.get("step", "")), int(data.get("errno", 0)),
                   str(data.get("error", "")))


def _call(result: int, step: str) -> None:
    if result != 0:
        raise ProbeFailed(step, ctypes.get_errno())


def _mount(source: str, target: str, fstype: str | None, flags: int, step: str) -> None:
    _call(libc().mount(source.encode(), os.fsencode(target),
                        None if fstype is None else fstype.encode(), flags, None), step)


def has_cap_sys_admin() -> bool:
    """Whether this process's effective capabilities hold CAP_SYS_ADMIN."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_ADMIN & 1)
    except (OSError, ValueError):
        pass
    return False


def probe() -> ProbeResult:
    """Try the box's operations in this (throwaway) process; what happened."""
    lib = libc()
    try:
        _call(lib.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare (mount namespace)")
        _mount("none", "/", None, MS_REC | MS_PRIVATE, "making the mounts private")
        _call(lib.unshare(CLONE_NEWNET), "unshare (network namespace)")
        scratch = tempfile.mkdtemp(prefix="caa-probe-")
        try:
            _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mounting a tmpfs")
            _call(lib.unshare(CLONE_NEWPID), "unshare (PID namespace)")
            read_end, write_end = os.pipe()
            child = os.fork()
            if child == 0:  # PID 1 of the new namespace: a /proc of its own
                code = 0
                try:
                    _mount("proc", scratch, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                           "mounting /proc in a PID namespace")
                except ProbeFailed as exc:
                    os.write(write_end, json.dumps([exc.step, exc.errno]).encode())
                    code = 1
                os._exit(code)
            os.close(write_end)
            answer = os.read(read_end, 4096)
            os.close(read_end)
            _, status = os.waitpid(child, 0)
            if answer:
                step, errno = json.loads(answer)
                raise ProbeFailed(str(step), int(errno))
            if status != 0:
                raise ProbeFailed("starting a process in a PID namespace", 0)
        finally:
            for _ in range(2):  # /proc over the tmpfs, then the tmpfs (MNT_DETACH)
                lib.umount2(os.fsencode(scratch), 2)
            os.rmdir(scratch)
    except ProbeFailed as exc:
        return ProbeResult(False, exc.step, exc.errno, str(exc))
    except OSError as exc:
        return ProbeResult(False, "preparing the probe", exc.errno or 0, str(exc))
    return ProbeResult(True)


def probe_user_namespace() -> ProbeResult:
    """As the runner's user: a user namespace first (:mod:`.userns`), then the same steps."""
    try:
        userns.enter()
    except userns.UserNamespaceError as exc:
        return ProbeResult(False, "unshare (user namespace)", exc.errno or 0, str(exc))
    return probe()



SUDO_PROBE_TIMEOUT_S = 10.0


def probe_box(*, via_sudo: bool, user_namespace: bool = False) -> ProbeResult:
    """Whether the box can be made here: a throwaway root process tries its namespaces and
    mounts (this module, run as a program); with ``user_namespace``, the runner's user inside
    a user namespace of its own."""
    argv = [sys.executable, "-I", "-m", "cursor_agent_action.agent.contain.probe",
            *(["--user-namespace"] if user_namespace else [])]
    try:
        done = subprocess.run(["sudo", "-n", "--", *argv] if via_sudo else argv,
                              capture_output=True, check=False, timeout=SUDO_PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, text=True, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ProbeResult(False, "the probe", 0, str(exc))
    return ProbeResult.from_json(done.stdout or done.stderr)


CONTAINER_FIX = (
    "run this job on the runner itself (no container:) on a GitHub-hosted Linux runner; or "
    "give the container what the box needs: container: options: --cap-add SYS_ADMIN "
    "--security-opt seccomp=unconfined --security-opt apparmor=unconfined (on Kubernetes: "
    "securityContext.capabilities.add [SYS_ADMIN] with unconfined seccomp and AppArmor "
    "profiles, or a privileged pod)"
)
PROFILE_FIX = (
    "the process has CAP_SYS_ADMIN, so a seccomp or AppArmor profile (or a user-namespace "
    "restriction) refuses it: run the container with --security-opt seccomp=unconfined "
    "--security-opt apparmor=unconfined, or run this job on a GitHub-hosted Linux runner "
    "without container:"
)


def box_failure(result: ProbeResult) -> tuple[str, str]:
    """Why the box cannot be made (from the probe), and a fix that works where it failed."""
    why = f"the box cannot be made here: {result.error or result.step}"
    if result.errno in (errno.EPERM, errno.EACCES) and not has_cap_sys_admin():
        return (f"{why} (the helper is root without CAP_SYS_ADMIN: a container job or a "
                "Kubernetes pod without that capability)", CONTAINER_FIX)
    if result.errno in (errno.EPERM, errno.EACCES):
        return why, PROFILE_FIX
    return why, ("run this job on a GitHub-hosted Linux runner, or on a machine whose kernel "
                 "allows mount, PID and network namespaces")


def main() -> int:
    result = probe_user_namespace() if "--user-namespace" in sys.argv[1:] else probe()
    sys.stdout.write(json.dumps({"ok": result.ok, "step": result.step, "errno": result.errno,
                                 "error": result.error}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
