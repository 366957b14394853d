"""A read-only run without the box is shown the checkout itself, read-only, not a copy of it
(agent/contain/inplace.py): nothing is copied, the agent can neither write nor truncate, make,
remove, rename or link anything there, nor read ``.git``; what Landlock does not govern (a
file's mode, owner and times) is checked after the run, put back, and fails it; where the
tree cannot be shown in place (a fifo, an entry the agent's user could not read), it is copied,
and the summary says why.

The unit tests use a tree of their own; the runs play a container job (root without
CAP_SYS_ADMIN, ``capsh``) and a self-hosted runner's user without sudo or user namespaces."""

from __future__ import annotations

import os
import stat
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import inplace, landlock
from cursor_agent_action.agent.contain.box import tree
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import CAPSH, TOKEN, Box, as_runner, in_container, passable_box
from tests.support.box import seen as _seen
from tests.support.users import NO_USER_NAMESPACES, TEST_AGENT_USER, ensure_user, remove_user

ROOT_LANDLOCK = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi() < inplace.MIN_ABI or not CAPSH,
    reason="plays root runners (capsh) on a kernel whose Landlock governs truncate")


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    yield from passable_box(monkeypatch, "inplace")


def _tree(root: Path) -> Path:
    (root / "d").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "d" / "b.txt").write_text("b\n")
    (root / "link").symlink_to("a.txt")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".git" / "config").chmod(0o600)
    return root


def _take(root: Path, *, other_user: bool = False, abi: int = inplace.OWN_USER_MIN_ABI,
          skip: frozenset[str] = frozenset(), watched: bool = False,
          ) -> inplace.Snapshot | str:
    taken = inplace.take(str(root), max_entries=1000, skip=skip)
    if why := inplace.refusal(taken, abi=abi, other_user=other_user):
        return why
    if watched:
        taken.watch_start()
        assert taken.watch is not None
    return taken


WATCHED = pytest.mark.parametrize("watched", [True, False], ids=["watched", "walked"])


@WATCHED
def test_attributes_changed_are_named_and_put_back(tmp_path: Path, watched: bool) -> None:
    """A mode, a modification time, a directory's mode and a link's time changed (what the
    runner's own user may do under Landlock; any user may set a link's times to now): each is
    named and put back, whether the watch names it or the whole tree is walked again."""
    root = _tree(tmp_path / "t")
    snapshot = _take(root, watched=watched)
    assert isinstance(snapshot, inplace.Snapshot)
    before = {path: os.lstat(root / path)
              for path in ("a.txt", "d", "d/b.txt", ".git/config", "link")}
    (root / "a.txt").chmod(0o777)
    os.utime(root / "d" / "b.txt", (0, 0))
    (root / "d").chmod(0o700)
    (root / ".git" / "config").chmod(0o644)  # the token's file, made readable to all
    os.utime(root / "link", None, follow_symlinks=False)
    assert inplace.check(snapshot) == [".git/config", "a.txt", "d", "d/b.txt", "link"]
    for path, was in before.items():
        now = os.lstat(root / path)
        assert (now.st_mode, now.st_mtime_ns) == (was.st_mode, was.st_mtime_ns), path
    assert inplace.check(_take(root)) == []  # type: ignore[arg-type]


@WATCHED
def test_an_entry_replaced_made_or_removed_is_named_and_left_alone(
    tmp_path: Path, watched: bool,
) -> None:
    root = _tree(tmp_path / "t")
    snapshot = _take(root, watched=watched)
    assert isinstance(snapshot, inplace.Snapshot)
    (root / "new.txt").write_text("x")
    (root / "d" / "b.txt").unlink()
    replacement = root / "swap"
    replacement.write_text("other\n")
    replacement.chmod(0o600)
    replacement.rename(root / "a.txt")
    assert inplace.check(snapshot) == [".", "a.txt", "d", "d/b.txt", "new.txt"]
    assert stat.S_IMODE((root / "a.txt").stat().st_mode) == 0o600  # another file: untouched


@WATCHED
def test_the_runner_s_places_inside_the_tree_are_not_compared(
    tmp_path: Path, watched: bool,
) -> None:
    root = _tree(tmp_path / "t")
    snapshot = _take(root, skip=frozenset({"d"}), watched=watched)
    assert isinstance(snapshot, inplace.Snapshot)
    (root / "d" / "written-by-the-helper").write_text("x")
    assert inplace.check(snapshot) == []


