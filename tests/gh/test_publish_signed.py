"""publish with commit-signing: api: GitHub makes the commit (GraphQL createCommitOnBranch
over real HTTP to the loopback fake, which commits for real in the bare remote), so it is
signed; the branch is "checked-out commit plus one commit" as in git mode; what the API cannot
write, a GraphQL error and a branch that moved are each one clear error, nothing half-done."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action import changeset
from tests.gh.test_publish import Workspace, sh
from tests.gh.test_publish import ws as workspace_fixture
from tests.gh.test_publish_patch import agent_tree as agent_tree_fixture
from tests.gh.test_publish_patch import make_patch
from tests.support.github_server import error_line

ws = workspace_fixture
agent_tree = agent_tree_fixture
BRANCH = "cursor-agent/docs/feature"


@pytest.fixture(autouse=True)
def _api_git(ws: Workspace) -> None:
    ws.gh.git_dir = ws.remote


def _graphql(ws: Workspace) -> list[dict[str, Any]]:
    return [r.body for r in ws.gh.requests_to("POST", r"^/graphql$")]


def test_the_commit_is_made_and_signed_by_github(
    ws: Workspace, agent_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binary = bytes(range(256))
    before = changeset.baseline(agent_tree)
    (agent_tree / "docs").mkdir()
    (agent_tree / "docs" / "logo.bin").write_bytes(binary)
    (agent_tree / "docs" / "guide.md").write_text("# guide\n")
    (agent_tree / "README.md").unlink()
    patch = tmp_path / "changes.patch"
    changeset.write_patch(agent_tree, changeset.compute(agent_tree, before), patch)
    code, out = ws.publish("--patch-file", str(patch), "--commit-signing", "api")
    assert code == 0, capsys.readouterr().out
    sha = out["commit-sha"]
    assert sha in ws.gh.signed_commits
    assert ws.remote_branch(BRANCH) == sha
    head = sh(ws.repo, "rev-parse", "HEAD")
    assert sh(ws.remote, "rev-parse", f"{sha}^") == head  # checked-out commit + one commit
    files = sh(ws.remote, "show", "--name-status", "--format=", sha).splitlines()
    assert sorted(files) == ["A\tdocs/guide.md", "A\tdocs/logo.bin", "D\tREADME.md"]
    stored = subprocess.run(["git", "-C", str(ws.remote), "cat-file", "blob",
                             f"{sha}:docs/logo.bin"], capture_output=True, check=True).stdout
    assert stored == binary
    [request] = _graphql(ws)
    given = request["variables"]["input"]
    assert given["expectedHeadOid"] == head
    additions = {a["path"]: base64.b64decode(a["contents"]) for a in
                 given["fileChanges"]["additions"]}
    assert additions == {"docs/guide.md": b"# guide\n", "docs/logo.bin": binary}
    assert given["fileChanges"]["deletions"] == [{"path": "README.md"}]
    assert "Cursor-Agent-Action-Run:" in given["message"]["body"]
    assert out["pr-number"]


def test_a_rerun_resets_the_bot_branch_and_commits_again(
    ws: Workspace, agent_tree: Path, tmp_path: Path
) -> None:
    first = make_patch(agent_tree, tmp_path, {"docs/a.md": "a\n"})
    assert ws.publish("--patch-file", str(first), "--commit-signing", "api")[0] == 0
    (tmp_path / "changes.patch").unlink()
    (agent_tree / "docs" / "a.md").unlink()  # the agent's next run starts from the checkout
    second = make_patch(agent_tree, tmp_path, {"docs/a.md": "a, again\n"})
    code, out = ws.publish("--patch-file", str(second), "--commit-signing", "api")
    assert code == 0
    head = sh(ws.repo, "rev-parse", "HEAD")
    assert sh(ws.remote, "rev-parse", f"{out['commit-sha']}^") == head  # not stacked
    assert sh(ws.remote, "show", f"{out['commit-sha']}:docs/a.md") == "a, again"
    # The same changes once more: nothing is committed.
    requests = len(_graphql(ws))
    assert ws.publish("--patch-file", str(second), "--commit-signing", "api")[0] == 0
    assert len(_graphql(ws)) == requests


@pytest.mark.parametrize(("setup", "message"), [
    ("exec", "not plain files (an executable bit, a symbolic link or a submodule): run.sh "
             "(mode 100755)"),
    ("link", "docs/link.md (mode 120000)"),
])  # fmt: skip
def test_what_the_api_cannot_write_is_refused_before_anything_is_written(
    ws: Workspace, agent_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *,
    setup: str, message: str,
) -> None:
    if setup == "exec":
        before = changeset.baseline(agent_tree)
        (agent_tree / "run.sh").write_text("#!/bin/sh\n")
        os.chmod(agent_tree / "run.sh", 0o755)  # noqa: S103 - the point of the test
        patch = tmp_path / "changes.patch"
        changeset.write_patch(agent_tree, changeset.compute(agent_tree, before), patch)
    else:
        patch = make_patch(agent_tree, tmp_path, {}, links={"docs/link.md": "../README.md"})
    code, _ = ws.publish("--patch-file", str(patch), "--commit-signing", "api",
                         "--protected-paths", "none", "--allow-links")
    assert code == 4
    line = error_line(capsys.readouterr().out)
    assert message in line
    assert "Fix: Use commit-signing: git" in line
    assert ws.gh.requests_to("POST", r"/git/refs$") == []
    assert _graphql(ws) == []
    assert BRANCH not in sh(ws.remote, "branch", "--list")


def test_a_branch_that_moved_is_a_clear_error(
    ws: Workspace, agent_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = make_patch(agent_tree, tmp_path, {"docs/a.md": "a\n"})
    ws.gh.fail("POST", r"^/graphql$", 200, body={"data": None, "errors": [{
        "type": "STALE_DATA", "message": 'Expected branch to point to "abc" but it did not.'}]})
    code, _ = ws.publish("--patch-file", str(patch), "--commit-signing", "api")
    assert code == 4
    line = error_line(capsys.readouterr().out)
    assert f"branch {BRANCH} moved while publishing" in line
    assert "Fix: Someone pushed to the bot branch at the same time. Re-run the job" in line
    assert ws.gh.signed_commits == set()


def test_a_push_that_lands_between_the_reset_and_the_commit_is_not_overwritten(
    ws: Workspace, agent_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real race: right after publish points the branch at the checkout, someone pushes to
    it; GitHub (the fake, checking expectedHeadOid for real) refuses the commit."""
    patch = make_patch(agent_tree, tmp_path, {"docs/a.md": "a\n"})
    other = sh(ws.repo, "-c", "user.name=Other", "-c", "user.email=o@example.com",
               "commit-tree", "-p", "HEAD", "-m", "someone else's", "HEAD^{tree}")
    sh(ws.repo, "push", "-q", str(ws.remote), f"{other}:refs/heads/elsewhere")

    def race(branch: str) -> None:
        sh(ws.remote, "update-ref", f"refs/heads/{branch}", other)

    ws.gh.after_ref_update = race
    code, _ = ws.publish("--patch-file", str(patch), "--commit-signing", "api")
    assert code == 4
    assert f"branch {BRANCH} moved while publishing" in error_line(capsys.readouterr().out)
    assert ws.remote_branch(BRANCH) == other  # their commit stays
    assert ws.gh.signed_commits == set()


