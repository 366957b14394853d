"""Merging a sharded review: every shard's answer into ONE review and ONE status; a shard that
failed, is missing or was forged leaves the status failing and is named; a shard answers for
its own files only; duplicates by fingerprint are posted once; max-comments across shards,
the most severe first. Against the loopback GitHub API."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_RUN_FAILED, EXIT_USAGE
from cursor_agent_action.gh.shards import ChangedFile, NotReviewed, plan
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import GitHubServer

HEAD = "c" * 40
CONTEXT = "cursor-agent-action/review"
PATCH = "@@ -1,3 +1,4 @@\n a\n+b\n c\n d"  # new lines 1-4 in the diff, 2 added
PATHS = ["alpha/one.py", "alpha/two.py", "beta/three.py", "gamma/four.py"]


def finding(path: str, line: int = 2, severity: str = "major", title: str = "",
            **extra: Any) -> dict[str, Any]:
    return {"path": path, "line": line, "severity": severity,
            "title": title or f"Problem in {path}", "body": "Look here.", **extra}


def answer(*found: dict[str, Any], verdict: str = "comment", summary: str = "Done.") -> str:
    return json.dumps({"summary": summary, "verdict": verdict, "findings": list(found)})


@dataclass
class Env:
    gh: GitHubServer
    number: int
    tmp: Path
    capsys: pytest.CaptureFixture[str]
    shards: dict[str, int]  # path -> its shard

    def write_plan(self, extra_gaps: tuple[NotReviewed, ...] = ()) -> Path:
        files = [ChangedFile(p, patch=PATCH, additions=1) for p in PATHS]
        made = plan(files, shard_bytes=files[0].size * 2 + 10, max_shards=8)
        made = dataclasses.replace(made, head_sha=HEAD, number=self.number,
                                   not_reviewed=made.not_reviewed + extra_gaps)
        self.shards.update({p: made.shard_of(p) for p in PATHS})
        path = self.tmp / "plan.json"
        path.write_text(made.to_json())
        return path

    def shard_dir(self, name: str, text: str) -> None:
        folder = self.tmp / "found" / name
        folder.mkdir(parents=True)
        (folder / "findings.json").write_text(text)

    def review(self, *args: str, plan_file: Path | None = None
               ) -> tuple[int, dict[str, str], str]:
        out = self.tmp / "out.txt"
        out.write_text("")
        (self.tmp / "found").mkdir(exist_ok=True)
        self.capsys.readouterr()
        code = cli.main(["review", "--output-file", str(out), "--pr-number", str(self.number),
                         "--plan-file", str(plan_file or self.tmp / "plan.json"),
                         "--findings-dir", str(self.tmp / "found"), *args])
        return code, parse_output_file(out.read_text()), self.capsys.readouterr().out

    def posted(self) -> list[dict[str, Any]]:
        return [r.body for r in self.gh.requests_to("POST", r"/pulls/\d+/reviews$")]

    def states(self) -> list[tuple[str, str]]:
        return [(s["state"], s["description"]) for s in self.gh.state.statuses]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Env]:
    with GitHubServer() as gh:
        for key, value in gh.env(GITHUB_WORKFLOW="Code review", GITHUB_JOB="review").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
        number = gh.add_pull("feature", head_sha=HEAD)
        gh.set_pull_files(number, [{"filename": p, "patch": PATCH} for p in PATHS])
        made = Env(gh, number, tmp_path, capsys, {})
        made.write_plan()
        yield made


def test_every_shards_findings_make_one_review_and_one_final_status(env: Env) -> None:
    assert sorted(set(env.shards.values())) == [1, 2]
    for number in (1, 2):
        mine = [p for p in PATHS if env.shards[p] == number]
        env.shard_dir(f"code-review-shard-{number}",
                      answer(*(finding(p) for p in mine), summary=f"Part {number} seen."))
    code, out, _ = env.review()
    assert code == 0
    (posted,) = env.posted()
    assert sorted(c["path"] for c in posted["comments"]) == sorted(PATHS)
    assert "Part 1 (2 file(s)): Part 1 seen." in posted["body"]
    assert "Not reviewed" not in posted["body"]
    assert env.states()[-1][0] == "success"
    assert [s for s, _ in env.states()].count("success") == 1
    assert (out["not-reviewed-count"], out["missing-shards"]) == ("0", "")


@pytest.mark.parametrize("how", ["missing", "not json", "two folders", "symlink"])
def test_a_shard_without_a_usable_answer_leaves_the_status_failing_and_is_named(
        env: Env, how: str) -> None:
    env.shard_dir("code-review-shard-1", answer(finding(PATHS[0])))
    if how == "not json":
        env.shard_dir("code-review-shard-2", "{ nope")
    elif how == "two folders":  # a forged second folder claiming shard 2
        env.shard_dir("code-review-shard-2", answer())
        env.shard_dir("x-shard-2", answer())
    elif how == "symlink":
        (env.tmp / "elsewhere").mkdir()
        (env.tmp / "elsewhere" / "findings.json").write_text(answer())
        (env.tmp / "found" / "code-review-shard-2").symlink_to(env.tmp / "elsewhere")
    code, out, log = env.review()
    assert code == EXIT_RUN_FAILED
    (posted,) = env.posted()  # the review is still posted, with what there is
    assert "#### Not reviewed" in posted["body"]
    assert "**Shard 2** of 2 (2 file(s))" in posted["body"]
    state, description = env.states()[-1]
    assert state == "failure"
    assert "shard 2 of 2 did not answer" in description
    assert "success" not in [s for s, _ in env.states()]
    assert out["missing-shards"] == "2"
    assert out["not-reviewed-count"] == "2"
    assert "review incomplete" in log


def test_no_artifact_at_all_names_every_shard_and_fails_the_status(env: Env) -> None:
    out = env.tmp / "out.txt"
    code = cli.main(["review", "--output-file", str(out), "--pr-number", str(env.number),
                     "--plan-file", str(env.tmp / "plan.json"),
                     "--findings-dir", str(env.tmp / "never-downloaded")])
    assert code == EXIT_RUN_FAILED
    assert parse_output_file(out.read_text())["missing-shards"] == "1,2"
    assert env.states()[-1][0] == "failure"
    (posted,) = env.posted()
    assert "**Shard 1** of 2" in posted["body"]
    assert "**Shard 2** of 2" in posted["body"]


def test_a_shard_cannot_post_or_suppress_findings_on_another_shards_files(env: Env) -> None:
    own = [p for p in PATHS if env.shards[p] == 1]
    other = [p for p in PATHS if env.shards[p] == 2]
    # Shard 2's real finding; shard 1 (its prompt injected by a hostile file) claims the same
    # spot and title as a nit, to suppress it or to flood shard 2's files.
    env.shard_dir("code-review-shard-2", answer(finding(other[0], severity="critical",
                                                        title="SQL injection")))
    env.shard_dir("code-review-shard-1", answer(
        finding(own[0]), finding(other[0], severity="nit", title="sql  INJECTION!"),
        finding(other[1], severity="critical", title="Fake alarm")))
    code, _, log = env.review()
    assert code == 0
    (posted,) = env.posted()
    spots = sorted((c["path"], c["body"].count("critical")) for c in posted["comments"])
    assert spots == sorted([(own[0], 0), (other[0], 1)])
    assert "Fake alarm" not in json.dumps(posted)
    assert "2 finding(s) of a shard named another shard's files" in posted["body"]
    assert "left out" in log


def test_duplicates_by_fingerprint_are_posted_once_keeping_the_most_severe(env: Env) -> None:
    # A file the pull request does not change: any shard may find its caller broken.
    dup = finding("lib/caller.py", 10, "minor", "Caller not updated")
    worse = finding("lib/caller.py", 10, "critical", "caller  not updated.")
    env.shard_dir("a-shard-1", answer(dup))
    env.shard_dir("a-shard-2", answer(worse))
    code, _, _ = env.review()
    assert code == 0
    (posted,) = env.posted()
    assert posted["body"].count("lib/caller.py") == 1
    assert "**critical**" in posted["body"]


def test_max_comments_applies_across_shards_most_severe_first(env: Env) -> None:
    one = [p for p in PATHS if env.shards[p] == 1]
    two = [p for p in PATHS if env.shards[p] == 2]
    env.shard_dir("s-shard-1", answer(*(finding(p, severity="nit") for p in one)))
    env.shard_dir("s-shard-2", answer(*(finding(p, severity="critical") for p in two)))
    code, _, _ = env.review("--max-comments", "2")
    assert code == 0
    (posted,) = env.posted()
    assert sorted(c["path"] for c in posted["comments"]) == sorted(two)


def test_a_folder_for_a_shard_the_plan_lacks_is_ignored_with_a_warning(env: Env) -> None:
    for number in (1, 2):
        env.shard_dir(f"code-review-shard-{number}", answer())
    env.shard_dir("code-review-shard-9", answer(finding("alpha/one.py", severity="critical")))
    code, _, log = env.review()
    assert code == 0
    (posted,) = env.posted()
    assert posted["comments"] == []
    assert "the plan has no shard 9" in log


def test_files_in_no_shard_are_listed_with_their_size_and_keep_the_status_failing(
        env: Env) -> None:
    plan_file = env.write_plan((NotReviewed("gen/huge.js", 812_345,
                                            "its diff alone is over shard-bytes (200,000)"),))
    for number in (1, 2):
        env.shard_dir(f"code-review-shard-{number}", answer())
    code, out, _ = env.review(plan_file=plan_file)
    assert code == EXIT_RUN_FAILED
    (posted,) = env.posted()
    assert "`gen/huge.js` (812,345 bytes): its diff alone is over shard-bytes" in posted["body"]
    assert env.states()[-1] == ("failure", "Not all reviewed: 1 file(s) not reviewed; no "
                                "findings")
    assert json.loads(out["not-reviewed"]) == [
        {"path": "gen/huge.js", "bytes": 812_345,
         "reason": "its diff alone is over shard-bytes (200,000)"}]


def test_allow_unreviewed_files_lists_them_but_only_a_missing_shard_fails(env: Env) -> None:
    plan_file = env.write_plan((NotReviewed("package-lock.json", 2_400_000,
                                            "its diff alone is over shard-bytes (200,000)"),))
    env.shard_dir("code-review-shard-1", answer())
    env.shard_dir("code-review-shard-2", answer())
    code, out, _ = env.review("--allow-unreviewed-files", plan_file=plan_file)
    assert code == 0
    assert "`package-lock.json` (2,400,000 bytes)" in env.posted()[-1]["body"]
    assert out["not-reviewed-count"] == "1"
    assert env.states()[-1] == ("success", "Reviewed but 1 file(s) too large, no findings "
                                "(agent: comment)")
    (env.tmp / "found" / "code-review-shard-2" / "findings.json").unlink()
    code, _, _ = env.review("--allow-unreviewed-files", plan_file=plan_file)
    assert code == EXIT_RUN_FAILED  # a shard without an answer is never allowed
    assert env.states()[-1][1].startswith("Not all reviewed: 2 file(s) not reviewed (shard 2 "
                                          "of 2 did not answer)")


def test_a_gap_reason_quoting_the_agent_is_shown_inert(env: Env) -> None:
    env.shard_dir("code-review-shard-1", answer())
    env.shard_dir("code-review-shard-2", json.dumps(
        {"summary": "x", "verdict": "<img src=https://evil/p.png> @octocat", "findings": []}))
    code, _, _ = env.review()
    assert code == EXIT_RUN_FAILED
    (posted,) = env.posted()
    assert "<img" not in posted["body"]
    assert "@octocat" not in posted["body"]


@pytest.mark.parametrize(("args", "message"), [
    (("--findings", "{}"), "findings and findings-file are not taken with it"),
])
def test_plan_file_inputs_are_checked_before_any_request(env: Env, args: tuple[str, ...],
                                                         message: str) -> None:
    code, _, log = env.review(*args)
    assert code == EXIT_USAGE
    assert message in log
    assert env.gh.requests == []
