"""Resource limits of the box: memory and processes for the whole box where a cgroup can be made
(v2, else v1), else a per-process memory limit.

The cgroup is made by root before the agent starts, the box's PID 1 is moved into it before it
starts the agent (so everything the agent starts is inside), and it is removed after the run.
Over its memory limit the kernel's OOM killer ends a process of the box, never the helper.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
MAX_PROCESSES = 4096
"""Processes and threads of the box (cgroup ``pids``; else RLIMIT_NPROC of the agent user)."""
_REMOVE_WAIT_S = 2.0


def default_memory_bytes() -> int:
    """85% of the machine's memory: the helper and the runner keep the rest."""
    with contextlib.suppress(OSError, ValueError), open("/proc/meminfo", encoding="ascii") as file:
        for line in file:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024 * 85 // 100
    return 4 << 30


@dataclass
class Limits:
    """The box's cgroup directories (empty: none could be made) and how memory is bounded."""

    memory_bytes: int
    directories: list[Path] = field(default_factory=list)
    kind: str = "none"

    @property
    def label(self) -> str:
        gib = self.memory_bytes / (1 << 30)
        if self.kind == "rlimit":
            return f"memory {gib:.1f} GiB per process (no cgroup could be made)"
        return f"memory {gib:.1f} GiB, {MAX_PROCESSES} processes (cgroup {self.kind})"

    def enter(self, pid: int) -> None:
        """Move ``pid`` (the box's PID 1, before it starts the agent) into the cgroup."""
        for directory in self.directories:
            (directory / "cgroup.procs").write_text(str(pid), encoding="ascii")

    def per_process(self) -> None:
        """In the agent's process before exec: the fallback when there is no cgroup."""
        if self.kind == "rlimit":
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))

    def remove(self) -> None:
        """Remove the cgroup: what is still in it (only the box's processes ever are) is
        killed, then the directories go once the kernel has let those processes go (bounded
        wait)."""
        deadline = time.monotonic() + _REMOVE_WAIT_S
        for directory in reversed(self.directories):
            while True:
                _kill_members(directory)
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def _kill_members(directory: Path) -> None:
    try:
        members = (directory / "cgroup.procs").read_text(encoding="ascii").split()
    except OSError:
        return
    for pid in members:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def _write(path: Path, value: str) -> None:
    path.write_text(value, encoding="ascii")


def create(name: str, memory_bytes: int) -> Limits:
    """A cgroup ``name`` with the limits, v2 or v1; a per-process limit when neither works."""
    limits = Limits(memory_bytes)
    try:
        if (CGROUP_ROOT / "cgroup.controllers").exists():  # v2: one unified hierarchy
            directory = CGROUP_ROOT / name
            directory.mkdir(mode=0o755)
            limits.directories.append(directory)
            _write(directory / "memory.max", str(memory_bytes))
            with contextlib.suppress(OSError):  # without swap accounting there is none
                _write(directory / "memory.swap.max", "0")
            _write(directory / "pids.max", str(MAX_PROCESSES))
            limits.kind = "v2"
        else:
            memory = CGROUP_ROOT / "memory" / name
            memory.mkdir(mode=0o755)
            limits.directories.append(memory)
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            pids = CGROUP_ROOT / "pids" / name
            pids.mkdir(mode=0o755)
            limits.directories.append(pids)
            _write(pids / "pids.max", str(MAX_PROCESSES))
            limits.kind = "v1"
    except OSError:
        limits.remove()
        limits.directories.clear()
        limits.kind = "rlimit"
    return limits
