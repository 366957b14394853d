"""review: one pull request review from the agent's findings, against the loopback GitHub API
(which checks every comment's line against the diff on its own, as GitHub does)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_RUN_FAILED, EXIT_USAGE
from cursor_agent_action.gh.review import command as review
from cursor_agent_action.gh.review.text import Prose
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import GitHubServer, error_line

APP_PATCH = (
    "@@ -1,4 +1,5 @@\n"
    " import os\n"
    "-OLD = 1\n"
    "+NEW = 1\n"
    "+EXTRA = 2\n"
    " def main():\n"
    "     pass\n"
    "@@ -20,3 +21,4 @@ def later():\n"
    "     a = 1\n"
    "+    b = 2\n"
    "     c = 3\n"
    " end"
)  # new file: lines 1-5 and 21-24 in the diff (2, 3, 22 added); old: 1-4 and 20-22 (2 deleted)
FILES: list[dict[str, Any]] = [
    {"filename": "src/app.py", "patch": APP_PATCH},
    {"filename": "docs/new name.md", "status": "renamed", "previous_filename": "docs/old.md",
     "patch": "@@ -1,2 +1,2 @@\n # Title\n-old\n+new"},
    {"filename": "logo.png", "status": "modified"},  # binary: GitHub sends no patch
    {"filename": "gone.txt", "status": "removed", "deletions": 2,
     "patch": "@@ -1,2 +0,0 @@\n-a\n-b"},
]


def finding(path: str = "src/app.py", line: int = 3, **extra: Any) -> dict[str, Any]:
    return {"path": path, "line": line, "severity": "major", "title": f"{path}:{line}",
            "body": "Something is off here.", **extra}


def answer(*found: dict[str, Any], verdict: str = "comment",
           summary: str = "Two issues.") -> str:
    return json.dumps({"summary": summary, "verdict": verdict, "findings": list(found)})


@dataclass
class Env:
    gh: GitHubServer
    number: int
    out: Path
    capsys: pytest.CaptureFixture[str]

    def review(self, text: str, *args: str) -> tuple[int, dict[str, str], str]:
        self.out.write_text("")
        self.capsys.readouterr()
        code = cli.main(["review", "--output-file", str(self.out), "--findings", text,
                         "--pr-number", str(self.number), *args])
        return code, parse_output_file(self.out.read_text()), self.capsys.readouterr().out

    def posted(self) -> list[dict[str, Any]]:
        """The bodies of the POST /reviews requests, in order."""
        return [r.body for r in self.gh.requests_to("POST", r"/pulls/\d+/reviews$")]

    def comments(self, review_id: str | int) -> list[dict[str, Any]]:
        return [c for c in self.gh.state.review_comments.values()
                if c["pull_request_review_id"] == int(review_id)]


@contextlib.contextmanager
def open_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> Iterator[Env]:
    """A pull request with FILES on the loopback API, the runner's variables pointing at it."""
    with GitHubServer(per_page_max=2) as gh:  # pages of 2: every list is read across pages
        for key, value in gh.env(GITHUB_WORKFLOW="Code review", GITHUB_JOB="review").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
        for name in ("FINDINGS", "FINDINGS_FILE", "PR_NUMBER", "MAX_COMMENTS", "FAIL_ON",
                     "MARKER", "ALLOW_APPROVE", "COMMENT_AUTHOR", "STATUS_CONTEXT", "HEAD_SHA",
                     "MARK_PENDING"):
            monkeypatch.delenv(f"CURSOR_AGENT_ACTION_{name}", raising=False)
        number = gh.add_pull("feature", head_sha="c" * 40)
        gh.set_pull_files(number, FILES)
        yield Env(gh, number, tmp_path / "out.txt", capsys)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Env]:
    with open_env(tmp_path, monkeypatch, capsys) as opened:
        yield opened


