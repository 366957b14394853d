"""Which git config files the run guards (ChangeTracker.git_config_files): the ones git reads
for the workspace, whatever shape its repository has."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cursor_agent_action.agent.judge.changes import ChangeTracker


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
