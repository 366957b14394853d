"""The private copy (Landlock tiers, the box's copy fallback) is made by root from a tree that
something else may still be changing: a process an earlier step of the job left running (the
pull request's own build, say) can swap an entry between the moment the copy lists it and the
moment it reads it. Root never follows a link so swapped in, never waits on a fifo, and leaves
out what is no longer what was listed, copying the rest."""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action import changeset
from cursor_agent_action.agent.contain.box import filecopy, tree

_REAL_OPEN = os.open
_REAL_SCANDIR = os.scandir


def _copy(source: Path, target: Path) -> tree.Copy:
    target.mkdir()
    return tree.copy_tree(str(source), str(target), os.getuid(), os.getgid(),
                          max_file_bytes=1 << 20, max_total_bytes=1 << 30)


def _in_thread(run: Callable[[], tree.Copy], seconds: float) -> tree.Copy | BaseException | None:
    """``run``'s copy or error; ``None`` when it is still running after ``seconds``."""
    found: list[tree.Copy | BaseException] = []

    def target() -> None:
        try:
            found.append(run())
        except BaseException as exc:  # handed to the test
            found.append(exc)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    return found[0] if found else None


@pytest.fixture
def real(tmp_path: Path) -> Path:
    root = tmp_path / "real"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "kept.txt").write_text("kept\n")
    (root / "a.txt").write_text("a\n")
    (root / "swapped.txt").write_text("to be swapped\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "secret.txt").write_text("the runner's secret\n")
    return secret


def test_a_directory_swapped_for_a_link_before_it_is_read_is_not_followed(
        real: Path, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[object] = []

    def scandir(path: Any = ".") -> Iterator[os.DirEntry[Any]]:
        listed.append(path)
        if len(listed) == 2 and (real / "sub").is_dir():  # after the top was listed
            (real / "sub").rename(real / "sub-moved")
            (real / "sub").symlink_to(outside)
        return _REAL_SCANDIR(path)

    monkeypatch.setattr(os, "scandir", scandir)
    made = _copy(real, tmp_path / "copy")
    copied = {str(path.relative_to(tmp_path / "copy")) for path in (tmp_path / "copy").rglob("*")}
    assert "sub/secret.txt" not in copied
    assert not any("secret" in path for path in made.stats)
    assert (tmp_path / "copy" / "a.txt").read_text() == "a\n"


def _swap_on_open(name: str, swap: Callable[[Path], None], where: Path
                  ) -> Callable[..., int]:
    """``os.open`` that swaps ``where/name`` (with ``swap``) as it is opened for reading."""
    def opener(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.fsdecode(path).rsplit("/", 1)[-1] == name and not flags & os.O_WRONLY \
                and (where / name).is_file() and not (where / name).is_symlink():
            swap(where / name)
        return _REAL_OPEN(path, flags, mode, dir_fd=dir_fd)
    return opener


def test_a_file_swapped_for_a_fifo_as_it_is_opened_is_left_out_without_waiting(
        real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def to_fifo(path: Path) -> None:
        path.unlink()
        os.mkfifo(path)

    monkeypatch.setattr(os, "open", _swap_on_open("swapped.txt", to_fifo, real))
    try:
        made = _in_thread(lambda: _copy(real, tmp_path / "copy"), 10.0)
    finally:
        if (real / "swapped.txt").exists():  # a copy blocked on the fifo: let it go
            with contextlib.suppress(OSError):  # ENXIO: no reader (the copy never opened it)
                os.close(_REAL_OPEN(real / "swapped.txt", os.O_WRONLY | os.O_NONBLOCK))
    assert made is not None, "the copy waited on a fifo swapped in for a file"
    assert isinstance(made, tree.Copy), made
    assert "swapped.txt" in made.left_out
    assert "swapped.txt" not in made.stats
    assert (tmp_path / "copy" / "sub" / "kept.txt").read_text() == "kept\n"


def test_a_file_swapped_for_a_link_as_it_is_opened_is_left_out_and_the_rest_copied(
        real: Path, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def to_link(path: Path) -> None:
        path.unlink()
        path.symlink_to(outside / "secret.txt")

    monkeypatch.setattr(os, "open", _swap_on_open("swapped.txt", to_link, real))
    made = _in_thread(lambda: _copy(real, tmp_path / "copy"), 10.0)
    assert isinstance(made, tree.Copy), made
    assert "swapped.txt" in made.left_out
    copy = tmp_path / "copy"
    assert not (copy / "swapped.txt").exists() or (copy / "swapped.txt").is_symlink()
    assert (copy / "a.txt").read_text() == "a\n"
    assert (copy / "sub" / "kept.txt").read_text() == "kept\n"


def test_one_file_copies_whole_when_the_kernel_refuses_copy_file_range(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "dst").mkdir()
    body = os.urandom(300_000)
    (tmp_path / "src" / "f").write_bytes(body)
    calls = []

    def refused(*args: Any) -> int:
        calls.append(args)
        raise OSError(errno.EXDEV, "cross-device")

    monkeypatch.setattr(os, "copy_file_range", refused)
    data = filecopy.Data()
    data.clone = False
    source = os.open(tmp_path / "src", os.O_DIRECTORY)
    target = os.open(tmp_path / "dst", os.O_DIRECTORY)
    try:
        key, size = filecopy.copy_file(source, target, "f", data=data,
                                       owner=filecopy.Owner(os.getuid(), os.getgid()),
                                       max_bytes=1 << 20)
        with pytest.raises(filecopy.Gone):  # over the cap: left out, nothing made
            filecopy.copy_file(source, target, "f", data=data, owner=None, max_bytes=1000)
    finally:
        os.close(source)
        os.close(target)
    assert (tmp_path / "dst" / "f").read_bytes() == body
    assert size == len(body)
    assert key == changeset.stat_key(os.lstat(tmp_path / "dst" / "f"))
    assert len(calls) == 1  # learnt once: sendfile after
    assert data.copy_range is False


def test_a_tree_that_is_no_directory_fails_the_copy_instead_of_copying_nothing(
        tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a tree\n")
    with pytest.raises(OSError, match="cannot be opened as a directory"):
        _copy(tmp_path / "file", tmp_path / "copy")


def test_a_tree_named_through_a_link_is_copied_as_before(tmp_path: Path, real: Path) -> None:
    (tmp_path / "link").symlink_to(real)
    made = _copy(tmp_path / "link", tmp_path / "copy")
    assert made.files == 3
    assert (tmp_path / "copy" / "sub" / "kept.txt").read_text() == "kept\n"