def test_findings_land_on_their_lines_on_both_sides_renamed_and_deleted_files(env: Env) -> None:
    code, out, log = env.review(answer(
        finding(line=3),  # an added line
        finding(line=2, side="LEFT"),  # the deleted line, on the old side
        finding(line=4, start_line=2),  # lines 2-4 of the new file: one hunk
        finding(line=1, title="context line"),  # unchanged context is in the diff too
        finding("docs/new name.md", 2),  # a renamed file, by its new path
        finding("docs/old.md", 2, side="LEFT", title="by the old name"),
        finding("gone.txt", 2, side="LEFT"),  # a deleted file: its old lines
    ))
    assert code == 0, log
    assert out["comments-posted"] == "7"
    assert out["outside-diff"] == "0"
    assert out["highest-severity"] == "major"
    (posted,) = env.posted()
    assert posted["commit_id"] == "c" * 40  # the head the diff was read at
    spots = {(c["path"], c.get("start_line"), c["line"], c["side"]) for c in posted["comments"]}
    assert spots == {("src/app.py", None, 3, "RIGHT"), ("src/app.py", None, 2, "LEFT"),
                     ("src/app.py", 2, 4, "RIGHT"), ("src/app.py", None, 1, "RIGHT"),
                     ("docs/new name.md", None, 2, "RIGHT"),
                     ("docs/new name.md", None, 2, "LEFT"), ("gone.txt", None, 2, "LEFT")}
    # The server took every line (it answers 422 otherwise) and kept them.
    assert len(env.comments(out["review-id"])) == 7
    assert out["review-url"].endswith(f"#pullrequestreview-{out['review-id']}")


def test_a_finding_outside_the_diff_goes_to_the_body_with_the_reason(env: Env) -> None:
    code, out, _ = env.review(answer(
        finding(line=10),  # between the hunks
        finding("README.md", 1),  # not changed by the pull request
        finding("logo.png", 1),  # binary
        finding(line=3, side="LEFT"),  # old line 3 is context: it is in the diff
    ))
    assert code == 0
    assert (out["comments-posted"], out["outside-diff"]) == ("1", "3")
    body = env.posted()[0]["body"]
    outside = body.split("#### Outside the diff")[1]
    assert "`src/app.py` line 10 (line 10 of the new file is not in the diff)" in outside
    assert "`README.md` line 1 (not a file this pull request changes)" in outside
    assert "`logo.png` line 1 (GitHub shows no diff for it" in outside
    assert "Something is off here." in outside


def test_a_suggestion_becomes_a_suggestion_only_inside_one_hunk(env: Env) -> None:
    code, out, _ = env.review(answer(
        finding(line=3, start_line=2, suggestion="NEW = 2\nEXTRA = 3"),
        finding(line=22, start_line=4, suggestion="across\nhunks", title="two hunks"),
        finding(line=2, side="LEFT", suggestion="OLD = 2", title="old side"),
        finding(line=5, suggestion="    pass  # \u202eevil", title="bidi"),
    ))
    assert code == 0
    comments = {c["body"].split("**major** · ")[1].split("\n")[0]: c
                for c in env.posted()[0]["comments"]}
    ok = comments[r"src/app.py:3"]
    assert (ok["start_line"], ok["line"]) == (2, 3)
    assert "```suggestion\nNEW = 2\nEXTRA = 3\n```" in ok["body"]
    across = comments["two hunks"]
    # Shown on its last line only, the replacement as plain code: not a one-click suggestion.
    assert "start_line" not in across
    assert across["line"] == 22
    assert "```suggestion" not in across["body"]
    assert "not offered as a suggestion: lines 4-22 are not all in one hunk" in across["body"]
    assert "```suggestion" not in comments["old side"]["body"]
    assert "```suggestion" not in comments["bidi"]["body"]
    assert "direction, control or other invisible characters" in comments["bidi"]["body"]
    assert out["comments-posted"] == "4"


@pytest.mark.parametrize("char", ["\ufe0f", "\u200b", "\ufeff", "\u00ad", "\u115f"])
def test_a_suggestion_with_an_invisible_character_is_never_offered_altered(
    env: Env, char: str
) -> None:
    """Shown escaped (\\ufe0f), a one-click suggestion would commit other text than the agent
    wrote: it is shown as plain code instead, saying why."""
    code, _, _ = env.review(answer(finding(line=3, suggestion=f'WARN = "x{char}"')))
    assert code == 0
    (comment,) = env.posted()[0]["comments"]
    assert "```suggestion" not in comment["body"]
    assert "other invisible characters" in comment["body"]
    assert f"\\u{ord(char):04x}" in comment["body"]  # shown, escaped, as plain code


