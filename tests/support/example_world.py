"""The world the example workflows run in, offline: this project as the action, a loopback
GitHub API, a loopback CLI download server whose package is the stand-in CLI, a user's
repository with a bare "GitHub" remote. Used by ``tests/test_examples_act.py`` and by
``scripts/try_example.py`` (docs/local-testing.md)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cursor_agent_action.agent.install.versions import DEFAULT_CLI_VERSION
from tests.support.act import (
    REPOSITORY,
    ROOT,
    STUBS,
    ActRun,
    base_python,
    copy_project,
    make_repo,
    run_workflow,
    seed_helper_venv,
    stub_repositories,
    unserved_actions,
)
from tests.support.download_server import DownloadServer, Entry, make_archive, package_path
from tests.support.github_server import TOKEN, GitHubServer
from tests.support.standin import make_standin

API_KEY = "crsr-example-5e2d8a91c4b7"
ACTION = "cursor-agent-action/cursor-agent-action@COMMIT_SHA"
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"
HEAD_REF = "feature/retries"

PACKAGES = ("alpha", "beta")
USAGE_BEFORE = "# Usage\n\nRun `widgets serve --retries 3`.\n"
USAGE_AFTER = "# Usage\n\nRun `widgets serve --max-retries 3`.\n"
# The test the head branch's rename breaks (what a CI failure of the pull request is about).
TEST_BEFORE = "from cli import RETRIES\n\n\ndef test_retries() -> None:\n    assert RETRIES == 3\n"
TEST_AFTER = TEST_BEFORE.replace("RETRIES", "MAX_RETRIES")


def recorded(world: World, name: str) -> list[dict[str, Any]]:
    """The stand-in's invocations (without --help probes)."""
    lines = (world.base / "standin" / name).read_text().splitlines()
    return [r for r in map(json.loads, lines) if "--help" not in r["argv"]]


def git(repo: Path, *args: str) -> str:
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
    action: Path  # this project, as act serves cursor-agent-action/cursor-agent-action@COMMIT_SHA
    github: GitHubServer
    downloads: DownloadServer
    main_sha: str
    head_sha: str
    repository: str = REPOSITORY  # owner/name, as act reads it from origin's URL
    base_ref: str = "main"  # the pull request's base and head branches
    head_ref: str = HEAD_REF
    api_key: str = API_KEY  # the CURSOR_API_KEY secret: a test value, or yours (real CLI)

    def local_actions(self, workflow: str) -> dict[str, Path]:
        """What act serves locally for ``workflow``: this project at every ref the workflow
        names it by (``@COMMIT_SHA``, a tag, a SHA), and the checkout stand-in likewise."""
        text = (self.repo / ".github" / "workflows" / workflow).read_text()
        found = {ACTION: self.action, CHECKOUT: STUBS / "checkout"}
        for ref in re.findall(r"cursor-agent-action/cursor-agent-action(?:/[\w-]+)?@([\w.-]+)",
                              text):
            found[f"cursor-agent-action/cursor-agent-action@{ref}"] = self.action
        for ref in re.findall(r"actions/checkout@([\w.-]+)", text):
            found[f"actions/checkout@{ref}"] = STUBS / "checkout"
        return found

    def served_actions(self, workflow: str) -> dict[str, Path]:
        """Every action act serves from this machine for ``workflow`` (ours, checkout, the
        stand-ins for the refs named in the repository or in our actions)."""
        local = self.local_actions(workflow)
        return {**stub_repositories([self.repo, *local.values()]), **local}

    def unserved_actions(self, workflow: str) -> list[str]:
        """The actions ``workflow`` uses that act would have to fetch (none offline)."""
        return unserved_actions(self.repo / ".github" / "workflows" / workflow,
                                self.served_actions(workflow))

    def run(self, workflow: str, event: str, payload: dict[str, Any]) -> ActRun:
        return run_workflow(
            self.repo,
            workflow=workflow,
            event=event,
            payload=payload,
            cache_dir=self.base / "act-cache",
            home=self.base / "home",
            secrets={"CURSOR_API_KEY": self.api_key, "GITHUB_TOKEN": TOKEN},
            env={
                "GITHUB_API_URL": self.github.api_url,
                # The loopback API's own server: every link a job writes (the run, the review,
                # the pull request) names one server, as on GitHub.
                "GITHUB_SERVER_URL": self.github.server_url,
                "CURSOR_CLI_DOWNLOAD_BASE_URL": self.downloads.url,
                # The stand-in's package is not the vendor's: name its hash (a pin is verified).
                "CURSOR_CLI_SHA256": hashlib.sha256(
                    self.downloads.files.get(package_path(DEFAULT_CLI_VERSION), b"")
                ).hexdigest(),
                "CURSOR_AGENT_ACTION_PYTHON": base_python(),
                "ACT_TEST_REPO": str(self.repo),
                # Set by the checkout stand-in in the checkout's own config, where
                # actions/checkout keeps its settings: publish's git reads no global config.
                "ACT_TEST_GIT_CONFIG": f"url.{self.bare}.insteadOf "
                                       f"https://github.com/{self.repository}.git",
                # The checkout stand-in serves the action's repository from here.
                "ACT_TEST_REPOSITORIES": str(self.base / "repositories"),
                # The upload stand-in records each job's workspace here.
                "ACT_TEST_WORKSPACES": str(self.base / "workspaces.jsonl"),
            },
            local_repositories=self.local_actions(workflow),
            timeout_s=180,
        )


