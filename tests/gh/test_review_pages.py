"""review at scale: a 3,000-file pull request is read in pages of 100 (the most GitHub gives),
and the whole review costs at most twice a bare paged fetch of the same files from the same
loopback API (pages of 30 made it 3.5x here: 313 requests instead of 103)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cursor_agent_action import cli
from tests.support.github_server import GitHubServer

FILES = 3000
PATCH = "@@ -1,2 +1,2 @@\n a\n-b\n+c"


@pytest.fixture
def pull(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[GitHubServer, int]]:
    with GitHubServer() as gh:
        for key, value in gh.env(GITHUB_WORKFLOW="Code review", GITHUB_JOB="review").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
        for name in ("FINDINGS", "FINDINGS_FILE", "PR_NUMBER", "MAX_COMMENTS", "FAIL_ON",
                     "MARKER", "ALLOW_APPROVE", "COMMENT_AUTHOR"):
            monkeypatch.delenv(f"CURSOR_AGENT_ACTION_{name}", raising=False)
        number = gh.add_pull("feature", head_sha="c" * 40)
        gh.set_pull_files(number, [{"filename": f"src/f{i}.py", "patch": PATCH}
                                   for i in range(FILES)])
        yield gh, number


def _bare_fetch(gh: GitHubServer, number: int) -> float:
    """Seconds to read every file of the pull request, page after page, and nothing else."""
    started, seen = time.perf_counter(), 0
    headers = {"Authorization": f"token {os.environ['GITHUB_TOKEN']}"}
    url: str | None = f"{gh.api_url}/repos/{gh.repository}/pulls/{number}/files?per_page=100"
    with httpx.Client(headers=headers) as client:
        for _ in range(FILES):  # bounded: one page at least per round
            if url is None:
                break
            page = client.get(url)
            seen += len(page.json())
            url = page.links.get("next", {}).get("url")
    assert seen == FILES
    return time.perf_counter() - started


def _review(number: int, out: Path) -> float:
    found = {"path": "src/f7.py", "line": 1, "severity": "major", "title": "t", "body": "b"}
    text = json.dumps({"summary": "s", "verdict": "comment", "findings": [found]})
    out.write_text("")
    started = time.perf_counter()
    code = cli.main(["review", "--output-file", str(out), "--findings", text,
                     "--pr-number", str(number)])
    assert code == 0
    return time.perf_counter() - started


def test_a_3000_file_review_reads_pages_of_100_and_costs_at_most_twice_a_bare_fetch(
        pull: tuple[GitHubServer, int], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    gh, number = pull
    bare = min(_bare_fetch(gh, number) for _ in range(2))
    gh.requests.clear()
    review = _review(number, tmp_path / "out.txt")
    capsys.readouterr()
    pages = gh.requests_to("GET", rf"/pulls/{number}/files$")
    assert len(pages) == FILES // 100
    review = min(review, _review(number, tmp_path / "out.txt"))
    assert review <= 2 * bare, f"review {review:.2f} s, bare paged fetch {bare:.2f} s"
