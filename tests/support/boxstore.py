"""The root side's storage on its own (:mod:`cursor_agent_action.agent.contain.box.storage`):
prepare the box's tree for a repository, run shell commands in it as the agent's user, and
finish (the patch), all in a mount namespace of the test's own (``unshare -m``), with caps of the
test's choosing. Used by the overlay's tests (tests/agent/test_box_overlay.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.users import TEST_AGENT_USER, ensure_user

_SCRIPT = r"""
import json, os, subprocess, sys, time
from dataclasses import replace
from cursor_agent_action.agent.contain.box import storage
from cursor_agent_action.agent.contain.box.contract import BoxLimits, BoxSpec
from cursor_agent_action.agent.contain.box.tree import CopyTooLarge
from cursor_agent_action.agent.contain.box.user import agent_user
ask = json.loads(sys.argv[1])
agent = agent_user(ask["user"])
spec = BoxSpec(user=ask["user"], argv=("/bin/true",), env={}, cwd=ask["repo"],
               repo_root=ask["repo"], home="/nonexistent-home", box_dir=ask["state"] + "/box",
               chats_store=ask["state"] + "/chats", status_file=ask["state"] + "/status",
               patch_file=ask["state"] + "/patch", network_events=ask["state"] + "/events",
               limits=BoxLimits(**ask["limits"]), storage=ask["storage"],
               owner=(os.getuid(), os.getgid()))
started = time.monotonic()
try:
    view, copy = storage.prepare(spec, agent)
except CopyTooLarge as exc:
    print(json.dumps({"refused": str(exc), "seconds": time.monotonic() - started}))
    sys.exit(0)
prepared = time.monotonic() - started
tree = ask["state"] + "/box/tree"
done = subprocess.run(["setpriv", f"--reuid={agent.uid}", f"--regid={agent.gid}",
                       "--clear-groups", "sh", "-c", ask["body"]], cwd=tree,
                      capture_output=True, text=True, timeout=120, check=False)
started = time.monotonic()
finished = storage.finish(spec, copy)
print(json.dumps({"storage": copy.storage, "note": copy.note, "prepared": prepared,
                  "finished": time.monotonic() - started, "out": done.stdout,
                  "err": done.stderr, "status": finished.to_json()}))
"""


@dataclass
class Ran:
    storage: str
    note: str
    out: str
    err: str
    status: dict[str, object]
    patch: str
    refused: str = ""
    seconds: float = 0.0


def limits(**changes: int) -> dict[str, int]:
    caps = {"memory_bytes": 1 << 30, "tmp_bytes": 1 << 20, "max_file_bytes": 1 << 20,
            "max_total_bytes": 64 << 20, "write_bytes": 64 << 20, "max_files": 10_000}
    return {**caps, **changes}


def run_in_store(repo: Path, state: Path, body: str, *, storage: str = "auto",
                 caps: dict[str, int] | None = None) -> Ran:
    """Prepare the box's tree of ``repo``, run ``body`` in it as the agent, finish."""
    ensure_user(TEST_AGENT_USER)
    state.mkdir(parents=True, exist_ok=True)
    ask = {"user": TEST_AGENT_USER, "repo": str(repo), "state": str(state), "body": body,
           "storage": storage, "limits": caps or limits()}
    done = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable, "-I",
                           "-c", _SCRIPT, json.dumps(ask)],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise AssertionError(done.stderr[-3000:])
    data = json.loads(done.stdout.strip().splitlines()[-1])
    if "refused" in data:
        return Ran("", "", "", "", {}, "", data["refused"], data["seconds"])
    status = data["status"]
    patch = Path(str(status.get("patch") or ""))
    return Ran(data["storage"], data["note"], data["out"], data["err"], status,
               patch.read_text(errors="replace") if status.get("patch") else "")
