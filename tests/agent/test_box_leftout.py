"""What the box left out of the agent's view stays as it is (issue 34, red-team round on the
overlay): a real fifo, or a file over 100 MiB, that the agent writes below (``q/f``) or
beside. Before: on the copy fallback the patch replaced a real 200 MiB file it never showed the
agent with a directory, and the run succeeded; elsewhere ``git apply`` wrote part of the patch,
then failed on ``q/f``, and the summary said none of it was applied. Both storages, each test
failing on the code before."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from tests.support.box import Box
from tests.support.box import run as _run

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="the box runs as root on Linux",
)

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
AROUND = "rm -f q; mkdir q; echo under > q/f; echo y >> README.md"


def _left_out(box: Box, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(box.workspace / "q")
    else:
        with open(box.workspace / "q", "wb") as big:
            big.truncate(200 << 20)


@pytest.mark.parametrize("storage", ["auto", "copy"])
@pytest.mark.parametrize("kind", ["fifo", "large"])
def test_nothing_below_a_left_out_entry_comes_back_and_the_rest_is_whole(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, storage: str,
    kind: str,
) -> None:
    monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_STORAGE", storage)
    _left_out(box, kind)
    out = _run(box, capsys, AROUND, "--preset", "edit")
    if "none were" in out["summary"]:  # a failed apply changed nothing
        assert (box.workspace / "README.md").read_text() == "# demo\n", "partly applied"
    else:
        assert out["conclusion"] == "success", out["summary"][:1500]
        assert (box.workspace / "README.md").read_text() == "# demo\ny\n"
        assert "q/f" in out["summary"]  # named as not in the patch
    info = os.lstat(box.workspace / "q")
    assert stat.S_ISFIFO(info.st_mode) if kind == "fifo" else (
        stat.S_ISREG(info.st_mode) and info.st_size == 200 << 20)


@pytest.mark.parametrize("storage", ["auto", "copy"])
@pytest.mark.parametrize("body", ["echo small > q", "mkdir q; echo under > q/f"])
@pytest.mark.parametrize("tracked", [False, True])
def test_a_real_file_over_the_cap_is_never_replaced(  # noqa: PLR0917
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, storage: str,
    body: str, tracked: bool,
) -> None:
    monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_STORAGE", storage)
    _left_out(box, "large")
    if tracked:
        subprocess.run([*GIT, "add", "q"], cwd=box.workspace, check=True)
        subprocess.run([*GIT, "commit", "-qm", "q"], cwd=box.workspace, check=True)
    _run(box, capsys, body + "; echo y >> README.md", "--preset", "edit")
    info = os.lstat(box.workspace / "q")
    assert stat.S_ISREG(info.st_mode)
    assert info.st_size == 200 << 20