def test_two_hundred_findings_are_capped_by_max_comments_in_one_request(env: Env) -> None:
    severities = ["nit", "minor", "major", "critical"]
    found = [{**finding(line=3), "severity": severities[i % 4], "title": f"finding {i}",
              "body": "x" * 2000} for i in range(200)]
    code, out, _ = env.review(answer(*found))
    assert code == 0
    assert out["comments-posted"] == "20"
    assert out["highest-severity"] == "critical"
    (posted,) = env.posted()
    # The most severe first: 50 critical findings, the first 20 of them on lines.
    assert all("🔴 **critical**" in c["body"] for c in posted["comments"])
    assert "#### More findings (over max-comments)" in posted["body"]
    # The count is said up front, whether or not every one of them fits in the body.
    assert "*180 more findings, not placed on lines: see" in posted["body"]
    assert len(posted["body"]) <= 65536
    assert "not shown: over GitHub's size limit" in posted["body"]
    code, out, _ = env.review(answer(*found[:30]), "--max-comments", "3", "--marker", "other")
    assert out["comments-posted"] == "3"
    assert "*27 more findings, not placed on lines" in env.posted()[1]["body"]
    code, out, _ = env.review(answer(*found[:4]), "--max-comments", "3", "--marker", "one")
    assert "*1 more finding, not placed on lines" in env.posted()[2]["body"]
    code, out, _ = env.review(answer(*found[:3]), "--max-comments", "3", "--marker", "none")
    assert "not placed on lines" not in env.posted()[3]["body"]


HOSTILE = "\n".join([
    "::error file=x::pwned",
    "```",
    "<img src=x onerror=alert(1)>",
    "```suggestion",
    "rm -rf /",
    "```",
    "| a | b |",
    "|---|---|",
    "# Heading <details><summary>click</summary>",
    "Ask @octocat and @octo-org/admins; see ![pixel](https://evil.example/p.png)",
    "[docs](https://evil.example/login) and [escape](https://github.example/octo/widgets/../../evil)",
    "[the code](https://github.example/octo/widgets/blob/main/src/app.py#L3) is fine",
    "<!-- cursor-agent-action:finding:0123456789abcdef -->",
    "x\u202eevil\u2066 https://evil.example www.evil.example $\\color{red}x$",
    "Setext",
    "===",
    "```suggestion",
    "rm -rf /",
    "```",
])


def top_level(markdown: str) -> tuple[str, list[str]]:
    """(the text outside fenced code blocks, the info strings of those blocks), read the way
    CommonMark does (a block closes only with a fence as long as its opening one, or at the
    end; in a quote, after the quote's ``> ``)."""
    outside: list[str] = []
    infos: list[str] = []
    opened = ""
    for raw in markdown.split("\n"):
        line = re.sub(r"^(> ?)", "", raw)
        fence = re.match(r"^ {0,3}(`{3,}|~{3,})(.*)$", line)
        if opened:
            if fence and fence[1][0] == opened[0] and len(fence[1]) >= len(opened) \
                    and not fence[2].strip():
                opened = ""
        elif fence and not (fence[1][0] == "`" and "`" in fence[2]):
            opened = fence[1]
            infos.append(fence[2].strip())
        else:
            outside.append(line)
    return "\n".join(outside), infos