def serve_standin_cli(downloads: DownloadServer, base: Path, scenario: dict[str, Any]) -> None:
    """The CLI package the action installs: its ``cursor-agent`` is the stand-in."""
    wrapper = make_standin(base, scenario).read_bytes()
    downloads.files[package_path(DEFAULT_CLI_VERSION)] = make_archive(
        [
            Entry("dist-package", kind="dir", mode=0o755),
            Entry("dist-package/cursor-agent", wrapper, mode=0o755),
        ]
    )


MAX_CLI_FILES = 20000
MAX_CLI_BYTES = 1 << 30


class CliPackageError(Exception):
    """The directory of ``--cli-path`` is not a CLI package that can be served."""


def serve_cli(downloads: DownloadServer, cli_path: Path) -> None:
    """The CLI package the action installs: the directory of the ``cursor-agent`` at
    ``cli_path`` (links followed: ~/.local/bin/cursor-agent leads to its version's directory,
    launcher, node and code, the package the vendor ships), as ``dist-package/``."""
    launcher = cli_path.resolve()
    root = launcher.parent
    entries = [Entry("dist-package", kind="dir", mode=0o755)]
    size = 0
    for path in sorted(root.rglob("*")):
        name = "dist-package/" + path.relative_to(root).as_posix()
        if len(entries) > MAX_CLI_FILES or size > MAX_CLI_BYTES:
            raise CliPackageError(
                f"{root} holds more than {MAX_CLI_FILES} files or {MAX_CLI_BYTES >> 20} MiB: "
                "--cli-path names the cursor-agent of an installed CLI, whose directory is "
                "its package (e.g. ~/.local/bin/cursor-agent).")
        if path.is_symlink():
            entries.append(Entry(name, kind="symlink", target=str(path.readlink())))
        elif path.is_dir():
            entries.append(Entry(name, kind="dir", mode=0o755))
        elif path.is_file():
            data = path.read_bytes()
            size += len(data)
            entries.append(Entry(name, data, mode=path.stat().st_mode & 0o777))
    if launcher.name != "cursor-agent":  # the action runs dist-package/cursor-agent
        entries.append(Entry("dist-package/cursor-agent", kind="symlink", target=launcher.name))
    downloads.files[package_path(DEFAULT_CLI_VERSION)] = make_archive(entries)


