"""The contained agent's test world: a repository, a runner-like environment, and an agent
script that tries one thing, writes what it saw into the one directory it shares with the test
(``SEEN``), then ends like the CLI (init, result). The fixture ``box`` (tests/agent/conftest.py)
makes it; the containment and attack tests use it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.box.limits import CGROUP_ROOT
from cursor_agent_action.cli import main
from cursor_agent_action.output_file import parse_output_file
from tests.support.standin import processes_of
from tests.support.users import TEST_AGENT_USER, ensure_user

CAPSH = shutil.which("capsh") or shutil.which("capsh", path="/usr/sbin:/sbin") or ""
SESSION = "00000000-0000-4000-8000-00000000c0de"
TOKEN = "ghs_containment_secret_token_0123456789"
EVENTS = "\n".join(json.dumps(event) for event in (
    {"type": "system", "subtype": "init", "session_id": SESSION, "model": "Auto", "cwd": "."},
    {"type": "result", "subtype": "success", "is_error": False, "result": "Done.",
     "session_id": SESSION, "duration_ms": 5},
))  # fmt: skip


@dataclass
class Box:
    base: Path  # world-traversable, like a runner's work directory
    workspace: Path
    seen: Path  # the agent writes what it saw here (any user may write it)
    runner_temp: Path
    home: Path  # the runner user's home


def make_box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    """The world of one test (a generator: the check after it, that no agent process
    outlived its run, runs when the fixture ends)."""
    base = tmp_path / "work"
    base.mkdir()
    workspace = base / "repo"
    workspace.mkdir()
    (workspace / "README.md").write_text("# demo\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True)
    subprocess.run([*git, "add", "."], cwd=workspace, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=workspace, check=True)
    seen = base / "seen"
    seen.mkdir()
    seen.chmod(0o1777)
    home = tmp_path / "runner-home"
    home.mkdir()
    for name, value in {
        "HOME": str(home), "RUNNER_TEMP": str(tmp_path / "runner-temp"), "GITHUB_TOKEN": TOKEN,
        "CURSOR_API_KEY": "key_containment_0123456789", "LC_ALL": "C.UTF-8",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    # The one directory the contained agent shares with the test: what it saw goes there.
    monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_SHARE", str(seen))
    # CAA_TEST_BOX_STORAGE=copy runs every box test on the copy fallback instead of the overlay.
    if storage := os.environ.get("CAA_TEST_BOX_STORAGE", ""):
        monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_STORAGE", storage)
    yield Box(base, workspace, seen, tmp_path / "runner-temp", home)
    assert processes_of(TEST_AGENT_USER) == [], "an agent process outlived its run"


def passable_box(monkeypatch: pytest.MonkeyPatch, name: str) -> Iterator[Box]:
    """:func:`make_box` in a directory others may pass through, as a runner's work directory
    (pytest's own base directory is 0700, and other sessions make it so again at any time)."""
    where = Path(tempfile.mkdtemp(prefix=f"{TEST_AGENT_USER}-{name}-"))
    where.chmod(0o711)
    try:
        yield from make_box(where, monkeypatch)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def agent(box: Box, body: str) -> Path:
    agent = box.base / "agent.sh"
    agent.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = --help ] && { echo "  --trust"; exit 0; }; done\n'
        f"SEEN={box.seen}\n{body}\n"
        f"cat <<'EOF'\n{EVENTS}\nEOF\n"
    )
    agent.chmod(0o755)
    return agent


def run(box: Box, capsys: pytest.CaptureFixture[str], body: str, *args: str) -> dict[str, str]:
    """One run of the helper; its outputs, plus ``exit``, ``log`` and ``summary``."""
    output, summary = box.base / "outputs.txt", box.base / "summary.md"
    output.unlink(missing_ok=True)
    summary.unlink(missing_ok=True)
    code = main(["run", "--agent-bin", str(agent(box, body)), "--working-directory",
                 str(box.workspace), "--output-file", str(output), "--summary-file",
                 str(summary), "--prompt", "Look around.", "--timeout-minutes", "1", *args])
    outputs = parse_output_file(output.read_text())
    outputs["exit"] = str(code)
    outputs["log"] = capsys.readouterr().out
    outputs["summary"] = summary.read_text() if summary.exists() else ""
    return outputs


def seen(box: Box, name: str) -> str:
    path = box.seen / name
    return path.read_text() if path.exists() else ""


def _cgroup_paths(name: str) -> list[Path]:
    """Where a box cgroup called ``name`` would be, v2 or v1."""
    return [CGROUP_ROOT / name, CGROUP_ROOT / "memory" / name, CGROUP_ROOT / "pids" / name]


def left_cgroups(box: Box) -> list[Path]:
    """The box cgroup the agent ran in (it wrote /proc/self/cgroup into SEEN), where it is still
    there. None was made when the box fell back to a per-process memory limit (the summary
    says so): then none can be left."""
    names = {part for line in (box.seen / "cgroup").read_text().splitlines()
             for part in line.split("/") if part.startswith("caa-box-")}
    assert len(names) <= 1, names
    return [path for name in names for path in _cgroup_paths(name) if path.exists()]


def in_container(box: Box, *args: str, body: str = "echo ran > $SEEN/ran; id -u > $SEEN/uid",
                 env: dict[str, str] | None = None, closed: bool = False, prompt: str = "x",
                 ) -> subprocess.CompletedProcess[str]:
    """The helper as root without CAP_SYS_ADMIN (``capsh --drop``), as in a container job:
    the Landlock tier, the agent as its own user."""
    if closed:  # the CLI in a directory others cannot enter
        box.base.chmod(box.base.stat().st_mode & ~0o001)
    script = agent(box, body)
    helper = [sys.executable, "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
              str(script), "--working-directory", str(box.workspace), "--prompt", prompt,
              "--output-file", str(box.base / "outputs.txt"), "--summary-file",
              str(box.base / "summary.md"), "--timeout-minutes", "1", *args]  # fmt: skip
    return subprocess.run(
        [CAPSH, "--drop=cap_sys_admin", "--", "-c", shlex.join(helper)],
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin",
             **(env or {})},
        capture_output=True, text=True, timeout=120, check=False,
    )


def as_runner(
    venv: Path, box: Box, user_name: str, *args: str,
    body: str = "echo ran > $SEEN/ran; id -u > $SEEN/uid", env: dict[str, str] | None = None,
    wrap: Sequence[str] = (), prefix: str = "fallback-",
) -> subprocess.CompletedProcess[str]:
    """The helper as ``user_name``, a runner user without sudo (from ``venv``, a venv of the
    system Python), the world made theirs; ``wrap`` runs before it (user namespaces off); its
    outputs and summary in ``{prefix}outputs.txt`` and ``{prefix}summary.md``."""
    user = ensure_user(user_name)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(box.base),
                    str(box.home)], check=True)  # fmt: skip
    script = agent(box, body)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(box.home),
           "RUNNER_TEMP": str(box.base / "runner-temp"), "CURSOR_API_KEY": "k_fallback_1234",
           "CURSOR_AGENT_ACTION_AGENT_USER": TEST_AGENT_USER,
           "CURSOR_AGENT_ACTION_BOX_SHARE": str(box.seen), **(env or {})}
    return subprocess.run(
        [*wrap, "setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
         str(venv / "bin" / "python"), "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
         str(script), "--working-directory", str(box.workspace), "--prompt", "x", "--output-file",
         str(box.base / f"{prefix}outputs.txt"), "--summary-file",
         str(box.base / f"{prefix}summary.md"), *args],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
