"""The example workflows (examples/*.yml), run unchanged through act, offline.

What stands in for the outside world:

- the action (`cursor-agent-action/cursor-agent-action@v1` and its sub-actions) is this
  project, mapped with act's ``--local-repository``;
- the Cursor CLI is installed by the action from a loopback download server whose package holds
  the stand-in CLI;
- GitHub's REST API is the loopback server of ``tests/support/github_server.py``
  (``GITHUB_API_URL``); ``origin`` is redirected (git ``insteadOf`` in the job's ``HOME``) to a
  local bare repository;
- ``actions/checkout`` with a ``ref`` and the artifact actions are the stand-ins in
  ``tests/support/actions/``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.install import DEFAULT_CLI_VERSION
from tests.support.act import (
    PROJECT_FILES,
    REPOSITORY,
    ROOT,
    STUBS,
    ActRun,
    base_python,
    make_repo,
    run_workflow,
    seed_helper_venv,
)
from tests.support.download_server import DownloadServer, Entry, make_archive, package_path
from tests.support.github_server import TOKEN, GitHubServer
from tests.support.standin import make_standin

pytestmark = pytest.mark.act

API_KEY = "crsr-example-5e2d8a91c4b7"
ACTION = "cursor-agent-action/cursor-agent-action@v1"
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
HEAD_REF = "feature/retries"

USAGE_BEFORE = "# Usage\n\nRun `widgets serve --retries 3`.\n"
USAGE_AFTER = "# Usage\n\nRun `widgets serve --max-retries 3`.\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@dataclass
class World:
    base: Path
    repo: Path  # the user's repository (what checkout serves)
    bare: Path  # its "GitHub" remote
    action: Path  # this project, as act serves cursor-agent-action/cursor-agent-action@v1
    github: GitHubServer
    downloads: DownloadServer
    main_sha: str
    head_sha: str

    def run(self, workflow: str, event: str, payload: dict[str, Any]) -> ActRun:
        return run_workflow(
            self.repo,
            workflow=workflow,
            event=event,
            payload=payload,
            cache_dir=self.base / "act-cache",
            home=self.base / "home",
            secrets={"CURSOR_API_KEY": API_KEY, "GITHUB_TOKEN": TOKEN},
            env={
                "GITHUB_API_URL": self.github.api_url,
                "CURSOR_CLI_DOWNLOAD_BASE_URL": self.downloads.url,
                "CURSOR_AGENT_ACTION_PYTHON": base_python(),
                "ACT_TEST_REPO": str(self.repo),
            },
            local_repositories={ACTION: self.action, CHECKOUT: STUBS / "checkout"},
            timeout_s=180,
        )


def _serve_standin_cli(downloads: DownloadServer, base: Path, scenario: dict[str, Any]) -> None:
    """The CLI package the action installs: its ``cursor-agent`` is the stand-in."""
    wrapper = make_standin(base, scenario).read_bytes()
    downloads.files[package_path(DEFAULT_CLI_VERSION)] = make_archive(
        [
            Entry("dist-package", kind="dir", mode=0o755),
            Entry("dist-package/cursor-agent", wrapper, mode=0o755),
        ]
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("act-examples")
    action = base / "action"
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, action / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            action.mkdir(exist_ok=True)
            shutil.copy2(src, action / name)
    seed_helper_venv(action, base / "act-cache" / "tool_cache")

    workflows = {p.name: p.read_text() for p in (ROOT / "examples").glob("*.yml")}
    repo = make_repo(
        base / "repo",
        workflows,
        {"README.md": "# widgets\n", "docs/usage.md": USAGE_BEFORE, "src/cli.py": "RETRIES = 3\n"},
        project=False,
    )
    main_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", HEAD_REF)
    (repo / "src" / "cli.py").write_text("MAX_RETRIES = 3\n")
    _git(repo, "commit", "-q", "-am", "Rename --retries to --max-retries")
    head_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    bare = base / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    home = base / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f'[url "{bare}"]\n\tinsteadOf = https://github.com/{REPOSITORY}.git\n'
    )
    with GitHubServer(REPOSITORY) as github, DownloadServer() as downloads:
        yield World(base, repo, bare, action, github, downloads, main_sha, head_sha)


def _pull_request_event(world: World, number: int, head_repo: str = REPOSITORY) -> dict[str, Any]:
    repository = {"full_name": REPOSITORY, "name": REPOSITORY.split("/")[1]}
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "head": {"ref": HEAD_REF, "sha": world.head_sha, "repo": {"full_name": head_repo}},
            "base": {"ref": "main", "sha": world.main_sha, "repo": repository},
        },
        "repository": repository,
    }


@pytest.fixture(scope="module")
def docs_update(world: World) -> tuple[ActRun, int]:
    number = world.github.add_pull(HEAD_REF)
    _serve_standin_cli(
        world.downloads,
        world.base,
        {"edits": {"docs/usage.md": USAGE_AFTER}, "record": "record-docs.jsonl"},
    )
    run = world.run("docs-update.yml", "pull_request", _pull_request_event(world, number))
    assert not run.timed_out, run.explain()
    return run, number


def test_docs_update_agent_job_uploads_patch_and_transcript(
    docs_update: tuple[ActRun, int],
) -> None:
    run, _ = docs_update
    assert run.job_result("agent") == "success", run.explain()
    artifact = run.artifacts / "docs-update"
    assert sorted(p.name for p in artifact.iterdir()) == ["changes.patch", "transcript.jsonl"]
    patch = (artifact / "changes.patch").read_text()
    assert "+Run `widgets serve --max-retries 3`." in patch
    assert "src/cli.py" not in patch


def test_docs_update_publishes_a_branch_with_only_the_docs_change(
    world: World, docs_update: tuple[ActRun, int]
) -> None:
    run, _ = docs_update
    assert run.job_result("publish") == "success", run.explain()
    branch = f"cursor/docs/{HEAD_REF}"
    tip = _git(world.bare, "rev-parse", f"refs/heads/{branch}")
    assert _git(world.bare, "rev-parse", f"{tip}^") == world.head_sha
    assert _git(world.bare, "diff", "--name-only", f"{tip}^", tip) == "docs/usage.md"
    assert _git(world.bare, "show", f"{tip}:docs/usage.md") + "\n" == USAGE_AFTER


def test_docs_update_opens_a_pr_into_the_pr_branch_and_comments(
    world: World, docs_update: tuple[ActRun, int]
) -> None:
    _, number = docs_update
    (created,) = world.github.requests_to("POST", r"/pulls$")
    assert created.body["head"] == f"cursor/docs/{HEAD_REF}"
    assert created.body["base"] == HEAD_REF
    assert created.body["title"] == f"Docs: update for #{number}"
    comments = world.github.requests_to("POST", rf"/issues/{number}/comments$")
    assert len(comments) == 1


def test_docs_update_never_shows_the_keys(docs_update: tuple[ActRun, int]) -> None:
    run, _ = docs_update
    assert run.leaks(API_KEY) == []
    assert run.leaks(TOKEN) == []


def test_docs_update_agent_had_no_github_token(
    world: World, docs_update: tuple[ActRun, int]
) -> None:
    recorded = [
        json.loads(line)
        for line in (world.base / "standin" / "record-docs.jsonl").read_text().splitlines()
    ]
    runs = [r for r in recorded if "--help" not in r["argv"]]
    assert len(runs) == 1
    assert runs[0]["env"]["CURSOR_API_KEY"] == API_KEY
    assert not [name for name in runs[0]["env"] if name.startswith(("GITHUB_TOKEN", "ACTIONS_"))]


def test_docs_update_skips_fork_pull_requests(world: World) -> None:
    """A fork's run has no secrets and a read-only token: both jobs are skipped, not failed."""
    before = len(world.github.requests)
    run = world.run(
        "docs-update.yml", "pull_request", _pull_request_event(world, 99, "someone/fork")
    )
    assert run.returncode == 0, run.explain()
    assert run.job_result("agent") is None  # act does not start a job whose `if` is false
    assert "Update the docs" not in run.log
    assert len(world.github.requests) == before
