"""Helpers to run the stand-in CLI (``cursor_agent_action.standin``) from tests."""

from __future__ import annotations

import json
import os
import pwd
import time
from pathlib import Path
from typing import Any

from cursor_agent_action.standin import copy_package, write_wrapper

# An interpreter every user can run: a contained agent (its own user) cannot reach a Python
# under /root, where this machine's default one lives. The stand-in needs only the stdlib.
SYSTEM_PYTHON = next(
    (path for path in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(path, os.X_OK)),
    "",
)


def make_standin(tmp_path: Path, scenario: dict[str, Any], name: str = "cursor-agent") -> Path:
    """Write ``scenario`` and an executable ``cursor-agent`` wrapper in ``tmp_path/standin/``.

    Relative paths in the scenario (record, counter, transcript) resolve in that directory,
    which any user may write (sticky, like /tmp): a contained agent records there too.
    """
    directory = tmp_path / "standin"
    directory.mkdir(exist_ok=True)
    directory.chmod(0o1777)
    transcript = scenario.get("transcript")
    if isinstance(transcript, str) and os.path.isabs(transcript):
        # A contained stand-in sees only this directory of the test's: the transcript it
        # replays goes there (relative paths resolve in it).
        copy = directory / f"{name}.{Path(transcript).name}"
        copy.write_bytes(Path(transcript).read_bytes())
        copy.chmod(0o644)
        scenario = {**scenario, "transcript": copy.name}
    scenario_file = directory / f"{name}.scenario.json"
    scenario_file.write_text(json.dumps(scenario), encoding="utf-8")
    scenario_file.chmod(0o644)
    if not SYSTEM_PYTHON:
        return write_wrapper(directory / name, scenario_file)
    package = copy_package(directory / "pkg")
    package.chmod(0o755)
    return write_wrapper(directory / name, scenario_file, python=SYSTEM_PYTHON,
                         package_root=package)


def records(tmp_path: Path, name: str = "record.jsonl") -> list[dict[str, Any]]:
    """Every invocation the stand-in recorded (scenario ``"record": name``), oldest first."""
    path = tmp_path / "standin" / name
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def runs(tmp_path: Path, name: str = "record.jsonl") -> list[dict[str, Any]]:
    """Recorded invocations except ``--help`` probes."""
    return [entry for entry in records(tmp_path, name) if "--help" not in entry["argv"]]


def live_group_members(pgid: int) -> list[int]:
    """Pids of processes in process group ``pgid`` that are still running (not zombies)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def wait_group_gone(pgid: int, timeout_s: float = 5.0) -> list[int]:
    """Wait (bounded) until no process of group ``pgid`` runs; returns the ones still running.

    SIGKILL is delivered asynchronously, so a process may take a moment to disappear.
    """
    deadline = time.monotonic() + timeout_s
    while (members := live_group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return members


def processes_of(user: str) -> list[int]:
    """Pids of live processes (not zombies) whose real uid is ``user``'s; [] if no such user."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            found.append(int(entry))
    return found
