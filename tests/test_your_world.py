"""The pull request try_example builds from a user's repository (tests/support/your_world.py),
without act: the files and patches GitHub would list, the lines the stand-in's findings go
on, the Markdown a docs update edits, the failing step a log names."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.your_world import (
    WorldError,
    docs_write,
    find_pull,
    read_failure,
    review_findings,
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "old.md").write_text("# Old\n\nSame text, a new name.\n")
    (repo / "gone.py").write_text("x = 1\n")
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 8\n")
    (repo / "logo.bin").write_bytes(b"\x00\x01")
    _git(repo, "init", "-q", "-b", "trunk")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    _git(repo, "checkout", "-qb", "topic")
    _git(repo, "mv", "docs/old.md", "docs/new.md")
    _git(repo, "rm", "-q", "gone.py")
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7\nh = 80\n"
                                 "i = 9\n")
    (repo / "logo.bin").write_bytes(b"\x00\x02")
    (repo / "added.txt").write_text("\n  \nfirst words\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")
    return repo


def test_the_files_are_what_github_lists(repo: Path) -> None:
    pull = find_pull(repo / "docs", None, None)  # from a subdirectory: the top is found
    assert (pull.source, pull.repository, pull.base_ref, pull.head_ref) == (
        repo, "you/proj", "trunk", "topic")
    files = {f["filename"]: f for f in pull.files}
    assert files["docs/new.md"]["status"] == "renamed"
    assert files["docs/new.md"]["previous_filename"] == "docs/old.md"
    assert files["gone.py"]["status"] == "removed"
    assert files["added.txt"]["status"] == "added"
    assert "patch" not in files["logo.bin"]  # binary: GitHub lists no patch
    assert files["app.py"]["patch"].startswith("@@ -5,4 +5,5 @@")
    assert ("app.py", 8, "h = 80") in pull.added_lines()
    assert ("app.py", 9, "i = 9") in pull.added_lines()


def test_findings_go_on_added_lines_that_say_something(repo: Path) -> None:
    pull = find_pull(repo, "trunk", "topic")
    where = {(f["path"], f["line"]) for f in review_findings(pull)}
    assert where == {("app.py", 8), ("added.txt", 3)}  # not the blank lines 1 and 2


def test_a_docs_update_edits_a_markdown_file_of_the_pull_request(repo: Path) -> None:
    pull = find_pull(repo, "trunk", "topic")
    answer, writes = docs_write(pull, repo)
    [(path, text)] = writes.items()
    assert path == "docs/new.md"
    assert text.startswith("# Old\n\nSame text, a new name.\n\n## Changes in topic\n")
    assert "- `app.py`" in text
    assert answer.startswith("Updated docs/new.md:")


def test_the_failing_step_is_the_group_before_the_first_error() -> None:
    log = ("2026-11-28T01:00:00.1Z ##[group]Run actions/checkout@v4\n"
           "2026-11-28T01:00:00.2Z ##[endgroup]\n"
           "2026-11-28T01:00:01.0Z ##[group]Run pytest -q\n"
           "2026-11-28T01:00:02.0Z FAILED tests/test_app.py::test_h - assert 80 == 8\n"
           "2026-11-28T01:00:02.5Z ##[error]Process completed with exit code 1.\n"
           "2026-11-28T01:00:03.0Z ##[group]Run upload\n")
    failure = read_failure(log)
    assert failure.step == "Run pytest -q"
    assert failure.line == "FAILED tests/test_app.py::test_h - assert 80 == 8"


def test_what_cannot_be_a_pull_request_is_said(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(WorldError, match="'nope' is not a branch, tag or commit of"):
        find_pull(repo, "trunk", "nope")
    with pytest.raises(WorldError, match="are the same commit"):
        find_pull(repo, "topic", "topic")
    assert find_pull(repo, None, "topic").base_ref == "trunk"  # a usual name
    _git(repo, "branch", "-m", "trunk", "stable")
    with pytest.raises(WorldError, match="cannot tell the default branch"):
        find_pull(repo, None, "topic")  # no origin/HEAD, no main, master, trunk or develop
    _git(repo, "checkout", "-q", "--detach")
    with pytest.raises(WorldError, match="has no branch checked out"):
        find_pull(repo, "trunk", None)
    with pytest.raises(WorldError, match="is not in a git repository"):
        find_pull(tmp_path, None, None)
