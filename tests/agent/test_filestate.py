"""FileState: capture a path before a run and put it back byte for byte after it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cursor_agent_action.agent.guards.filestate import FileState


def test_a_regular_file_comes_back_with_its_bytes_and_mode(tmp_path: Path) -> None:
    path = tmp_path / "env"
    path.write_bytes(b"A=1\r\n")
    path.chmod(0o640)
    before = FileState.of(path)
    path.write_bytes(b"BASH_ENV=/tmp/evil\n")
    path.chmod(0o777)
    assert FileState.of(path) != before
    before.put_back(path)
    assert path.read_bytes() == b"A=1\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert FileState.of(path) == before


def test_what_was_absent_is_removed_whatever_took_its_place(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    absent = FileState.of(path)
    assert absent == FileState(None)
    path.mkdir()
    (path / "inside").write_text("x")
    assert FileState.of(path) != absent  # a directory is "something else"
    absent.put_back(path)
    assert not path.exists()
    os.symlink(tmp_path / "elsewhere", path)
    assert FileState.of(path) != absent  # a dangling link is not "absent"
    absent.put_back(path)
    assert not path.is_symlink()


def test_a_link_in_place_of_the_file_is_replaced_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("outside the workspace")
    path = tmp_path / "cli.json"
    path.write_text("{}")
    before = FileState.of(path)
    path.unlink()
    os.symlink(target, path)
    before.put_back(path)
    assert not path.is_symlink()
    assert path.read_text() == "{}"
    assert target.read_text() == "outside the workspace"
