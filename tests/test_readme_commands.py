"""The README's commands work as printed: its pinning block, run with bash exactly as the
README shows it (``~`` a fresh home holding your repository and a clone "set up as above":
this checkout's examples and venv; nothing of the project on ``PATH``; no network), pins the
copied example to the clone's ``main``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from cursor_agent_action.actionrefs import ACTION

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _block_after(heading: str) -> str:
    """The first ```sh block of the README section ``heading``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n(.*?)```", section, re.S)
    assert match, f"no sh block under ## {heading}"
    return match.group(1)


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=60).stdout.strip()


def test_the_pinning_block_runs_as_printed_from_your_repository(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "src" / "your-project"
    project.mkdir(parents=True)
    _git("init", "-q", "-b", "main", cwd=project)
    # The clone "set up as above": its examples, and its .venv (this interpreter's venv).
    clone = home / "src" / "cursor-agent-action"
    clone.mkdir()
    _git("init", "-q", "-b", "main", cwd=clone)
    _git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q",
         "--allow-empty", "-m", "main", cwd=clone)
    sha = _git("rev-parse", "HEAD", cwd=clone)
    (clone / "examples").symlink_to(ROOT / "examples")
    (clone / ".venv").symlink_to(Path(sys.prefix))
    path = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                           if Path(p).resolve() != Path(sys.executable).parent.resolve())
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", _block_after("Pinning a version")],
        cwd=tmp_path, env={"HOME": str(home), "PATH": path, "LANG": "C.UTF-8"},
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    pinned = (project / ".github" / "workflows" / "docs-update.yml").read_text()
    assert "@COMMIT_SHA" not in pinned
    assert f"{ACTION}@{sha} # main" in pinned