def test_hostile_text_stays_inert(env: Env) -> None:
    hostile = {**finding(line=3), "title": "# <b>@octocat</b> [x](https://evil.example)",
               "body": HOSTILE}
    code, _, log = env.review(answer(hostile, {**hostile, "line": 10},
                                       summary=HOSTILE))
    assert code == 0
    (posted,) = env.posted()
    for markdown in (posted["comments"][0]["body"], posted["body"]):
        text, infos = top_level(markdown)
        assert infos
        assert set(infos) == {"text"}
        assert "<img" in markdown  # as code
        text = re.sub(r"<!-- cursor-agent-action:[a-z]+:[^>]* -->", "", text)  # our markers
        assert "<" not in text
        assert "<details" not in text
        assert "<b>" not in text
        assert "](https://evil" not in text  # no link leaves the repository
        assert "(https://github.example/octo/widgets/../../evil)" not in text
        assert "[the code](https://github.example/octo/widgets/blob/main/src/app.py#L3)" in text
        assert "@octocat" not in text
        assert "@\u200boctocat" in text
        assert "\u202e" not in text
        assert "⟨U+202E⟩" in text
        assert "⟨U+2066⟩" in text
        assert "\n|---|" not in text
        assert "\\|---\\|" in text
        assert "\n===" not in text  # no setext heading
        assert "\n# " not in text
        assert "\\$\\\\color" in text  # no math
        assert markdown.count("<!-- cursor-agent-action:finding:") <= 1  # only our own
        assert "https:\u200b//evil.example" in text
        assert "www\u200b.evil" in text
    assert "pwned" not in log
    assert "::error file=x" not in log


@pytest.mark.parametrize("info", ["math", "mermaid", "geojson", "topojson", "stl", "Mermaid",
                                  "suggestion"])
def test_a_block_github_would_render_as_a_picture_or_a_change_is_shown_as_text(
    info: str,
) -> None:
    rendered = Prose("https://github.example/octo/widgets").render(f"```{info}\ngraph TD\n```")
    assert rendered.startswith("```text\n")


@pytest.mark.parametrize("text", ["- - -", "- ---", "* ***", "- 1. x", "+ + +", "- ===",
                                  "- # heading", "- > quote"])
def test_what_follows_a_bullet_starts_no_other_block(text: str) -> None:
    rendered = Prose("https://github.example/octo/widgets").render(text)
    assert rendered.startswith("- ")
    assert re.match(r"[-*+=#>]|\d+[.)]", rendered[2:]) is None, rendered


def test_invisible_characters_in_a_body_are_shown_escaped() -> None:
    rendered = Prose("https://github.example/octo/widgets").render(
        "safe\u200bword \ufeff \u00ad line1\u2028line2")
    for char in "\u200b\ufeff\u00ad\u2028":
        assert char not in rendered
    assert "\\u200b" in rendered
    assert "\\u2028" in rendered


def test_a_rerun_minimizes_the_earlier_comments_and_keeps_a_finding_that_still_holds(
    env: Env,
) -> None:
    still = finding(line=3, title="still holds")
    fixed = finding(line=22, title="fixed since")
    code, first, _ = env.review(answer(still, fixed))
    assert code == 0
    # Someone quotes our marker in their own review: not ours, never touched.
    env.gh.state.reviews[1] = {"id": 1, "_pull": env.number, "user": {"login": "mallory"},
                               "body": env.posted()[0]["body"], "state": "COMMENTED",
                               "html_url": "x"}
    new = finding(line=2, side="LEFT", title="new one")
    code, second, _ = env.review(answer(still, new))
    assert code == 0
    assert second["comments-posted"] == "1"  # only the new finding: the other one is kept
    posted = env.posted()[1]
    assert [c["side"] for c in posted["comments"]] == ["LEFT"]
    old = {c["body"].split("· ")[1].split("\n")[0]: c for c in env.comments(first["review-id"])}
    assert old["still holds"]["_minimized"] == ""
    assert old["fixed since"]["_minimized"] == "OUTDATED"
    assert "#### Still open from the earlier review" in posted["body"]
    assert old["still holds"]["html_url"] in posted["body"]
    earlier = env.gh.state.reviews[int(first["review-id"])]
    assert "replaced by [a newer one]" in earlier["body"]
    assert second["review-url"] in earlier["body"]
    assert env.gh.state.reviews[1]["body"] == posted["body"] or "mallory" in str(
        env.gh.state.reviews[1]["user"])
    assert "replaced" not in env.gh.state.reviews[1]["body"]
    # A third run: the kept comment and the new one go; a finding that comes back is posted
    # again (its earlier comment was hidden), not taken for one still shown.
    code, third, _ = env.review(answer(fixed))
    assert third["comments-posted"] == "1"
    assert old["still holds"]["_minimized"] == "OUTDATED"
    assert all(c["_minimized"] == "OUTDATED" for c in env.comments(second["review-id"]))
    assert env.comments(third["review-id"])[0]["_minimized"] == ""


