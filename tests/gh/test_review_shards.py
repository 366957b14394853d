"""Planning a sharded review: every changed file in exactly one shard of at most shard-bytes,
at most max-shards of them, files that belong together kept together, nothing dropped; and
pr-context writing the plan, the shards' contexts and the matrix (through the paged files API
up to 3,000 files, the local git diff of the head beyond)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_USAGE
from cursor_agent_action.gh import changed, shards
from cursor_agent_action.gh.shards import (
    ChangedFile,
    Plan,
    PlanError,
    from_json,
    plan,
)
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import GitHubServer


def patch(lines: int, word: str = "x") -> str:
    return f"@@ -0,0 +1,{lines} @@\n" + "".join(f"+{word} {i}\n" for i in range(lines))


def file(path: str, lines: int = 3, **extra: object) -> ChangedFile:
    return ChangedFile(path, patch=patch(lines), additions=lines, **extra)  # type: ignore[arg-type]


def where(made: Plan, path: str) -> int:
    return made.shard_of(path)


def test_a_small_pull_request_is_one_shard() -> None:
    made = plan([file("src/a.py"), file("docs/b.md")], shard_bytes=200_000, max_shards=8)
    assert [s.files for s in made.shards] == [("docs/b.md", "src/a.py")]
    assert made.matrix() == {"shard": [1]}
    assert not made.not_reviewed


def test_a_directory_a_rename_and_a_test_stay_with_their_own() -> None:
    files = [file(f"pkg{d}/m{i}.py", 40) for d in range(6) for i in range(3)]
    files += [file("tests/test_m0.py", 5), file("lib/moved.py", 5, status="renamed",
                                                previous_path="pkg2/moved.py")]
    budget = sum(f.size for f in files) // 3 + 2000
    made = plan(files, shard_bytes=budget, max_shards=8)
    assert len(made.shards) > 1
    for d in range(6):  # a directory's files in one shard
        assert len({where(made, f"pkg{d}/m{i}.py") for i in range(3)}) == 1
    # the rename with its source directory; the test with a module it names
    assert where(made, "lib/moved.py") == where(made, "pkg2/m0.py")
    assert where(made, "tests/test_m0.py") in {where(made, f"pkg{d}/m0.py") for d in range(6)}
    assert where(made, "pkg2/moved.py") == where(made, "lib/moved.py")  # its old path too
    assert all(s.size <= budget for s in made.shards)


@pytest.mark.parametrize(("name", "stem"), [
    ("tests/test_cli.py", "cli"), ("cli_test.go", "cli"), ("web/cli.test.ts", "cli"),
    ("a/cli.spec.js", "cli"), ("CliTest.java", "Cli"), ("cli_spec.rb", "cli"),
    ("cli.py", None), ("latest.py", None), ("contest.go", None)])
def test_a_test_names_its_code(name: str, stem: str | None) -> None:
    assert shards.tested_name(name) == stem


def test_a_file_too_large_for_any_shard_is_listed_with_its_size_never_dropped() -> None:
    big = file("gen/huge.js", 5000)
    made = plan([file("src/a.py"), big, ChangedFile("big.lock", additions=90_000,
                                                    too_large=True)],
                shard_bytes=20_000, max_shards=4)
    assert [s.files for s in made.shards] == [("src/a.py",)]
    gaps = {g.path: g for g in made.not_reviewed}
    assert gaps["gen/huge.js"].size == big.size
    assert "over shard-bytes (20,000)" in gaps["gen/huge.js"].reason
    assert gaps["big.lock"].size == 90_000
    assert "too large" in gaps["big.lock"].reason


def test_max_shards_bounds_the_matrix_and_what_finds_no_room_is_listed() -> None:
    files = [file(f"d{i}/f.py", 200) for i in range(10)]
    made = plan(files, shard_bytes=files[0].size * 2, max_shards=3)
    assert len(made.shards) == 3
    placed = {n for s in made.shards for n in s.files}
    left = {g.path for g in made.not_reviewed}
    assert len(placed) == 6
    assert placed | left == {f.path for f in files}
    assert all("max-shards (3)" in g.reason for g in made.not_reviewed)


def test_shards_are_balanced_the_slowest_job_sets_the_wall_time() -> None:
    files = [file(f"d{i}/f.py", 10 + i) for i in range(64)]
    total = sum(f.size for f in files)
    made = plan(files, shard_bytes=total // 8 + 500, max_shards=8)
    sizes = [s.size for s in made.shards]
    assert len(sizes) == -(-total // (total // 8 + 500)) == 7
    assert max(sizes) - min(sizes) <= max(f.size for f in files)


names = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"),
                min_size=1, max_size=12)


@given(st.lists(st.tuples(st.lists(names, min_size=1, max_size=3), st.integers(0, 400)),
                min_size=1, max_size=40, unique_by=lambda t: "/".join(t[0])),
       st.integers(1, 9), st.integers(2000, 30_000))
def test_every_file_is_in_exactly_one_shard_or_listed(
        spec: list[tuple[list[str], int]], max_shards: int, budget: int) -> None:
    files = [file("/".join(parts), lines) for parts, lines in spec]
    made = plan(files, shard_bytes=budget, max_shards=max_shards)
    placed = [n for s in made.shards for n in s.files]
    assert len(placed) == len(set(placed))
    assert sorted(placed + [g.path for g in made.not_reviewed]) == sorted(f.path for f in files)
    assert 1 <= len(made.shards) <= max_shards or not placed
    assert all(s.size <= budget for s in made.shards)
    assert from_json(made.to_json()) == made


@pytest.mark.parametrize("text", [
    "[]", '{"version": 2}', '{"version": 1, "shards": [{"number": 2, "files": [], "size": 0}]}',
    '{"version": 1, "shards": [{"number": 1, "files": ["a"], "size": 0}, '
    '{"number": 2, "files": ["a"], "size": 0}], "not_reviewed": []}'])
def test_a_plan_not_ours_is_refused(text: str) -> None:
    with pytest.raises(PlanError):
        from_json(text)


# -- pr-context with max-shards ------------------------------------------------------------------


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch) -> Iterator[GitHubServer]:
    with GitHubServer() as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        for name in ("GITHUB_EVENT_PATH", "GITHUB_ACTION_PATH"):
            monkeypatch.delenv(name, raising=False)
        yield server


def context(tmp_path: Path, number: int, *args: str) -> tuple[int, dict[str, str]]:
    out = tmp_path / "out.txt"
    out.write_text("")
    code = cli.main(["pr-context", "--output-file", str(out), "--pr-number", str(number),
                     "--plan-dir", str(tmp_path / "plan"), *args])
    return code, parse_output_file(out.read_text())


def test_pr_context_plans_every_file_of_a_large_pull_request(
        gh: GitHubServer, tmp_path: Path) -> None:
    number = gh.add_pull("big", head_sha="c" * 40)
    files = [{"filename": f"pkg{i // 10}/m{i}.py", "patch": patch(30, f"v{i}"),
              "additions": 30} for i in range(400)]
    files.append({"filename": "vendor/blob.min.js", "additions": 70_000})  # no patch: too big
    gh.set_pull_files(number, files)
    code, out = context(tmp_path, number, "--max-shards", "6", "--shard-bytes", "40000")
    assert code == 0
    matrix = json.loads(out["matrix"])
    assert matrix == {"shard": list(range(1, int(out["shard-count"]) + 1))}
    assert 1 < len(matrix["shard"]) <= 6
    made = from_json(Path(out["plan-file"]).read_text())
    seen: list[str] = []
    for shard in made.shards:
        text = (tmp_path / "plan" / f"shard-{shard.number}.md").read_text()
        assert f"Your scope is part {shard.number}" in text
        for name in shard.files:  # each file's whole diff is in its shard's context
            i = int(name.rsplit("m", 1)[1].split(".")[0])
            assert f"+v{i} 29\n" in text
        seen += shard.files
    assert len(seen) == 400
    assert json.loads(out["not-reviewed"]) == [
        {"path": "vendor/blob.min.js", "bytes": 70_000,
         "reason": "GitHub shows no diff for it: too large (changed lines)"}]
    assert out["not-reviewed-count"] == "1"
    for word in ("cut", "truncated", "first"):
        assert all(word not in (tmp_path / "plan" / f"shard-{s}.md").read_text().split(
            "## Your scope")[1].lower() for s in matrix["shard"])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@e", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_beyond_githubs_3000_files_the_rest_come_from_git_names_read_safely(
        gh: GitHubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "keep.txt").write_text("a\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    # Hostile names: a newline and a fake diff header, a quote, a tab, a leading dash.
    hostile = ["x\ndiff --git evil evil", 'q"uote.py', "t\tab.py", "-rf.py"]
    for i in range(3005):
        (repo / f"d{i % 50}").mkdir(exist_ok=True)
        (repo / f"d{i % 50}" / f"f{i}.txt").write_text(f"line {i}\n")
    for name in hostile:
        (repo / name).write_text("hello\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    head = _git(repo, "rev-parse", "HEAD")
    number = gh.add_pull("big", head_sha=head)
    gh.state.pulls[number]["base"]["sha"] = base
    gh.set_pull_files(number, [{"filename": f"d{i % 50}/f{i}.txt", "patch": "@@ -0,0 +1 @@\n+l"}
                               for i in range(3000)])
    gh.state.pulls[number]["changed_files"] = 3005 + len(hostile)
    code, out = context(tmp_path, number, "--max-shards", "4", "--repository-path", str(repo))
    assert code == 0, out
    made = from_json(Path(out["plan-file"]).read_text())
    placed = {n for s in made.shards for n in s.files}
    assert len(placed) == 3005 + len(hostile)
    assert set(hostile) <= placed
    assert "evil" not in placed
    assert "git diff" in made.source
    # Without the commits: one clear error, never a plan that leaves files out silently.
    code, _ = context(tmp_path, number, "--max-shards", "4", "--repository-path",
                      str(tmp_path / "nowhere"))
    assert code == EXIT_USAGE


def test_git_names_and_patches_match_in_order(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "old.txt").write_text("".join(f"{i}\n" for i in range(20)))
    (repo / "bin.dat").write_bytes(b"\0\1")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "mv", "old.txt", "new.txt")
    (repo / "bin.dat").write_bytes(b"\0\2")
    (repo / "added.md").write_text("hi\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    found = {f.path: f for f in changed.from_git(repo, base, _git(repo, "rev-parse", "HEAD"))}
    assert found["new.txt"].status == "renamed"
    assert found["new.txt"].previous_path == "old.txt"
    assert found["bin.dat"].patch is None
    assert not found["bin.dat"].too_large
    assert found["added.md"].patch == "@@ -0,0 +1 @@\n+hi"
