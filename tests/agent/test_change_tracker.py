"""Which git config files the run guards (ChangeTracker.git_config_files): the ones git reads
for the workspace, whatever shape its repository has."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cursor_agent_action.agent.judge import leftout
from cursor_agent_action.agent.judge.changes import ChangeTracker
from cursor_agent_action.agent.judge.verdict import Described, Verdict
from cursor_agent_action.stream.record import StreamResult
from cursor_agent_action.stream.render.report import left_out_output


def _git(*args: str) -> None:
    subprocess.run(["git", *args], check=True, capture_output=True)


def _repo(path: Path, *, commit: bool = True) -> Path:
    _git("init", "-q", str(path))
    if commit:
        (path / "a.txt").write_text("a\n")
        _git("-C", str(path), "add", "a.txt")
        _git("-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.com",
             "commit", "-qm", "one")
    return path


def _read_by_git(workspace: Path) -> Path:
    """The config file git itself names for the workspace's repository (``--local``)."""
    done = subprocess.run(["git", "-C", str(workspace), "rev-parse", "--path-format=absolute",
                           "--git-common-dir"], check=True, capture_output=True, text=True)
    return Path(done.stdout.strip()) / "config"


def test_a_plain_repository_s_config_is_guarded(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    guarded = ChangeTracker(repo, contained=False).git_config_files
    assert repo / ".git" / "config" in guarded
    assert repo / ".git" / "config.worktree" in guarded


def test_a_repository_without_commits_has_its_config_guarded(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", commit=False)
    assert repo / ".git" / "config" in ChangeTracker(repo, contained=False).git_config_files


def test_a_linked_worktree_guards_the_common_config(tmp_path: Path) -> None:
    """The worktree's own git dir (.git/worktrees/NAME) holds no config git reads but
    config.worktree: the shared one is in the common dir."""
    repo = _repo(tmp_path / "repo")
    linked = tmp_path / "linked"
    _git("-C", str(repo), "worktree", "add", "-q", "--detach", str(linked))
    guarded = ChangeTracker(linked, contained=False).git_config_files
    assert _read_by_git(linked) == repo / ".git" / "config"
    assert repo / ".git" / "config" in guarded
    assert repo / ".git" / "worktrees" / "linked" / "config.worktree" in guarded


def test_a_separate_git_dir_and_a_linked_dot_git_guard_the_real_config(tmp_path: Path) -> None:
    """A ``.git`` file (``gitdir: ...``) and a ``.git`` symlink, made before the run: the
    config git reads through them is the one guarded."""
    separate = tmp_path / "separate.git"
    _git("init", "-q", "--separate-git-dir", str(separate), str(tmp_path / "gitfile"))
    assert separate / "config" in ChangeTracker(tmp_path / "gitfile",
                                                contained=False).git_config_files
    repo = _repo(tmp_path / "repo")
    linked = tmp_path / "linked-dot-git"
    linked.mkdir()
    (linked / ".git").symlink_to(repo / ".git")
    guarded = ChangeTracker(linked, contained=False).git_config_files
    assert _read_by_git(linked).resolve() in [path.resolve() for path in guarded]


def test_outside_a_repository_nothing_is_guarded(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert ChangeTracker(plain, contained=False).git_config_files == []


def test_an_uncontained_run_names_what_it_left_out_of_the_patch(tmp_path: Path) -> None:
    """Issue 42, without the box: a fifo and a path past 3,072 bytes the agent made stay out
    of the patch, each named with its reason in the verdict (hence the summary and the
    left-out output); before, only a note said so."""
    repo = _repo(tmp_path / "repo")
    tracker = ChangeTracker(repo)
    os.mkfifo(repo / "pipe")
    fd = os.open(repo, os.O_RDONLY)
    for _ in range(16):  # 16 x 201 bytes: past 3,072 at the 16th
        os.mkdir("n" * 200, dir_fd=fd)
        below = os.open("n" * 200, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    (repo / "a.txt").write_text("b\n")
    verdict = Verdict(StreamResult(has_result=True, failure=""))
    tracker.finish(verdict, tmp_path, set())
    assert verdict.files_changed == ["a.txt"]
    entries = json.loads(left_out_output(verdict.report(Described())))
    assert {"path": "pipe", "reason": leftout.SPECIAL} in entries
    (deep,) = [e for e in entries if e["path"].startswith("n" * 200)]
    assert deep["reason"].startswith("too long: 16 levels, 3,215 bytes")
    assert verdict.left_out_count == 2