def test_the_superseded_tag_quoted_by_the_agent_does_not_keep_its_review_from_being_replaced(
    env: Env,
) -> None:
    """Our tag in the agent's own text (a code span, a fenced block) is not the tag we write
    under the marker: the earlier review is still marked as replaced."""
    tag = "<!-- cursor-agent-action:superseded -->"
    code, first, _ = env.review(answer(
        finding(line=3), summary=f"see `{tag}`\n\n```\n{tag}\n```"))
    assert code == 0
    code, second, _ = env.review(answer(finding(line=22)))
    assert code == 0
    earlier = env.gh.state.reviews[int(first["review-id"])]
    assert "replaced by [a newer one]" in earlier["body"]
    assert second["review-url"] in earlier["body"]


def test_a_finding_whose_line_went_outdated_is_posted_again(env: Env) -> None:
    code, first, _ = env.review(answer(finding(line=22)))
    # A push moves the second hunk ten lines down: line 22 leaves the diff.
    files = [{**FILES[0], "patch": APP_PATCH.replace("@@ -20,3 +21,4 @@", "@@ -20,3 +31,4 @@")}]
    env.gh.set_pull_files(env.number, [*files, *FILES[1:]])
    (old,) = env.comments(first["review-id"])
    assert old["line"] is None
    moved = {**finding(line=32), "title": finding(line=22)["title"]}  # the same finding
    code, second, _ = env.review(answer(moved))
    assert code == 0
    assert second["comments-posted"] == "1"
    assert old["_minimized"] == "OUTDATED"


def test_fail_on_requests_changes_and_fails_after_posting(env: Env) -> None:
    code, out, log = env.review(answer(finding(severity="minor"), finding(line=10)),
                                "--fail-on", "major")
    assert code == EXIT_RUN_FAILED
    assert env.posted()[0]["event"] == "REQUEST_CHANGES"
    assert out["review-id"]
    assert out["highest-severity"] == "major"
    assert "1 finding(s) at severity major or worse" in error_line(log)
    code, _, _ = env.review(answer(finding(severity="minor")), "--fail-on", "major",
                            "--marker", "second")
    assert code == 0
    assert env.posted()[1]["event"] == "COMMENT"


def test_the_agents_approval_is_a_comment_unless_allowed(env: Env) -> None:
    """A prompt injection in the pull request could make the agent approve it."""
    assert env.review(answer(verdict="approve"))[0] == 0
    assert env.posted()[0]["event"] == "COMMENT"
    assert "allow-approve is off" in env.posted()[0]["body"]
    assert env.review(answer(verdict="approve"), "--allow-approve")[0] == 0
    assert env.posted()[1]["event"] == "APPROVE"
    assert env.review(answer(verdict="request-changes"))[0] == 0
    assert env.posted()[2]["event"] == "REQUEST_CHANGES"


def test_a_huge_diff_is_read_up_to_the_cap(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review, "MAX_PATCH_CHARS", 5000)
    monkeypatch.setattr(review, "MAX_FILES", 6)
    huge = "@@ -0,0 +1,2000 @@\n" + "".join(f"+line {n}\n" for n in range(2000))
    more = [{"filename": f"gen/{n}.txt", "status": "added", "patch": huge} for n in range(4)]
    env.gh.set_pull_files(env.number, [*FILES, *more])
    code, out, _ = env.review(answer(finding(line=3), finding("gen/0.txt", 5),
                                     finding("gen/3.txt", 5)))
    assert code == 0
    assert (out["comments-posted"], out["outside-diff"]) == ("1", "2")
    body = env.posted()[0]["body"]
    assert "the diff is over the 5,000 characters this step reads" in body
    assert "not among the files read (GitHub lists 6 files of a pull request, and this one is " \
           "not among them)" in body
    assert len(env.gh.requests_to("GET", r"/files$")) == 3  # 6 files, pages of 2


