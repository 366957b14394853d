"""The checked patch: what changed against HEAD, computed without trusting the tree.

Real repositories; the patch is proven by applying it to a fresh clone and comparing every file.
Attacks: config, attributes and filters planted in the repository and in the global config, a
planted ``git`` on PATH, changes hidden with skip-worktree / assume-unchanged, odd file names.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from cursor_agent_action import changeset, safegit

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
       "-c", "init.defaultBranch=main"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "README.md").write_text("# demo\n")
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('hi')\n")
    (repo / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    (repo / "tool.sh").chmod(0o755)
    (repo / "gone.txt").write_text("to be deleted\n")
    (repo / "blob.bin").write_bytes(bytes(range(256)))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    return repo


def _snapshot(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file and link below ``root`` (not .git): kind+mode and content."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] == ".git" or (path.is_dir() and not path.is_symlink()):
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            found[str(relative)] = ("link", os.readlink(path).encode())
        else:
            executable = "x" if info.st_mode & stat.S_IXUSR else "-"
            found[str(relative)] = (executable, path.read_bytes())
    return found


def _apply_to_fresh_clone(repo: Path, patch: Path, tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "apply", "--binary", str(patch)], cwd=clone, check=True)
    return clone


def _change_everything(repo: Path) -> None:
    (repo / "README.md").write_text("# demo\n\nchanged\n")
    (repo / "gone.txt").unlink()
    (repo / "tool.sh").chmod(0o644)  # a mode change only
    (repo / "src" / "app.py").chmod(0o755)
    (repo / "blob.bin").write_bytes(bytes(range(255, -1, -1)) * 3)
    (repo / "docs").mkdir()
    (repo / "docs" / "new.md").write_text("new\n")
    os.symlink("../README.md", repo / "docs" / "link.md")
    (repo / "name with spaces\tand tab.txt").write_text("odd\n")


def test_the_patch_reproduces_the_work_tree_exactly(repo: Path, tmp_path: Path) -> None:
    before = changeset.baseline(repo)
    _change_everything(repo)
    changes = changeset.compute(repo, before)
    assert changes.paths == sorted(["README.md", "blob.bin", "docs/link.md", "docs/new.md",
                                    "gone.txt", "name with spaces\tand tab.txt", "src/app.py",
                                    "tool.sh"])  # fmt: skip
    patch = tmp_path / "changes.patch"
    changeset.write_patch(repo, changes, patch)
    assert patch.read_bytes().startswith(changeset.PATCH_HEADER)
    clone = _apply_to_fresh_clone(repo, patch, tmp_path)
    assert _snapshot(clone) == _snapshot(repo)


def test_without_a_baseline_every_file_is_compared(repo: Path, tmp_path: Path) -> None:
    _change_everything(repo)
    with_baseline = changeset.compute(repo, None)
    assert "README.md" in with_baseline.paths
    assert "tool.sh" in with_baseline.paths


def test_nothing_changed_gives_an_empty_changeset(repo: Path) -> None:
    assert changeset.compute(repo, changeset.baseline(repo)).entries == []
    assert changeset.compute(repo, None).entries == []


def test_changes_made_before_the_run_are_the_base_not_the_agents(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "README.md").write_text("# edited by an earlier step\n")
    (repo / "notes.txt").write_text("from an earlier step\n")
    before = changeset.baseline(repo)
    (repo / "src" / "app.py").write_text("print('agent')\n")
    changes = changeset.compute(repo, before)
    assert changes.paths == ["src/app.py"]
    patch = tmp_path / "p"
    changeset.write_patch(repo, changes, patch)
    assert b"already differed from the base" in patch.read_bytes()
    assert b"README.md" not in patch.read_bytes().split(b"\n\n", 1)[1]


def test_skip_worktree_and_assume_unchanged_hide_nothing(repo: Path, tmp_path: Path) -> None:
    """Flags set by an earlier step, and flags set during the run, are both seen through."""
    _git(repo, "update-index", "--skip-worktree", "README.md")
    (repo / "README.md").write_text("# hidden before the run\n")
    before = changeset.baseline(repo)
    _git(repo, "update-index", "--assume-unchanged", "src/app.py")
    (repo / "src" / "app.py").write_text("print('hidden during the run')\n")
    (repo / "README.md").write_text("# and changed again\n")
    assert _git(repo, "status", "--porcelain") == ""  # what git status would show: nothing
    changes = changeset.compute(repo, before)
    assert changes.paths == ["README.md", "src/app.py"]
    assert changeset.compute(repo, None).paths == ["README.md", "src/app.py"]


def test_planted_config_filters_and_attributes_run_nothing_and_change_nothing(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\necho REPLACED\n")
    evil.chmod(0o755)
    planted = (f"[core]\n\tfsmonitor = {evil}\n\thooksPath = {tmp_path}\n"
               f"[diff]\n\texternal = {evil}\n[diff \"evil\"]\n\ttextconv = {evil}\n"
               f"\tcommand = {evil}\n[filter \"evil\"]\n\tclean = {evil}\n\tsmudge = {evil}\n"
               f"\trequired = true\n[credential]\n\thelper = !{evil}\n")  # fmt: skip
    with (repo / ".git" / "config").open("a") as config:
        config.write(planted)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(planted)
    monkeypatch.setenv("HOME", str(home))
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\necho planted-git >> {marker}\nexit 1\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    safegit.git_executable.cache_clear()
    try:
        before = changeset.baseline(repo)
        (repo / "src" / "app.py").write_text("print('real content')\n")
        changes = changeset.compute(repo, before)
        patch = tmp_path / "p"
        changeset.write_patch(repo, changes, patch)
    finally:
        safegit.git_executable.cache_clear()
    assert not marker.exists()
    assert changes.paths == ["src/app.py"]  # .gitattributes was there before: the base
    assert b"+print('real content')" in patch.read_bytes()
    assert b"REPLACED" not in patch.read_bytes()


def test_fifos_and_nested_repositories_are_skipped_not_read(repo: Path) -> None:
    before = changeset.baseline(repo)
    os.mkfifo(repo / "pipe")
    nested = repo / "vendored"
    nested.mkdir()
    _git(nested, "init", "-q")
    (nested / "x.txt").write_text("x\n")
    changes = changeset.compute(repo, before)  # would block forever reading the fifo
    assert changes.paths == []
    assert changes.skipped == ["vendored"]
    assert changes.special == ["pipe"]


def test_a_fifo_named_gitignore_is_no_rule_file_and_holds_nothing(repo: Path) -> None:
    """The agent's ``mkfifo docs/.gitignore``: git's check-ignore read it and waited for a
    writer forever. The rules are read by us, as regular files only; the fifo is named."""
    before = changeset.baseline(repo)
    (repo / "docs").mkdir()
    os.mkfifo(repo / "docs/.gitignore")
    os.mkfifo(repo / ".gitattributes")
    (repo / "docs/new.md").write_text("new\n")
    start = time.monotonic()
    changes = changeset.compute(repo, before)
    changeset.write_patch(repo, changes, repo.parent / "p.patch")
    assert time.monotonic() - start < 10
    assert changes.paths == ["docs/new.md"]
    assert changes.special == [".gitattributes", "docs/.gitignore"]


def test_ignore_rules_of_regular_gitignore_files_still_hold(repo: Path) -> None:
    before = changeset.baseline(repo)
    (repo / "docs").mkdir()
    (repo / "docs/.gitignore").write_text("*.log\n")
    (repo / "docs/a.log").write_text("x\n")
    # A .gitignore that is a link is no rule file (git does not follow one either): its
    # target's rules (here: ignore everything) are not read.
    (repo / "rules.txt").write_text("*\n")
    (repo / "docs/sub").mkdir()
    os.symlink("../../rules.txt", repo / "docs/sub/.gitignore")
    (repo / "docs/sub/kept.md").write_text("x\n")
    changes = changeset.compute(repo, before)
    assert "docs/a.log" in changes.ignored_paths
    assert "docs/.gitignore" in changes.paths
    assert "docs/sub/kept.md" in changes.paths


def test_the_rule_files_read_for_one_check_are_capped(repo: Path) -> None:
    """Sparse .gitignore files cost the agent nothing; root copied a MiB of each."""
    before = changeset.baseline(repo)
    for index in range(20):
        directory = repo / f"d{index}"
        directory.mkdir()
        with (directory / ".gitignore").open("wb") as handle:
            handle.truncate(1 << 20)
        (directory / "new.md").write_text("x\n")
    with pytest.raises(changeset.ChangesetError, match="hold over 16 MiB"):
        changeset.compute(repo, before)


def test_new_ignored_files_stay_out_tracked_ones_do_not(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    _git(repo, "add", ".gitignore")
    _git(repo, "commit", "-qm", "ignore")
    before = changeset.baseline(repo)
    (repo / "debug.log").write_text("noise\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"\0")
    (repo / "README.md").write_text("kept\n")
    assert changeset.compute(repo, before).paths == ["README.md"]


def test_a_file_name_with_a_newline_is_hashed_correctly(repo: Path, tmp_path: Path) -> None:
    before = changeset.baseline(repo)
    (repo / "two\nlines.txt").write_text("content\n")
    changes = changeset.compute(repo, before)
    assert changes.paths == ["two\nlines.txt"]
    patch = tmp_path / "p"
    changeset.write_patch(repo, changes, patch)
    clone = _apply_to_fresh_clone(repo, patch, tmp_path)
    assert (clone / "two\nlines.txt").read_text() == "content\n"


def test_git_is_found_in_the_system_directories_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "git"
    planted.write_text("#!/bin/sh\nexit 0\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    safegit.git_executable.cache_clear()
    try:
        found = safegit.git_executable()
    finally:
        safegit.git_executable.cache_clear()
    assert found != str(planted)
    assert os.path.dirname(found) in safegit.SYSTEM_DIRS


def test_head_tree_of_paths_lists_only_the_paths_asked_for_literally(repo: Path) -> None:
    """A contained run reads HEAD only at the paths it touched; glob characters are names."""
    (repo / "a*").write_text("star\n")
    (repo / "ab").write_text("not a match\n")
    (repo / "dir").mkdir()
    (repo / "dir" / "x").write_text("x\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "more")
    found = changeset.head_tree(repo, ["a*", "dir", "dir/x", "missing"])
    assert sorted(found) == ["a*", "dir/x"]
    assert found["a*"] == changeset.head_tree(repo)["a*"]


def test_the_size_cap_is_checked_before_a_byte_is_hashed(repo: Path) -> None:
    """Sparse files cost the agent nothing and root's git everything (it died of SIGBUS in a
    full tmpfs): their apparent sizes are summed from lstat first."""
    before = changeset.baseline(repo)
    for index in range(3):
        with (repo / f"pad{index}.md").open("wb") as handle:
            handle.truncate(50 << 20)
    start = time.monotonic()
    with pytest.raises(changeset.ChangesetError, match="over the 100 MiB a patch may carry"):
        changeset.compute(repo, before, max_changed_bytes=100 << 20)
    assert time.monotonic() - start < 2
