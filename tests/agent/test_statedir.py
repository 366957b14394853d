"""The per-run state directory: per user outside a runner, a clear error naming the real cause,
old run-* folders pruned without following links or touching another user's folders."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from cursor_agent_action.agent.launch import statedir
from cursor_agent_action.errors import SetupError
from tests.support.standin import SYSTEM_PYTHON

OTHER_UID = 54_321  # no such user: a directory another user left


@pytest.fixture
def systemp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp directory, as the helper sees it outside a runner."""
    temp = tmp_path / "systemp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def test_outside_a_runner_each_user_has_a_directory_of_their_own(systemp: Path) -> None:
    state = statedir.new_state_dir({})
    root = systemp / f"cursor-agent-action-{os.getuid()}"
    assert state.parent == root
    assert state.name.startswith("run-")
    assert (os.stat(root).st_mode & 0o777) == 0o700


def test_on_a_runner_it_is_runner_temp(tmp_path: Path) -> None:
    state = statedir.new_state_dir({"RUNNER_TEMP": str(tmp_path)})
    assert state.parent == tmp_path / "cursor-agent-action"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to leave a directory of another uid")
def test_a_directory_left_by_another_user_is_named_as_the_cause(systemp: Path) -> None:
    root = systemp / f"cursor-agent-action-{os.getuid()}"
    root.mkdir(mode=0o700)
    os.chown(root, OTHER_UID, OTHER_UID)
    with pytest.raises(SetupError) as caught:
        statedir.new_state_dir({})
    assert f"belongs to uid {OTHER_UID}" in caught.value.message
    assert "writable" not in caught.value.message  # not the old, wrong guess
    assert f"rm -rf {root}" in caught.value.hint
    assert "TMPDIR" in caught.value.hint


def test_a_link_in_place_of_the_directory_is_refused(systemp: Path, tmp_path: Path) -> None:
    """A hostile user plants the path as a link to a directory of theirs: never used."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (systemp / f"cursor-agent-action-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(SetupError, match="is a symbolic link"):
        statedir.new_state_dir({})
    assert list(elsewhere.iterdir()) == []


def test_a_directory_open_to_others_is_made_private(systemp: Path) -> None:
    root = systemp / f"cursor-agent-action-{os.getuid()}"
    root.mkdir()
    root.chmod(0o777)
    statedir.new_state_dir({})
    assert (os.stat(root).st_mode & 0o777) == 0o700


@pytest.mark.skipif(os.geteuid() != 0 or not SYSTEM_PYTHON,
                    reason="plays a second OS user (root makes the directory, nobody runs)")
def test_a_second_user_meets_a_root_owned_parent_and_is_told_whose_it_is(tmp_path: Path) -> None:
    """As the issue met it: an earlier root run left a directory; another user runs. The
    error names the owner and the user, not 'check that it is writable'."""
    tmp_path.chmod(0o755)
    for path in tmp_path.parents:
        if path != Path("/"):
            path.chmod(path.stat().st_mode | 0o001)
    locked = tmp_path / "runner-temp"
    locked.mkdir(mode=0o755)  # root's, as a root run leaves it
    source = Path(statedir.__file__).resolve().parents[3]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from cursor_agent_action.agent.launch import statedir; "
            "from cursor_agent_action.errors import SetupError\n"
            "try:\n    statedir.new_state_dir({'RUNNER_TEMP': sys.argv[2]})\n"
            "except SetupError as exc:\n    print(exc.message); print(exc.hint)")
    done = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           SYSTEM_PYTHON, "-I", "-c", code, str(source), str(locked)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    message, hint = done.stdout.splitlines()[:2]
    assert message.startswith(f"cannot create a state directory under {locked}/cursor-agent-")
    assert f"({locked} belongs to root (uid 0), you are nobody (uid 65534))" in message
    assert f"Make {locked} writable for you" in hint


def _aged(path: Path, days: float) -> Path:
    path.mkdir()
    (path / "transcript.jsonl").write_text("{}\n")
    stamp = time.time() - days * 86400
    os.utime(path, (stamp, stamp))
    return path


def test_old_run_folders_are_pruned_the_rest_kept(tmp_path: Path) -> None:
    old = _aged(tmp_path / "run-old", 8)
    recent = _aged(tmp_path / "run-recent", 1)
    shared = _aged(tmp_path / "agent-chats", 30)  # not a run folder: kept
    assert statedir.prune(tmp_path) == 1
    assert not old.exists()
    assert recent.exists()
    assert shared.exists()


def test_pruning_keeps_the_newest_and_removes_a_bounded_number(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    monkeypatch.setattr(statedir, "PRUNE_REMOVE", 3)
    folders = [_aged(tmp_path / f"run-{index:03}", 2 + index / 100) for index in range(55)]
    assert statedir.prune(tmp_path) == 3  # 5 are beyond the newest 50 and a day old: 3 go
    assert all(path.exists() for path in folders[:50])
    assert sum(path.exists() for path in folders[50:]) == 2


def test_pruning_never_follows_a_link(tmp_path: Path) -> None:
    """A run-* name that is a link, and a link inside an old folder, lead to files that stay."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    root = tmp_path / "state"
    root.mkdir()
    (root / "run-link").symlink_to(precious)
    old = _aged(root / "run-old", 9)
    (old / "inside").symlink_to(precious)
    os.utime(old, (time.time() - 9 * 86400,) * 2)
    os.utime(root / "run-link", (time.time() - 9 * 86400,) * 2, follow_symlinks=False)
    statedir.prune(root)
    assert (precious / "keep.txt").read_text() == "mine"
    assert (root / "run-link").is_symlink()
    assert not old.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder of another uid")
def test_pruning_leaves_another_users_folders(tmp_path: Path) -> None:
    theirs = _aged(tmp_path / "run-theirs", 9)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    assert statedir.prune(tmp_path) == 0
    assert theirs.exists()


def test_a_run_outside_a_runner_prunes_on_start(systemp: Path) -> None:
    root = systemp / f"cursor-agent-action-{os.getuid()}"
    root.mkdir(mode=0o700)
    old = _aged(root / "run-old", 8)
    statedir.new_state_dir({})
    assert not old.exists()


def test_a_run_on_a_runner_prunes_nothing(tmp_path: Path) -> None:
    """RUNNER_TEMP is one job's: the runner empties it, and publish looks for run-* in it."""
    root = tmp_path / "cursor-agent-action"
    root.mkdir(mode=0o700)
    old = _aged(root / "run-old", 8)
    statedir.new_state_dir({"RUNNER_TEMP": str(tmp_path)})
    assert old.exists()