def test_a_change_through_another_link_outside_the_tree_is_seen_by_the_watch(
    tmp_path: Path,
) -> None:
    """A file of the tree with another hard link outside it: a chmod through that link touches
    no watched directory; the file's own watch reports it."""
    root = _tree(tmp_path / "t")
    outside = tmp_path / "elsewhere"
    os.link(root / "d" / "b.txt", outside)
    snapshot = _take(root, watched=True)
    assert isinstance(snapshot, inplace.Snapshot)
    assert snapshot.linked == ("d/b.txt",)
    outside.chmod(0o666)
    assert inplace.check(snapshot) == ["d/b.txt"]
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644


def test_a_watch_that_cannot_say_means_a_whole_walk(tmp_path: Path) -> None:
    """The kernel's queue overflowed (or an event names no watch of ours): the whole tree is
    walked again, and the change is found."""
    root = _tree(tmp_path / "t")
    snapshot = _take(root, watched=True)
    assert isinstance(snapshot, inplace.Snapshot)
    assert snapshot.watch is not None
    overflow = struct.pack("iIII", -1, 0x4000, 0, 0)
    assert snapshot.watch.parse(overflow) is None
    assert snapshot.watch.parse(struct.pack("iIII", 999, 0x4, 0, 0)) is None
    (root / "a.txt").chmod(0o600)
    os.close(snapshot.watch.fd)
    snapshot.watch.changed = lambda: None  # type: ignore[method-assign]
    assert inplace.check(snapshot) == ["a.txt"]
    assert stat.S_IMODE((root / "a.txt").stat().st_mode) == 0o644


