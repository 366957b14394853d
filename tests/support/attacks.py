"""What the attack tests on the tiers without a box share: a run as a runner user of its own
(made for it, user namespaces off: tier 1b), its outputs, waiting for what a process left
behind writes, and the user's removal with every process it has."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from cursor_agent_action.agent.contain import reap
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import Box, as_runner
from tests.support.users import NO_USER_NAMESPACES, TEST_AGENT_USER, ensure_user, remove_user


def outputs_of(box: Box, name: str = "fallback-outputs.txt") -> dict[str, str]:
    path = box.base / name
    return parse_output_file(path.read_text()) if path.exists() else {}


def wait_for(path: Path, limit_s: float) -> bool:
    """Whether ``path`` appears within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.2)
    return path.exists()


def script(box: Box, name: str, text: str) -> Path:
    """``text`` as an executable file of the test's world."""
    path = box.base / name
    path.write_text(text)
    path.chmod(0o755)
    return path


def user_name(suffix: str) -> str:
    return f"{TEST_AGENT_USER}-{suffix}"[:32]


def runner_run(box: Box, unprivileged: Path, suffix: str, body: str,
               prepare: Callable[[], None] | None = None, *args: str,
               ) -> tuple[subprocess.CompletedProcess[str], int]:
    """One run as a runner user of its own (made for it), user namespaces off: tier 1b; the
    world made that user's, then ``prepare``; the run and the user's uid."""
    user = ensure_user(user_name(suffix))
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(box.base)], check=True)
    if prepare is not None:
        prepare()
    done = as_runner(unprivileged, box, user_name(suffix), "--summary-file",
                     str(box.base / "summary.md"), *args, body=body,
                     wrap=[sys.executable, "-I", "-c", NO_USER_NAMESPACES])
    return done, user.pw_uid


def cleanup_user(suffix: str, uid: int) -> None:
    """Every process of the user ended (kill(-1) as that uid: no fork outruns it), the user
    removed."""
    if uid >= 0:
        reap.kill_all(uid, limit_s=30)
    remove_user(user_name(suffix))
