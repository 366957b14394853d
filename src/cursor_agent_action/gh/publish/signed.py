"""``commit-signing: api``: the bot commit made by GitHub itself, so it shows as Verified.

GraphQL's ``createCommitOnBranch`` takes the file contents (base64) and the commit the branch
must still point at (``expectedHeadOid``), and GitHub signs the commit it makes. The branch
is first set to the checked-out commit (created, or reset when it holds an earlier commit of
ours), so it ends as "checked-out commit plus one commit", as in ``git`` mode.

What the API cannot express is refused before anything is written, naming the paths: an
executable bit, a symbolic link, a submodule (the API writes plain files, mode 100644), and a
commit over :data:`MAX_PAYLOAD_BYTES`.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cursor_agent_action.errors import GitHubError
from cursor_agent_action.gh.api import GitHub
from cursor_agent_action.gh.publish.patchcheck import Change, blob

MAX_PAYLOAD_BYTES = 40 * 1024 * 1024
"""Of base64 file contents in one request: GitHub refuses much larger GraphQL bodies."""
PLAIN_FILE = "100644"
DELETED = "000000"
MUTATION = """
mutation ($input: CreateCommitOnBranchInput!) {
  createCommitOnBranch(input: $input) { commit { oid url } }
}
"""


def file_changes(repo: Path, found: Sequence[Change]) -> dict[str, Any]:
    """``fileChanges`` for the mutation; a GitHubError naming what the API cannot write."""
    additions: list[dict[str, str]] = []
    deletions: list[dict[str, str]] = []
    unsupported = [f"{c.path} (mode {c.new_mode})" for c in found
                   if c.new_mode not in (PLAIN_FILE, DELETED)]
    if unsupported:
        raise GitHubError(
            "commit-signing: api cannot write these changes, which are not plain files (an "
            f"executable bit, a symbolic link or a submodule): {', '.join(unsupported[:20])}.",
            "Use commit-signing: git for this change (the commit is then not signed), or "
            "leave such files out of the agent's changes.")
    size = 0
    for change in found:
        if change.new_mode == DELETED:
            deletions.append({"path": change.path})
            continue
        contents = base64.b64encode(blob(repo, change.new_oid)).decode("ascii")
        size += len(contents)
        if size > MAX_PAYLOAD_BYTES:
            raise GitHubError(
                f"commit-signing: api cannot send these changes: over "
                f"{MAX_PAYLOAD_BYTES // (1024 * 1024)} MiB of file contents in one commit.",
                "Use commit-signing: git for a change this large.")
        additions.append({"path": change.path, "contents": contents})
    return {"additions": additions, "deletions": deletions}


def _set_branch(gh: GitHub, branch: str, head: str, *, exists: bool) -> None:
    """The branch at ``head``: created, or force-reset from an earlier commit of ours."""
    permission = "contents: write"
    if exists:
        ref = gh.call(f"reading branch {branch}", lambda: gh.repo.get_git_ref(f"heads/{branch}"),
                      permission="contents: read")
        gh.call(f"resetting branch {branch} to {head[:12]}",
                lambda: ref.edit(sha=head, force=True), permission=permission)
    else:
        gh.call(f"creating branch {branch} at {head[:12]}",
                lambda: gh.repo.create_git_ref(ref=f"refs/heads/{branch}", sha=head),
                permission=permission)


def commit_on_branch(gh: GitHub, repo: Path, found: Sequence[Change], *, branch: str,
                     head: str, message: str, exists: bool) -> str:
    """Make the signed commit of ``found`` on ``branch`` (then at ``head``); its sha."""
    changes = file_changes(repo, found)
    _set_branch(gh, branch, head, exists=exists)
    headline, _, body = message.strip().partition("\n")
    variables = {
        "input": {
            "branch": {"repositoryNameWithOwner": gh.ctx.repository, "branchName": branch},
            "message": {"headline": headline.strip(), "body": body.strip()},
            "fileChanges": changes,
            "expectedHeadOid": head,
        }
    }
    data = gh.call("creating the signed commit (GraphQL createCommitOnBranch)",
                   lambda: gh.graphql(MUTATION, variables), permission="contents: write")
    errors = data.get("errors")
    if errors:
        raise graphql_error(errors, branch)
    commit = ((data.get("data") or {}).get("createCommitOnBranch") or {}).get("commit") or {}
    oid = commit.get("oid")
    if not isinstance(oid, str) or len(oid) != 40:
        raise GitHubError("GitHub's createCommitOnBranch answered without a commit.",
                          "Re-run the job; if it persists, use commit-signing: git.")
    return oid


def graphql_error(errors: Any, branch: str) -> GitHubError:
    """One clear error for GraphQL's ``errors`` list."""
    first = errors[0] if isinstance(errors, list) and errors else {}
    message = str(first.get("message", "")) if isinstance(first, dict) else str(first)
    kind = str(first.get("type", "")) if isinstance(first, dict) else ""
    words = " ".join(message.split())[:400]
    if kind == "STALE_DATA" or "expected branch to point to" in message.lower():
        return GitHubError(
            f"the signed commit was refused: branch {branch} moved while publishing ({words}).",
            "Someone pushed to the bot branch at the same time. Re-run the job; it rebuilds "
            "the branch from the current checkout.")
    if kind == "FORBIDDEN" or "resource not accessible" in message.lower():
        return GitHubError(
            f"the signed commit was refused: {words}",
            "Give the job `contents: write` (and check branch protection rules on the bot "
            "branch's name).")
    return GitHubError(f"GitHub's createCommitOnBranch failed: {words or 'no message'}.",
                       "Re-run the job; if it persists, use commit-signing: git.")
