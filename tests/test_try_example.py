"""scripts/try_example.py, as docs/local-testing.md shows it: each documented command runs as
written and prints every job's result and summary and the text of what was posted; any
workflow file runs, naming the action at any ref."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.act import ROOT

pytestmark = pytest.mark.act

PAGE = ROOT / "docs" / "local-testing.md"


def _documented() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", PAGE.read_text(), re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.startswith(".venv/bin/python scripts/try_example.py")]


def _try(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "try_example.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_the_page_shows_an_example_and_an_own_workflow() -> None:
    commands = _documented()
    assert any("--workflow" in c for c in commands)
    assert any("--workflow" not in c for c in commands)
    assert not re.search(r"^\s*(\.venv/bin/)?act\b", PAGE.read_text(), re.M)


@pytest.mark.parametrize("command", _documented())
def test_each_documented_command_runs_and_shows_what_was_posted(command: str) -> None:
    argv = shlex.split(command)
    assert argv[:2] == [".venv/bin/python", "scripts/try_example.py"]
    done = _try(*argv[2:])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "== job " in done.stdout
    assert not re.search(r"^== job \S+: (?!success)", done.stdout, re.M)
    assert "Cursor agent: failure" not in done.stdout
    posted = done.stdout.split("== what the jobs posted to the GitHub API")[1]
    assert "-- POST /repos/octo-org/octo-repo/issues/1/comments" in posted
    assert "✅ **Cursor agent: success**" in posted  # the comment's text, not only its URL
    # The stand-in's change went through its write tool: no warning about the shell.
    assert "without a write tool" not in done.stdout


def test_a_large_code_review_shows_its_shards_and_the_one_merged_review() -> None:
    """--pr-files: the sample's pull request past GitHub's diff limits; the example runs one
    agent job per shard, the stand-in answers each about its own shard, and one review and
    one final status come of them."""
    done = _try("code-review", "--pr-files", "1500")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    planned = re.search(r"^== the shards planned \(code-review-plan\): (\d+), for 1501 "
                        r"changed file\(s\)$", done.stdout, re.M)
    assert planned, done.stdout[-3000:]
    count = int(planned.group(1))
    assert count > 1
    legs = re.findall(r"^== job agent \(shard: (\d+)\): success$", done.stdout, re.M)
    assert sorted(map(int, legs)) == list(range(1, count + 1))
    posted = done.stdout.split("== what the jobs posted to the GitHub API")[1]
    assert posted.count("/pulls/1/reviews") == 1
    for shard in range(1, count + 1):
        assert f"Part {shard} (" in posted
        assert f"(part {shard})" in posted  # a line comment of that shard's own files
    assert posted.rstrip().split("\n")[-3:][1:] == [
        "state: success", "description: Reviewed, highest minor: "
        f"{2 * count} minor (agent: comment; none at fail-on major)"]


def test_any_workflow_file_runs_with_the_action_at_any_ref(tmp_path: Path) -> None:
    """A user's own workflow: the action at a tag the repository has never had, a read-only
    review on push; the answer fits (a review: nothing written, nothing published)."""
    workflow = tmp_path / "review.yml"
    workflow.write_text("""name: Review
on: push
permissions: {}
jobs:
  review:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - uses: actions/checkout@v4
        with:
          persist-credentials: false
      - id: agent
        uses: cursor-agent-action/cursor-agent-action@v9.9.9
        with:
          api-key: ${{ secrets.CURSOR_API_KEY }}
          prompt: Review README.md against the code.
""")
    done = _try("--workflow", str(workflow), "--event", "push")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "== job review: success" in done.stdout
    assert "README.md agrees with the code next to it" in done.stdout
    assert "**Changed:** no file" in done.stdout
    assert done.stdout.rstrip().endswith("== what the jobs posted to the GitHub API: nothing")


def test_a_misspelled_secret_fails_at_once_with_the_reason(tmp_path: Path) -> None:
    workflow = tmp_path / "typo.yml"
    workflow.write_text("""name: Typo
on: push
permissions: {}
jobs:
  agent:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA
        with:
          api-key: ${{ secrets.CURSOR_APIKEY }}
          prompt: Anything.