def test_what_keeps_a_tree_from_being_shown_in_place_is_said(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    old_kernel = _take(root, abi=2, other_user=True)
    assert isinstance(old_kernel, str)
    assert "does not govern truncating a file by its path (ABI 3, Linux 6.2)" in old_kernel
    unscoped = _take(root, abi=5)  # the runner's own user: it could kill the checker
    assert isinstance(unscoped, str)
    assert "from signalling the program that checks the checkout after it (ABI 6" in unscoped
    assert isinstance(_take(root, abi=5, other_user=True), inplace.Snapshot)
    assert isinstance(_take(root, other_user=True), inplace.Snapshot)  # .git's 0600: masked
    (root / "d" / "b.txt").chmod(0o600)
    closed = _take(root, other_user=True)
    assert closed == ("the agent's user could not read everything there (the copy is its "
                      "own): d/b.txt")
    assert isinstance(_take(root), inplace.Snapshot)  # the owner reads it
    os.mkfifo(root / "pipe")
    assert "fifos, sockets, devices or over-long paths, which the copy leaves out: pipe" in str(
        _take(root))


def _wide_tree(root: Path) -> Path:
    """Directories enough for every worker, a nested repository, a fifo and a closed file
    deep in them."""
    _tree(root)
    for index in range(12):
        deep = root / f"top{index:02d}" / "a" / "b"
        deep.mkdir(parents=True)
        (deep / "f.txt").write_text(f"{index}\n")
    (root / "top03" / "vendored" / ".git" / "refs").mkdir(parents=True)
    (root / "top05" / "a" / "private.txt").write_text("x")
    (root / "top05" / "a" / "private.txt").chmod(0o600)
    return root


def test_the_walk_shared_among_workers_finds_what_one_walk_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = _wide_tree(tmp_path / "t")
    shared = _take(root, other_user=True)
    assert shared == ("the agent's user could not read everything there (the copy is its "
                      "own): top05/a/private.txt")
    shared = _take(root)
    monkeypatch.setattr(inplace, "MAX_WORKERS", 1)
    alone = _take(root)
    assert isinstance(shared, inplace.Snapshot)
    assert isinstance(alone, inplace.Snapshot)
    assert shared.entries == alone.entries
    assert len(shared.entries) == 1 + 6 + 12 * 4 + 3 + 1  # root, _tree's, top*, vendored, private
    assert sorted(shared.git_dirs) == sorted(alone.git_dirs) == [".git", "top03/vendored/.git"]
    os.mkfifo(root / "top07" / "a" / "pipe")
    monkeypatch.setattr(inplace, "MAX_WORKERS", 4)
    assert _take(root) == ("the tree holds fifos, sockets, devices or over-long paths, which "
                           "the copy leaves out: top07/a/pipe")


def test_the_cap_holds_however_the_walk_is_shared(tmp_path: Path) -> None:
    root = _wide_tree(tmp_path / "t")
    with pytest.raises(tree.CopyTooLarge, match="more than 40 files and directories"):
        inplace.take(str(root), max_entries=40)
    assert len(inplace.take(str(root), max_entries=80).entries) == 59


def test_the_copy_s_byte_cap_is_judged_from_the_snapshot_as_the_survey_judges_it(
    tmp_path: Path,
) -> None:
    """A run that copies checks the copy's byte cap from the sizes its snapshot took (no second
    walk): the same sum as tree.survey's, files over the per-file cap and .git left out."""
    root = _tree(tmp_path / "t")
    (root / "big.bin").write_bytes(b"x" * 5000)
    (root / ".git" / "pack").write_bytes(b"y" * 9000)
    snapshot = inplace.take(str(root), max_entries=1000)
    for max_file, max_total in ((10_000, 5003), (10_000, 5006), (4000, 6), (4000, 5)):
        survey_error = snapshot_error = ""
        try:
            tree.survey(str(root), max_entries=1000, count_bytes=True, max_file_bytes=max_file,
                        max_total_bytes=max_total)
        except tree.CopyTooLarge as exc:
            survey_error = str(exc)
        try:
            snapshot.within_bytes(max_file_bytes=max_file, max_total_bytes=max_total)
        except tree.CopyTooLarge as exc:
            snapshot_error = str(exc)
        assert snapshot_error == survey_error, (max_file, max_total)
    with pytest.raises(tree.CopyTooLarge, match="MiB of files"):
        snapshot.within_bytes(max_file_bytes=10_000, max_total_bytes=5003)  # 5,004 in all


def test_a_directory_that_cannot_be_listed_is_refused_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What cannot be read cannot be checked (a process left by an earlier step closed it):
    the snapshot is refused, and the run with it (no other way of running the agent); the
    check after the run, which must finish, walks on."""
    root = _wide_tree(tmp_path / "t")
    listed = os.scandir

    def closed(path: str) -> Iterator[os.DirEntry[str]]:
        if str(path).endswith("top04/a"):
            raise PermissionError(13, "Permission denied")
        return listed(path)

    monkeypatch.setattr(os, "scandir", closed)
    monkeypatch.setattr(inplace, "MAX_WORKERS", 1)
    with pytest.raises(tree.Unreadable, match="top04/a cannot be listed: Permission denied"):
        inplace.take(str(root), max_entries=1000)
    monkeypatch.setattr(inplace, "MAX_WORKERS", 4)  # refused by a worker, as well
    with pytest.raises(tree.Unreadable, match="top04/a cannot be listed: Permission denied"):
        inplace.take(str(root), max_entries=1000)


def _state(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry's mode, modification time and (for a file) content."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        data = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
        found[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, data)
    return found


def _summary(box: Box) -> str:
    """The job summary as one line (its wrapping, in callouts too, undone), unescaped."""
    text = (box.base / "summary.md").read_text().replace("\n> ", "\n")
    return " ".join(text.replace("\\", "").replace("`", "").split())


_ATTACKS = {
    "append": "echo planted >> README.md",
    "truncate_open": ": > src/app.py",
    "truncate": "truncate -s 0 README.md",
    "create": "echo x > new.txt",
    "mkdir": "mkdir planted",
    "remove": "rm -f README.md",
    "rename": "mv src/app.py src/moved.py",
    "hardlink": "ln README.md src/hard",
    "symlink": "ln -s /etc/passwd planted-link",
    "hook": "echo x > .git/hooks/post-checkout",
    "chmod": "chmod 777 README.md",
    "touch": "touch -d 2001-01-01 README.md",
    "xattr": "setfattr -n user.planted -v 1 README.md",
}


def _attacks() -> str:
    return "; ".join(f"( {command} ) 2>/dev/null && echo {name} >> $SEEN/done"
                     for name, command in _ATTACKS.items())


@ROOT_LANDLOCK
def test_in_a_container_job_a_read_only_run_reads_the_checkout_and_changes_nothing(
    box: Box,
) -> None:
    """The attack, as the agent of a read-only run in a container job: it writes, truncates
    (by open and by path), creates, removes, renames and links in the checkout, plants a hook,
    changes a mode and a time, sets an extended attribute, and reads .git/config's token.
    Every one fails, the checkout is byte for byte and mode for mode as it was, and no copy
    was made: the summary says so. Before, the agent ran on a copy and the run handed its
    changes back (applied, then refused by the policy)."""
    config = box.workspace / ".git" / "config"
    with config.open("a") as handle:
        handle.write(f'[http "https://github.com/"]\n\textraheader = basic {TOKEN}\n')
    before = _state(box.workspace)
    body = (f"cat README.md > $SEEN/readme; ls > $SEEN/ls; cat .git/config > $SEEN/config; "
            f"cat .git/HEAD >> $SEEN/config; pwd > $SEEN/pwd; {_attacks()}")
    done = in_container(box, body=body)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _seen(box, "readme") == "# demo\n"
    assert _seen(box, "ls").split() == ["README.md", "src"]
    assert TOKEN not in _seen(box, "config")
    assert "ref:" not in _seen(box, "config")
    assert _seen(box, "pwd").strip() == str(box.workspace)  # the checkout, not a copy
    assert _seen(box, "done") == ""  # not one attack went through
    assert _state(box.workspace) == before
    outputs = parse_output_file((box.base / "outputs.txt").read_text())
    assert outputs["conclusion"] == "success"
    assert outputs["files-changed"] == "[]"
    summary = _summary(box)
    assert "the checkout itself, read-only, not copied (a read-only run" in summary
    assert "copied in" not in summary


@ROOT_LANDLOCK
def test_a_tree_the_agent_s_user_cannot_read_whole_is_copied_and_the_summary_says_why(
    box: Box,
) -> None:
    secret = box.workspace / "src" / "private.txt"
    secret.write_text("runner only\n")
    secret.chmod(0o600)
    done = in_container(box, body="cat src/private.txt > $SEEN/private; pwd > $SEEN/pwd")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _seen(box, "private") == "runner only\n"  # its own copy
    assert _seen(box, "pwd").strip() != str(box.workspace)
    summary = _summary(box)
    assert ("a read-only run, not shown in place: the agent's user could not read everything "
            "there (the copy is its own): src/private.txt") in summary, summary


@pytest.mark.skipif(os.geteuid() != 0 or landlock.abi() < inplace.OWN_USER_MIN_ABI,
                    reason="plays a runner user (as root) on a kernel whose Landlock scopes "
                           "signals")
def test_as_the_runner_s_own_user_a_changed_mode_or_time_is_put_back_and_fails_the_run(
    box: Box, unprivileged: Path,
) -> None:
    """The attack, as the agent of a read-only run on a self-hosted runner without sudo or user
    namespaces (Landlock as the runner's own user, who owns the checkout): the writes fail as
    in a container job; what Landlock does not govern, it does: it makes a file world-writable
    and executable, back-dates another, closes a directory, makes .git/config readable to all.
    After the run each is put back as it was, and the run fails, naming them. Before: the
    agent's copy took the changes, and the run handed the mode change back."""
    name = f"{TEST_AGENT_USER}-ipl"[:32]
    before_ls = {}
    body = (f"{_attacks()}; chmod 777 src/app.py; touch -d 2001-01-01 README.md; "
            "chmod 700 src; chmod 644 .git/config 2>/dev/null; "
            'mkdir -p "$HOME/.cursor/chats/chat-1"; echo db > "$HOME/.cursor/chats/chat-1/s"; true')
    try:
        user = ensure_user(name)
        config = box.workspace / ".git" / "config"
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(box.base)],
                       check=True)
        config.chmod(0o600)
        before = _state(box.workspace)
        before_ls = {path: mode for path, (mode, _, _) in before.items()}
        done = as_runner(unprivileged, box, name, "--summary-file",
                         str(box.base / "summary.md"), body=body,
                         wrap=[sys.executable, "-I", "-c", NO_USER_NAMESPACES])
    finally:
        remove_user(name)
    assert done.returncode == 1, done.stdout + done.stderr
    assert _seen(box, "done").split() == ["chmod", "touch"]  # the rest failed
    after = _state(box.workspace)
    assert {path: mode for path, (mode, _, _) in after.items()} == before_ls
    assert after == before
    outputs = parse_output_file((box.base / "fallback-outputs.txt").read_text())
    assert outputs["conclusion"] == "failure"
    summary = _summary(box)
    assert "the checkout itself, read-only, not copied" in summary
    assert "The agent changed 4 entries of the real checkout" in summary, summary
    assert ".git/config, README.md, src, src/app.py. Each was put back" in summary, summary
    assert "Each was put back as it was" in summary
    kept = list(box.base.glob("runner-temp/cursor-agent-action/agent-chats/.cursor/chats/*"))
    assert [path.name for path in kept] == ["chat-1"]  # --resume's store, as the runner's user
