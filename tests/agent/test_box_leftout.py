"""What the box left out of the agent's view stays as it is (issue 34, red-team round on the
overlay): a real fifo, or a file over 100 MiB, that the agent writes below (``q/f``) or
beside. Before: on the copy fallback the patch replaced a real 200 MiB file it never showed the
agent with a directory, and the run succeeded; elsewhere ``git apply`` wrote part of the patch,
then failed on ``q/f``, and the summary said none of it was applied. Both storages, each test
failing on the code before."""

from __future__ import annotations

import html
import json
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


# -- nothing left out in silence (issue 42): what the agent made that does not come back -------

_MAKE_DEEP = ("import os\nfd = os.open('.', os.O_RDONLY)\nfor _ in range({count}):\n"
              "    os.mkdir({name!r}, 0o755, dir_fd=fd)\n"
              "    below = os.open({name!r}, os.O_RDONLY, dir_fd=fd)\n"
              "    os.close(fd)\n    fd = below\n"
              "made = os.open('made.txt', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)\n"
              "os.write(made, b'x')\n")
MADE = {
    # 1,836 directories deep: each step made relative to the last (no path is ever that long).
    "deep": ("python3 -c \"$(cat <<'PY'\n" + _MAKE_DEEP.format(count=1836, name="d") + "PY\n)\"",
             "d/d/d/", "too deep: 1,537 levels"),
    # Past PATH_MAX: 30 directories of 200-byte names.
    "long": ("python3 -c \"$(cat <<'PY'\n" + _MAKE_DEEP.format(count=30, name="n" * 200)
             + "PY\n)\"", "n" * 200 + "/", "too long: 16 levels"),
    "large": ("truncate -s 200M big.bin", "big.bin", "too large: over the 100 MiB"),
    "special": ("mkfifo pipe", "pipe", "a special file (a fifo, socket or device)"),
    "link out": ("ln -s /etc/passwd out", "out", "a link out of the repository: -> /etc/passwd"),
}


@pytest.mark.parametrize("storage", ["auto", "copy"])
@pytest.mark.parametrize("kind", list(MADE))
def test_every_path_the_agent_made_that_does_not_come_back_is_named_with_its_reason(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, storage: str,
    kind: str,
) -> None:
    """A file 1,836 directories deep, one past PATH_MAX (30 directories of 200-byte names), a
    200 MiB file, a fifo, a link out: each is named, with its real reason, in the ``left-out``
    output, in the summary's table and in its headline (the run's conclusion says something was
    left out), and in a warning annotation; on the overlay and on the copy alike. Before: the
    run succeeded with at most a note calling a directory "1 file(s) with paths longer than
    3,072 bytes", nothing in the outputs, nothing in the conclusion."""
    monkeypatch.setenv("CURSOR_AGENT_ACTION_BOX_STORAGE", storage)
    body, path, reason = MADE[kind]
    out = _run(box, capsys, f"{body}; echo y >> README.md", "--preset", "edit")
    entries = json.loads(out["left-out"])
    assert [entry for entry in entries
            if entry["path"].startswith(path) and entry["reason"].startswith(reason)], entries
    assert len(entries) == 1, entries
    headline = out["summary"].splitlines()[0]
    assert headline.endswith("· 1 path left out of the patch"), headline
    assert "### Left out of the patch (1)" in out["summary"]
    assert reason in html.unescape(out["summary"]), out["summary"]
    assert "::warning title=left out of the patch::1 path(s) the agent made" in out["log"]
    if kind == "link out":  # refused: nothing of the run came back
        assert out["conclusion"] == "failure"
        assert (box.workspace / "README.md").read_text() == "# demo\n"
    else:  # the rest came back whole
        assert out["conclusion"] == "success", out["summary"][:2000]
        assert json.loads(out["files-changed"]) == ["README.md"]
        assert (box.workspace / "README.md").read_text() == "# demo\ny\n"


def test_nothing_left_out_says_so_in_the_output(
    box: Box, capsys: pytest.CaptureFixture[str],
) -> None:
    """A run that left nothing out: ``left-out`` is ``[]`` and the headline says nothing."""
    out = _run(box, capsys, "echo y >> README.md", "--preset", "edit")
    assert out["left-out"] == "[]"
    assert out["summary"].splitlines()[0] == "## ✅ Cursor agent: success"