""")
    done = _try("--workflow", str(workflow), "--event", "push")
    assert done.returncode == 1
    assert "== job agent: failure" in done.stdout
    assert "api-key is empty: check the secret's name" in done.stdout


def test_bad_arguments_are_one_line_errors() -> None:
    assert "are for your repository, not --sample" in _try("docs-update", "--base", "x").stderr
    assert "not both" in _try("docs-update", "--workflow", "x.yml", "--event", "push").stderr
    assert "No such file" in _try("--workflow", "missing.yml", "--event", "push").stderr


def test_an_edit_workflow_on_a_failed_run_gets_a_fix_of_the_failing_test(tmp_path: Path) -> None:
    workflow = tmp_path / "ci-fix.yml"
    workflow.write_text("""name: CI fix
on:
  workflow_run:
    workflows: [CI]
    types: [completed]
permissions: {}
jobs:
  fix:
    runs-on: ubuntu-latest
    permissions:
      contents: read
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683
        with:
          ref: ${{ github.event.workflow_run.head_sha }}
          persist-credentials: false
      - id: agent
        uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA
        with:
          api-key: ${{ secrets.CURSOR_API_KEY }}
          permissions: edit
          prompt: Fix the failing test.
""")
    done = _try("--workflow", str(workflow), "--event", "workflow_run")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Fixed tests/test_cli.py" in done.stdout
    assert "| `tests/test_cli.py` |" in done.stdout  # the summary's files changed
    assert "without a write tool" not in done.stdout


def test_a_read_only_workflow_on_a_pull_request_gets_a_review_of_it(tmp_path: Path) -> None:
    workflow = tmp_path / "pr-review.yml"
    workflow.write_text((ROOT / "examples" / "docs-update.yml").read_text().replace(
        "permissions: docs", "permissions: read-only"))
    done = _try("--workflow", str(workflow), "--event", "pull_request")
    assert "docs/usage.md still documents `--retries`" in done.stdout
    assert "== job publish: skipped" in done.stdout  # nothing to publish: it did not run


def test_an_event_file_is_the_payload_as_given(tmp_path: Path) -> None:
    """Your own payload: here a pull request from a fork, which docs-update skips."""
    event = tmp_path / "fork.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 1, "pull_request": {
        "number": 1, "head": {"ref": "x", "sha": "0" * 40, "repo": {"full_name": "someone/fork"}},
        "base": {"ref": "main", "repo": {"full_name": "octo-org/octo-repo"}}}}))
    done = _try("--workflow", str(ROOT / "examples" / "docs-update.yml"), "--event",
                "pull_request", "--event-file", str(event))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "== job agent: skipped" in done.stdout  # its `if:` is false: act does not start it
    assert done.stdout.rstrip().endswith("== what the jobs posted to the GitHub API: nothing")


def test_a_workflow_that_does_not_run_on_the_event_fails_saying_why() -> None:
    done = _try("--workflow", str(ROOT / "examples" / "code-review.yml"), "--event", "push")
    assert done.returncode == 1, done.stdout
    assert "act ran no job:" in done.stdout
    assert "Could not find any stages to run" in done.stdout
    assert "The workflow runs on: pull_request" in done.stdout


def test_matrix_legs_are_told_apart_in_the_order_the_jobs_ran() -> None:
    done = _try("monorepo-matrix")
    assert done.returncode == 0, done.stdout[-3000:]
    jobs = re.findall(r"^== job (.+): (\w+)$", done.stdout, re.M)
    assert jobs[0] == ("packages", "success")
    assert sorted(jobs[1:3]) == [("review (package: alpha)", "success"),
                                 ("review (package: beta)", "success")]  # side by side
    assert jobs[3:] == [("gather", "success")]


def test_jobs_that_did_not_run_are_listed(tmp_path: Path) -> None:
    """A draft pull request: the code-review example skips its jobs, and says so."""
    event = tmp_path / "draft.json"
    event.write_text(json.dumps({"pull_request": {
        "number": 1, "draft": True, "head": {"repo": {"full_name": "octo-org/octo-repo"}},
        "base": {"repo": {"full_name": "octo-org/octo-repo"}}}}))
    done = _try("--workflow", str(ROOT / "examples" / "code-review.yml"), "--event",
                "pull_request", "--event-file", str(event))
    assert "== job review: skipped" in done.stdout, done.stdout[-3000:]