@contextlib.contextmanager
def serve_world(base: Path, repo: Path, bare: Path, **fields: Any) -> Iterator[World]:
    """This project as the action, a loopback GitHub API and CLI download server around
    ``repo`` and its "GitHub" remote ``bare``; ``fields`` are the rest of the World's."""
    action = copy_project(base / "repositories" / ACTION.partition("@")[0])
    seed_helper_venv(action, base / "act-cache" / "tool_cache")
    (base / "home").mkdir(exist_ok=True)
    with GitHubServer(fields.get("repository", REPOSITORY)) as github, \
            DownloadServer() as downloads:
        github.git_dir = bare  # git refs and GraphQL commits happen in the "GitHub" remote
        yield World(base, repo, bare, action, github, downloads, **fields)


@contextlib.contextmanager
def build_world(base: Path) -> Iterator[World]:
    """The sample world under ``base`` (an empty directory), its servers running until the
    end: a small repository with a pull request that renames a flag."""
    workflows = {p.name: p.read_text() for p in (ROOT / "examples").glob("*.yml")}
    repo = make_repo(
        base / "repo",
        workflows,
        {
            "README.md": "# widgets\n",
            "docs/usage.md": USAGE_BEFORE,
            "src/cli.py": "RETRIES = 3\n",
            "tests/test_cli.py": TEST_BEFORE,
            **{f"packages/{name}/README.md": f"# {name}\n" for name in PACKAGES},
            "packages/gamma/notes.txt": "no README: not a package to review\n",
        },
        project=False,
    )
    main_sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", HEAD_REF)
    (repo / "src" / "cli.py").write_text("MAX_RETRIES = 3\n")
    git(repo, "commit", "-q", "-am", "Rename --retries to --max-retries")
    head_sha = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    bare = base / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    with serve_world(base, repo, bare, main_sha=main_sha, head_sha=head_sha) as world:
        yield world


def pull_request_event(world: World, number: int, head_repo: str = "",
                       head_sha: str = "") -> dict[str, Any]:
    repository = {"full_name": world.repository, "name": world.repository.split("/")[1]}
    head_repo = head_repo or world.repository
    pull = world.github.state.pulls.get(number) or {}
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "changed_files": int(pull.get("changed_files") or 0),
            "head": {"ref": world.head_ref, "sha": head_sha or world.head_sha,
                     "repo": {"full_name": head_repo}},
            "base": {"ref": world.base_ref, "sha": world.main_sha, "repo": repository},
        },
        "repository": repository,
    }




def comment_event(world: World, number: int, body: str, *, login: str = "maintainer"
                  ) -> dict[str, Any]:
    """An ``issue_comment`` (created) on pull request ``number``."""
    user = {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}
    return {"action": "created",
            "issue": {"number": number, "pull_request": {"url": f"{world.github.api_url}/pulls"}},
            "comment": {"id": 1, "body": body, "user": user}, "sender": user,
            "repository": {"full_name": world.repository,
                           "name": world.repository.split("/")[1]}}


def add_failed_run(world: World, log: bytes, *, branch: str = "",
                   pull_numbers: tuple[int, ...] = (), step: str = "Run pytest") -> int:
    """A failed CI run (one job, `tests`, failing at ``step`` with ``log``) on the head."""
    return world.github.add_run(
        [{"name": "tests", "conclusion": "failure", "log": log,
          "steps": [(step, "failure", "2026-11-22T01:00:00Z", "2026-11-22T01:00:02Z")]}],
        head_sha=world.head_sha, head_branch=branch or world.head_ref, pull_numbers=pull_numbers)


def workflow_run_event(world: World, run_id: int, *, branch: str = "",
                       pull_numbers: tuple[int, ...] = ()) -> dict[str, Any]:
    """The ``workflow_run`` (completed, failure) event of run ``run_id`` in this repository."""
    return {"action": "completed", "repository": {"full_name": world.repository},
            "workflow_run": {
        "id": run_id, "name": "CI", "conclusion": "failure", "status": "completed",
        "head_sha": world.head_sha, "head_branch": branch or world.head_ref,
        "html_url": f"https://github.com/{world.repository}/actions/runs/{run_id}",
        "head_repository": {"full_name": world.repository},
        "pull_requests": [{"number": n} for n in pull_numbers]}}


