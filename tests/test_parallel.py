"""The suite runs in parallel (pytest-xdist, ``-n auto`` in pyproject's addopts): each worker
has its own OS users, every one of them goes when the run ends, a worker that dies fails the
run, and a test marked ``alone`` has the run to itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.support.turns import turn
from tests.support.users import SUITE_USER, TEST_AGENT_USER, suite_users

ROOT = Path(__file__).resolve().parents[1]


def test_the_users_removed_at_the_end_are_this_suites_and_every_workers() -> None:
    ours = [SUITE_USER, f"{SUITE_USER}-gw0", f"{SUITE_USER}-gw12-runner",
            f"{SUITE_USER}-gw1-sudoer", f"{SUITE_USER}-runner"]
    others = ["cursor-agent", "root", f"{SUITE_USER}x", f"{SUITE_USER}-gwx", f"x{SUITE_USER}",
              f"{SUITE_USER}-gw0-other", "caa-another-suite-gw0"]
    assert suite_users(ours + others) == ours


def test_a_worker_that_dies_fails_the_run_loudly(tmp_path: Path) -> None:
    """A worker killed mid-test (the OOM killer, a segfault) is a failed run, named, not a
    quiet pass of the tests it had left."""
    test = tmp_path / "test_dies.py"
    test.write_text("import os, signal\n\n"
                    "def test_dies():\n    os.kill(os.getpid(), signal.SIGKILL)\n\n"
                    "def test_lives():\n    pass\n")
    # A suite name of its own: the inner session's controller removes every user of its suite
    # when it ends, and under the outer suite's name that was the outer workers' users, in the
    # middle of their tests (this test took 48 s doing it, and other tests failed at random).
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("PYTEST_XDIST")}
    env["CAA_TEST_AGENT_USER"] = f"{TEST_AGENT_USER[:20]}-dies"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                           "-n", "2", "--max-worker-restart", "1", str(test)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert re.search(r"worker 'gw[0-9]+' crashed while running '::test_dies'", out), out
    assert "FAILED ::test_dies" in out, out
    assert "1 passed" in out, out  # the other test still ran


def test_an_alone_test_waits_for_the_room_to_empty_and_keeps_newcomers_out(
        tmp_path: Path) -> None:
    """Held shared by one test, the room makes an ``alone`` test wait; a test arriving while it
    waits waits behind it (it cannot be starved), and gets in once it is done."""
    order: list[str] = []
    sharer = threading.Event()
    release = threading.Event()

    def shared(name: str, hold: threading.Event | None) -> None:
        with turn(tmp_path, alone=False):
            order.append(f"{name} in")
            sharer.set()
            if hold is not None:
                hold.wait(10)
            order.append(f"{name} out")

    def alone() -> None:
        with turn(tmp_path, alone=True):
            order.append("alone in")
            time.sleep(0.2)
            order.append("alone out")

    first = threading.Thread(target=shared, args=("first", release))
    first.start()
    assert sharer.wait(10)
    lone = threading.Thread(target=alone)
    lone.start()
    time.sleep(0.3)  # the alone test is at the gate, waiting for the room
    late = threading.Thread(target=shared, args=("late", None))
    late.start()
    time.sleep(0.3)
    assert order == ["first in"]  # neither got in while the first holds the room
    release.set()
    for thread in (first, lone, late):
        thread.join(10)
    assert order == ["first in", "first out", "alone in", "alone out", "late in", "late out"]

