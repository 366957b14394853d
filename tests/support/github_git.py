"""The git side of the fake GitHub API: branch refs (REST ``git/refs``) and GraphQL's
``createCommitOnBranch``, done for real in a bare repository with git plumbing, so a test can
check the commit that "GitHub" made. Commits made here are recorded as signed (GitHub signs
what it commits through the API)."""

from __future__ import annotations

import base64
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

BOT_NAME, BOT_EMAIL = "github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com"


def _git(git_dir: Path, *args: str, env: dict[str, str] | None = None,
         data: bytes | None = None) -> str:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], input=data,
                          capture_output=True, check=True, timeout=60,
                          env={**os.environ, **(env or {})})
    return done.stdout.decode().strip()


def ref(git_dir: Path, branch: str) -> str | None:
    done = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "-q", "--verify",
                           f"refs/heads/{branch}^{{commit}}"], capture_output=True, check=False)
    return done.stdout.decode().strip() or None


def set_ref(git_dir: Path, branch: str, sha: str) -> None:
    _git(git_dir, "update-ref", f"refs/heads/{branch}", sha)


def commit_exists(git_dir: Path, sha: str) -> bool:
    done = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file", "-e", f"{sha}^{{commit}}"],
                          capture_output=True, check=False)
    return done.returncode == 0


def create_commit_on_branch(git_dir: Path, repository: str, given: dict[str, Any],
                            signed: set[str]) -> dict[str, Any]:
    """The GraphQL answer to ``createCommitOnBranch`` with input ``given``."""
    branch = given["branch"]
    if branch.get("repositoryNameWithOwner") != repository:
        return _error("NOT_FOUND", f"Could not resolve to a Repository "
                      f"'{branch.get('repositoryNameWithOwner')}'.")
    name = branch["branchName"]
    current = ref(git_dir, name)
    if current is None:
        return _error("NOT_FOUND", f"A ref named \"refs/heads/{name}\" does not exist.")
    if current != given.get("expectedHeadOid"):
        return _error("STALE_DATA", f'Expected branch to point to "{given.get("expectedHeadOid")}"'
                      f' but it did not. Pull and try again.')
    changes = given.get("fileChanges") or {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_WORK_TREE": tmp}
        _git(git_dir, "read-tree", current, env=env)
        for addition in changes.get("additions", []):
            data = base64.b64decode(addition["contents"], validate=True)
            oid = _git(git_dir, "hash-object", "-w", "--stdin", data=data)
            _git(git_dir, "update-index", "--add", "--cacheinfo",
                 f"100644,{oid},{addition['path']}", env=env)
        for deletion in changes.get("deletions", []):
            _git(git_dir, "update-index", "--force-remove", deletion["path"], env=env)
        tree = _git(git_dir, "write-tree", env=env)
    message = given["message"]["headline"] + (
        f"\n\n{given['message']['body']}" if given["message"].get("body") else "")
    identity = {"GIT_AUTHOR_NAME": BOT_NAME, "GIT_AUTHOR_EMAIL": BOT_EMAIL,
                "GIT_COMMITTER_NAME": "GitHub", "GIT_COMMITTER_EMAIL": "noreply@github.com"}
    sha = _git(git_dir, "commit-tree", tree, "-p", current, "-F", "-", env=identity,
               data=message.encode())
    _git(git_dir, "update-ref", f"refs/heads/{name}", sha, current)
    signed.add(sha)
    return {"data": {"createCommitOnBranch": {"commit": {
        "oid": sha, "url": f"https://github.example/{repository}/commit/{sha}"}}}}


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"data": {"createCommitOnBranch": None},
            "errors": [{"type": kind, "path": ["createCommitOnBranch"], "message": message}]}
