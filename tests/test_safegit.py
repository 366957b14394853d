"""One git: every way a hardened git call fails is one ``GitFailed`` with git's own words, and
the checked-out commit and the top of the work tree are looked up in one place. Real
repositories and a real git; the failures are real ones (a missing directory, a git that is
too slow, a repository without a commit)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cursor_agent_action import changeset, safegit
from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.gh.publish import gitops, patchcheck

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
       "-c", "init.defaultBranch=main"]


def _repo(path: Path, *, commit: bool = True) -> Path:
    path.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=path, check=True)
    if commit:
        (path / "a.txt").write_text("a\n")
        subprocess.run([*GIT, "add", "."], cwd=path, check=True)
        subprocess.run([*GIT, "commit", "-qm", "one"], cwd=path, check=True)
    return path


def test_an_exit_code_the_caller_refuses_is_git_failed_with_gits_words(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    with pytest.raises(safegit.GitFailed) as info:
        safegit.git(["cat-file", "blob", "0" * 40], repo)
    assert info.value.command == "git cat-file"
    assert info.value.returncode == 128
    assert "0000000000" in info.value.detail
    assert "\n" not in info.value.detail
    assert str(info.value).startswith("git cat-file failed: ")
    # An accepted code is no failure; ok=None accepts any.
    assert safegit.git(["check-ignore", "nothing"], repo, ok=(0, 1)).returncode == 1
    assert safegit.git(["cat-file", "blob", "0" * 40], repo, ok=None).returncode == 128


def test_a_git_that_cannot_start_or_is_too_slow_is_git_failed(tmp_path: Path) -> None:
    with pytest.raises(safegit.GitFailed) as info:
        safegit.git(["status"], tmp_path / "missing")
    assert info.value.returncode is None
    assert not info.value.timed_out
    assert isinstance(info.value.__cause__, OSError)
    repo = _repo(tmp_path / "r")
    with pytest.raises(safegit.GitFailed) as info:  # reads stdin: never ends before the timeout
        safegit.git(["hash-object", "--stdin"], repo, timeout=0.001,
                    input=b"x" * (64 << 20))
    assert info.value.timed_out
    assert info.value.returncode is None
    assert "did not finish within" in str(info.value)


def test_git_not_found_is_a_git_failed() -> None:
    assert issubclass(safegit.GitNotFound, safegit.GitFailed)
    assert changeset.ChangesetError is safegit.GitFailed


def test_one_head_commit_and_one_toplevel(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "r")
    (repo / "sub").mkdir()
    head = subprocess.run([*GIT, "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()
    assert safegit.head_commit(repo) == head == changeset.head_commit(repo)
    assert safegit.toplevel(repo / "sub") == repo.resolve()
    assert changeset.repository_root(repo / "sub") == repo.resolve()
    assert gitops.toplevel(repo / "sub") == repo.resolve()
    empty = _repo(tmp_path / "empty", commit=False)
    with pytest.raises(safegit.GitFailed):
        safegit.head_commit(empty)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(safegit.GitFailed):
        safegit.toplevel(plain)
    assert changeset.repository_root(plain) is None


def test_each_caller_adds_its_own_hint(tmp_path: Path) -> None:
    """publish's git says what to do; the patch check names what it was doing."""
    empty = _repo(tmp_path / "empty", commit=False)
    with pytest.raises(GitHubError, match="has no commit checked out") as info:
        gitops.head_commit(empty)
    assert "Check out the branch" in info.value.hint
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(GitHubError, match=r"finding the repository at .* failed \(exit 128\): "
                       r".*not a git repository") as info:
        gitops.toplevel(plain)
    assert "actions/checkout" in info.value.hint
    with pytest.raises(UsageError, match="does not exist or is not a directory"):
        gitops.toplevel(tmp_path / "missing")
    repo = _repo(tmp_path / "r")
    with pytest.raises(GitHubError, match=r"^reading blob 000000000000 failed: .*0000") as info:
        patchcheck.blob(repo, "0" * 40)
    assert "patch must have been made from this commit" in info.value.hint


def test_publish_git_keeps_text_modes_line_ends(tmp_path: Path) -> None:
    """gitops reads git's output as text mode did: CR LF and CR end a line as LF."""
    repo = _repo(tmp_path / "r")
    message = "subject\r\n\r\nbody\rend\n"
    tree = gitops.git(["rev-parse", "HEAD^{tree}"], repo).stdout.strip()
    sha = gitops.commit_tree(repo, tree, safegit.head_commit(repo), message=message,
                             author_name="t", author_email="t@example.com")
    body = gitops.git(["log", "-1", "--format=%B", sha], repo).stdout
    assert "\r" not in body
    assert body.startswith("subject\n")


def test_publish_git_sends_text_that_is_not_utf8_as_text_mode_did(tmp_path: Path) -> None:
    """A commit message from an environment variable with bytes that are not UTF-8 (Python reads
    them as surrogates) is sent with ``?`` for them, not refused."""
    repo = _repo(tmp_path / "r")
    tree = gitops.git(["rev-parse", "HEAD^{tree}"], repo).stdout.strip()
    sha = gitops.commit_tree(repo, tree, safegit.head_commit(repo), message="fix \udcff bug\n",
                             author_name="t", author_email="t@example.com")
    assert gitops.git(["log", "-1", "--format=%B", sha], repo).stdout.startswith("fix ? bug")
