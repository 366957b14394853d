"""Helpers to run the stand-in CLI (``cursor_agent_action.agent.standin``) from tests."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from cursor_agent_action.agent.standin import write_wrapper


def make_standin(tmp_path: Path, scenario: dict[str, Any], name: str = "cursor-agent") -> Path:
    """Write ``scenario`` and an executable ``cursor-agent`` wrapper in ``tmp_path/standin/``.

    Relative paths in the scenario (record, counter, transcript) resolve in that directory.
    """
    directory = tmp_path / "standin"
    directory.mkdir(exist_ok=True)
    scenario_file = directory / f"{name}.scenario.json"
    scenario_file.write_text(json.dumps(scenario), encoding="utf-8")
    return write_wrapper(directory / name, scenario_file)


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