def test_a_body_that_renders_too_long_is_cut_before_rendering(env: Env) -> None:
    """8,000 direction controls become 80,000 characters of ⟨U+202E⟩: more than GitHub takes."""
    code, out, _ = env.review(answer(finding(body="\u202e" * 8000, suggestion="x" * 20000)))
    assert code == 0
    assert out["comments-posted"] == "1"
    (comment,) = env.posted()[0]["comments"]
    assert len(comment["body"]) <= 65536
    assert "cut to fit GitHub's size limit" in comment["body"]
    assert comment["body"].endswith("x" * 100 + "\n```")  # the suggestion whole


def test_the_tokens_own_pull_request_gets_a_comment_and_the_step_still_fails(
    env: Env,
) -> None:
    """GitHub lets no one request changes on (or approve) their own pull request: e.g. a fix
    the bot proposed. The review is posted as a comment; fail-on still fails the step."""
    env.gh.state.pulls[env.number]["user"] = {"login": "github-actions[bot]"}
    code, out, log = env.review(answer(finding(severity="critical")), "--fail-on", "critical")
    assert code == EXIT_RUN_FAILED
    first, second = env.posted()
    assert (first["event"], second["event"]) == ("REQUEST_CHANGES", "COMMENT")
    assert len(second["comments"]) == 1
    assert out["comments-posted"] == "1"
    assert "the pull request is the token's own" in second["body"]
    assert "their own pull request" in log


def test_github_refusing_a_line_puts_every_finding_in_the_body(env: Env) -> None:
    env.gh.fail("POST", r"/reviews$", 422, message="Unprocessable Entity")
    code, out, log = env.review(answer(finding(line=3)))
    assert code == 0
    first, second = env.posted()
    assert len(first["comments"]) == 1
    assert second["comments"] == []
    assert "src/app.py:3" in second["body"]
    assert out["comments-posted"] == "0"
    assert "::warning" in log
    assert "every finding is in the review body" in log


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "findings is not JSON"),
    (json.dumps({"summary": "", "verdict": "merge", "findings": []}), "verdict must be one of"),
    (answer(finding(line=0)), "finding 1 line must be a line number"),
    (answer(finding(line=3, start_line=5)), "finding 1 start_line 5 is after line 3"),
    (answer({**finding(), "severity": "blocker"}), "severity must be one of"),
    ("", "no findings"),
])
def test_a_bad_answer_is_one_clear_error_before_any_request(
    env: Env, text: str, message: str,
) -> None:
    code, _, log = env.review(text)
    assert code == EXIT_USAGE
    assert message in error_line(log)
    assert env.gh.requests == []


def test_findings_file_and_the_events_pull_request(env: Env, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "answer.json"
    path.write_text(answer(finding()))
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": env.number}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    env.out.write_text("")
    code = cli.main(["review", "--output-file", str(env.out), "--findings-file", str(path)])
    assert code == 0
    assert parse_output_file(env.out.read_text())["comments-posted"] == "1"


def test_the_review_summary_gives_the_findings_by_severity_on_top(
    env: Env, tmp_path: Path,
) -> None:
    """Issue 42: the step's summary opens with the findings by severity and where they went;
    its link is the run's server's, like every other link of the run."""
    summary = tmp_path / "summary.md"
    code, out, log = env.review(answer(finding(line=3), finding("README.md", 1, severity="minor")),
                                "--summary-file", str(summary))
    assert code == 0, log
    lines = summary.read_text().splitlines()
    assert lines[0] == "## Code review: 2 findings (🟠 1 major · 🟡 1 minor)"
    assert lines[2] == (f"[The review]({out['review-url']}): 1 on the diff's lines, 1 in the "
                        "review body")
    assert out["review-url"].startswith(env.gh.server_url + "/")