CLI_PATCH = "@@ -1 +1 @@\n-RETRIES = 3\n+MAX_RETRIES = 3"
"""The pull request's change (HEAD_REF against main), as GET /pulls/{n}/files gives it."""


def add_review_pull(world: World) -> int:
    """The pull request of HEAD_REF, with its changed file for the files and diff endpoints."""
    number = world.github.add_pull(HEAD_REF, head_sha=world.head_sha)
    world.github.set_pull_files(number, [{"filename": "src/cli.py", "patch": CLI_PATCH}])
    return number


def add_large_review_pull(world: World, count: int, per_directory: int = 50) -> int:
    """A pull request of HEAD_REF plus a push adding ``count`` files (``per_directory`` to a
    directory, a test beside each tenth module), in the user's repository (what checkout
    serves) and its "GitHub" remote, every one listed by the files endpoint as GitHub would
    (pages of 100; its diff endpoint answers 406 past 300 files, as GitHub's does)."""
    tree = world.base / f"large-{count}"
    git(world.repo, "worktree", "add", "-q", "--detach", str(tree), world.head_sha)
    files: list[dict[str, Any]] = [{"filename": "src/cli.py", "patch": CLI_PATCH}]
    try:
        for i in range(count):
            folder = f"pkg{i // per_directory:03d}"
            name = (f"{folder}/test_mod{i - 1}.py" if i % 10 == 9 else f"{folder}/mod{i}.py")
            lines = [f"VALUE_{i} = {i}  # {'x' * 60}", f"def f{i}() -> int:",
                     f"    return VALUE_{i} * 2"]
            (tree / folder).mkdir(exist_ok=True)
            (tree / name).write_text("\n".join(lines) + "\n")
            files.append({"filename": name, "status": "added", "additions": len(lines),
                          "patch": f"@@ -0,0 +1,{len(lines)} @@\n"
                                   + "\n".join(f"+{x}" for x in lines)})
        git(tree, "add", "-A")
        git(tree, "commit", "-q", "-m", f"Add {count} modules")
        sha = git(tree, "rev-parse", "HEAD")
    finally:
        git(world.repo, "worktree", "remove", "--force", str(tree))
    ref = f"refs/heads/large-{sha[:12]}"
    git(world.repo, "update-ref", ref, sha)
    git(world.bare, "fetch", "-q", str(world.repo), f"{ref}:{ref}")
    number = world.github.add_pull(HEAD_REF, head_sha=sha)
    world.github.state.pulls[number]["base"]["sha"] = world.main_sha
    world.github.set_pull_files(number, files)  # listed: the first 3,000, as GitHub does
    world.github.state.diff_too_large.add(number)
    return number


def new_push(world: World, number: int, message: str) -> str:
    """A new head commit of pull request ``number`` (HEAD_REF's tree, on top of its head), in
    the user's repository (what checkout serves) and its "GitHub" remote, and the pull
    request's head in the API moved to it; its changed files stay those of add_review_pull."""
    pull = world.github.state.pulls[number]
    sha = git(world.repo, "commit-tree", f"{world.head_sha}^{{tree}}", "-p",
              str(pull["head"]["sha"]), "-m", message)
    git(world.repo, "update-ref", f"refs/heads/push-{sha[:12]}", sha)
    ref = f"refs/heads/push-{sha[:12]}"
    git(world.bare, "fetch", "-q", str(world.repo), f"{ref}:{ref}")
    pull["head"]["sha"] = sha
    return sha


def review_answer(findings: list[dict[str, Any]], summary: str = "One rename, one risk.",
                  verdict: str = "comment") -> str:
    """What the stand-in agent answers in code-review.yml: a report ending in the JSON."""
    value = {"summary": summary, "verdict": verdict, "findings": findings}
    return f"Reviewed the change.\n\n```json\n{json.dumps(value)}\n```"
