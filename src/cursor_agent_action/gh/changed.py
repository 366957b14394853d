"""A pull request's changed files, for planning shards: the paged files API (GitHub lists at
most 3,000), and beyond that the local git diff of a fetched head.

https://docs.github.com/en/rest/pulls/pulls#list-pull-requests-files ("a maximum of 3000
files"). A file the API lists without a ``patch`` but with changed lines is one whose diff
GitHub will not show (too large); without changed lines it is binary, empty or only renamed.
Git's names are read NUL-separated (``--name-status -z``), so a file name holding a newline,
a quote or ``diff --git`` cannot pass for another file; the patches are matched to them in
order.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

from cursor_agent_action import safegit
from cursor_agent_action.errors import UsageError
from cursor_agent_action.gh.shards import ChangedFile

API_MAX_FILES = 3000
"""GitHub lists at most 3,000 files of a pull request."""
_SHA = re.compile(r"[0-9a-f]{40}")
_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "C": "copied",
           "T": "changed"}
GIT_TIMEOUT_S = 300.0


def from_api(items: list[Any]) -> list[ChangedFile]:
    """The files as PyGithub's ``File`` objects give them."""
    out = []
    for item in items:
        patch = item.patch
        changes = int(item.additions or 0) + int(item.deletions or 0)
        out.append(ChangedFile(str(item.filename), str(item.status or "modified"),
                               str(item.previous_filename or ""), patch,
                               int(item.additions or 0), int(item.deletions or 0),
                               too_large=patch is None and changes > 0))
    return out


def read_api(gh: Any, pull: Any, number: int) -> list[Any]:
    return list(gh.call(f"listing the files of pull request #{number}",
                        lambda: list(itertools.islice(pull.get_files(), API_MAX_FILES)),
                        permission="pull-requests: read"))


def from_git(repo: Path, base_sha: str, head_sha: str) -> list[ChangedFile]:
    """Every file the pull request changes, as ``git diff BASE...HEAD`` (from their merge base,
    as GitHub compares) of a repository that holds both commits."""
    for sha, what in ((base_sha, "base"), (head_sha, "head")):
        if not _SHA.fullmatch(sha):
            raise UsageError(f"the pull request's {what} commit {sha!r} is not a full SHA.",
                             "Run on a pull_request event, or pass pr-number.")
    if not (repo / ".git").exists() and not (repo / "HEAD").exists():
        raise _missing(repo, "it is not a git repository")
    spec = f"{base_sha}...{head_sha}"
    common = ["diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv"]
    names = safegit.run([*common, "--name-status", "-z", spec, "--"], repo,
                        timeout=GIT_TIMEOUT_S)
    if names.returncode != 0:
        raise _missing(repo, safegit.words(names.stderr)[:300])
    listed = _name_status(names.stdout)
    patches = safegit.run([*common, "--src-prefix=a/", "--dst-prefix=b/", spec, "--"], repo,
                          timeout=GIT_TIMEOUT_S)
    if patches.returncode != 0:
        raise _missing(repo, safegit.words(patches.stderr)[:300])
    chunks = re.split(rb"^(?=diff --git )", patches.stdout, flags=re.M)[1:]
    if len(chunks) != len(listed):
        raise UsageError(f"git listed {len(listed)} changed files but gave {len(chunks)} "
                         "diffs.", "Report this, with the pull request's file names.")
    out = []
    for (status, old, new), chunk in zip(listed, chunks, strict=True):
        text = chunk.decode("utf-8", "replace")
        _, at, hunks = text.partition("\n@@")
        patch = ("@@" + hunks).rstrip("\n") if at else None
        added = removed = 0
        if patch is not None:
            for line in patch.split("\n"):
                added += line.startswith("+")
                removed += line.startswith("-")
        out.append(ChangedFile(new, status, old if old != new else "", patch, added, removed))
    return out


def _name_status(raw: bytes) -> list[tuple[str, str, str]]:
    """(status, old path, new path) from ``--name-status -z``."""
    fields = raw.decode("utf-8", "replace").split("\0")
    out = []
    i = 0
    while i < len(fields) and fields[i]:
        code = fields[i]
        if code[:1] in ("R", "C"):
            old, new = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old = new = fields[i + 1]
            i += 2
        out.append((_STATUS.get(code[:1], "modified"), old, new))
    return out


def _missing(repo: Path, why: str) -> UsageError:
    return UsageError(f"the pull request changes more files than the {API_MAX_FILES:,} GitHub "
                      f"lists, and the rest cannot be read from git in {repo}: {why}.",
                      "Check out the pull request's head with its history in this job "
                      "(actions/checkout with ref: the head SHA and fetch-depth: 0), and set "
                      "repository-path to it.")