def test_a_graphql_error_is_reported_with_its_message(
    ws: Workspace, agent_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = make_patch(agent_tree, tmp_path, {"docs/a.md": "a\n"})
    ws.gh.fail("POST", r"^/graphql$", 200, body={"errors": [{
        "type": "FORBIDDEN", "message": "Resource not accessible by integration"}]})
    code, _ = ws.publish("--patch-file", str(patch), "--commit-signing", "api")
    assert code == 4
    line = error_line(capsys.readouterr().out)
    assert "the signed commit was refused: Resource not accessible by integration" in line
    assert "contents: write" in line


def test_an_unknown_signing_mode_is_refused(ws: Workspace) -> None:
    code, _ = ws.publish("--commit-signing", "gpg")
    assert code == 2


def test_the_signed_commit_is_json_that_the_real_api_accepts(
    ws: Workspace, agent_tree: Path, tmp_path: Path
) -> None:
    """The request has GitHub's documented shape: one mutation, input in variables."""
    patch = make_patch(agent_tree, tmp_path, {"docs/a.md": "a\n"})
    assert ws.publish("--patch-file", str(patch), "--commit-signing", "api")[0] == 0
    [request] = _graphql(ws)
    assert set(request) == {"query", "variables"}
    assert "createCommitOnBranch(input: $input)" in str(request["query"])
    json.dumps(request)
