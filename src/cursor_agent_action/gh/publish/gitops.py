"""Plain ``git`` through subprocess, for publish. Every failure is a GitHubError with a hint.

Every call goes through :mod:`cursor_agent_action.safegit` (absolute git, no global or system
config, no hooks, fsmonitor or credential helper from the repository). The push token never
reaches argv or ``.git/config``: it travels in the environment of the one git process that
needs it, as ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (git >= 2.31),
which other users cannot read (``/proc/PID/environ`` is private, unlike ``/proc/PID/cmdline``).
See https://git-scm.com/docs/git-config#ENVIRONMENT.
"""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from cursor_agent_action import safegit
from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.runner_io import scrub_urls

TRAILER = "Cursor-Agent-Action-Run"
"""Commit trailer marking the commits publish makes; only such a branch tip is overwritten."""

_TIMEOUT_S = 300


def git(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    doing: str = "",
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``git args`` in ``cwd``; raise GitHubError (with git's own words) on failure."""
    what = doing or f"git {args[0]}"
    data = None if input is None else input.encode("utf-8", "replace")  # as text mode did
    try:
        done = safegit.git(args, cwd, env=env, input=data, timeout=_TIMEOUT_S, ok=None)
    except safegit.GitFailed as exc:
        raise explain(exc, what, cwd) from exc
    # A file name need not be UTF-8 (the agent can create any): shown with U+FFFD.
    result = subprocess.CompletedProcess(done.args, done.returncode, _text(done.stdout),
                                         _text(done.stderr))
    if check and result.returncode != 0:
        raise failed(what, result)
    return result


def _text(output: bytes) -> str:
    """git's output as text, lines ended as Python's text mode ends them."""
    return output.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


def explain(exc: safegit.GitFailed, what: str, cwd: Path) -> GitHubError | UsageError:
    """``exc`` in the user's words, with the hint it calls for: ``what`` failed in ``cwd``."""
    if exc.returncode is not None:
        detail = _detail(exc.detail)
        return git_error(f"{what} failed (exit {exc.returncode}): {detail}", detail)
    if exc.timed_out:
        return GitHubError(f"{what} did not finish in {_TIMEOUT_S} s.",
                           "Check the network and the remote, then re-run.")
    if isinstance(exc, safegit.GitNotFound):
        return GitHubError("git is not installed.",
                           "Install git on the runner (GitHub-hosted runners have it).")
    if not cwd.is_dir():  # a missing cwd raises FileNotFoundError too, like a missing git
        return UsageError(f"the directory {cwd} does not exist or is not a directory.",
                          "Set working-directory to the checked-out repository (relative "
                          "to the workspace, or absolute).")
    cause = exc.__cause__
    if isinstance(cause, FileNotFoundError):
        return GitHubError("git is not installed or not on PATH.",
                           "Install git on the runner (GitHub-hosted runners have it).")
    strerror = cause.strerror if isinstance(cause, OSError) else str(exc)
    return GitHubError(f"cannot run git in {cwd}: {strerror}.",
                       "Check that the job's user may read and enter the directory.")


def _detail(output: str) -> str:
    """git's words on one line, without credentials a remote URL may carry."""
    return scrub_urls(" ".join(output.split()))[:600]


class AccessDenied(GitHubError):
    """The remote refused the token: publish adds why when it knows (a fork's pull request)."""


def failed(what: str, result: subprocess.CompletedProcess[str]) -> GitHubError:
    detail = _detail(result.stderr or result.stdout)
    return git_error(f"{what} failed (exit {result.returncode}): {detail}", detail)


def git_error(message: str, detail: str) -> GitHubError:
    """The error for git's words ``detail``, with the hint they call for; no URL credentials
    (e.g. of a remote given as a URL) in ``message``."""
    message = scrub_urls(message)
    message += "" if message.endswith((".", "!", "?")) else "."  # cli.main appends " Fix: ..."
    lower = detail.lower()
    if "not a git repository" in lower:
        return GitHubError(message, "Run in a checked-out repository (actions/checkout) or set "
                           "working-directory.")
    if "permission to" in lower or "403" in lower or "denied" in lower:
        return AccessDenied(message, "The token may not push: give the job `permissions: "
                            "contents: write`.")
    if "authentication failed" in lower or "401" in lower or "could not read username" in lower:
        return AccessDenied(message, "The token was refused; pass a valid one in github-token.")
    return GitHubError(message, "See git's message above.")


def toplevel(path: Path) -> Path:
    try:
        return safegit.toplevel(path)
    except safegit.GitFailed as exc:
        raise explain(exc, f"finding the repository at {path}", path) from exc


def head_commit(repo: Path) -> str:
    try:
        return safegit.head_commit(repo)
    except safegit.GitFailed as exc:
        if exc.returncode is None:
            raise explain(exc, "finding the checked-out commit", repo) from exc
        raise GitHubError(f"{repo} has no commit checked out.",
                          "Check out the branch the agent worked on before publishing.") from exc


def valid_branch(name: str, repo: Path) -> bool:
    return git(["check-ref-format", "--branch", name], repo, check=False).returncode == 0


def basic_credential(token: str) -> str:
    """The HTTP basic credential git sends for ``token`` (base64: mask it like the token)."""
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def auth_env(server_url: str, token: str) -> dict[str, str]:
    """Environment giving one git process an Authorization header for ``server_url`` only.

    The first entry (empty) clears any header persisted by actions/checkout for the same URL,
    so exactly one Authorization header is sent. No hook can inherit the token: ``git`` turns
    hooks off for every call.
    """
    key = f"http.{server_url.rstrip('/')}/.extraheader"
    return {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": key, "GIT_CONFIG_VALUE_0": "",
        "GIT_CONFIG_KEY_1": key,
        "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic_credential(token)}",
    }


def commit_tree(repo: Path, tree: str, parent: str, *, message: str, author_name: str,
                author_email: str) -> str:
    """A commit of ``tree`` on top of ``parent``; its sha. The repository's index, HEAD and
    branches are left as they were; no hook runs and no signing is attempted."""
    identity = {"GIT_AUTHOR_NAME": author_name, "GIT_AUTHOR_EMAIL": author_email,
                "GIT_COMMITTER_NAME": author_name, "GIT_COMMITTER_EMAIL": author_email}
    return git(["commit-tree", "--no-gpg-sign", tree, "-p", parent, "-F", "-"], repo,
               env=identity, input=message, doing="creating the commit").stdout.strip()


def remote_tip(repo: Path, remote: str, branch: str, env: Mapping[str, str]) -> str | None:
    """The remote branch's commit, fetched so it can be inspected; None when it does not exist."""
    ref = f"refs/heads/{branch}"
    listing = git(["ls-remote", "--exit-code", remote, ref], repo, env=env, check=False)
    if listing.returncode == 2:
        return None
    if listing.returncode != 0:
        raise failed(f"looking up {branch} on {remote}", listing)
    sha = listing.stdout.split()[0]
    git(["fetch", "--no-tags", "--quiet", remote, ref], repo, env=env,
        doing=f"fetching {branch} from {remote}")
    return sha


def commit_info(repo: Path, sha: str) -> tuple[str, str, str, str]:
    """(tree, first parent, author, our trailer value) of a commit."""
    fmt = f"%T%x00%P%x00%an <%ae>%x00%(trailers:key={TRAILER},valueonly,separator=%x20)"
    tree, parents, author, trailer = git(["log", "-1", f"--format={fmt}", sha],
                                         repo).stdout.rstrip("\n").split("\0")
    return tree, (parents.split() or [""])[0], author, trailer.strip()


def push(repo: Path, remote: str, sha: str, branch: str, *, expected: str,
         env: Mapping[str, str]) -> None:
    """Point ``branch`` on the remote at ``sha`` if it is still at ``expected`` ("" = absent)."""
    ref = f"refs/heads/{branch}"
    result = git(["push", "--porcelain", "--no-verify", f"--force-with-lease={ref}:{expected}",
                  remote, f"{sha}:{ref}"], repo, env=env, check=False)
    if result.returncode == 0:
        return
    detail = _detail(result.stderr + " " + result.stdout)
    if "stale info" in detail or "fetch first" in detail or "non-fast-forward" in detail:
        raise GitHubError(
            f"push to {branch} rejected: the branch moved on {remote} while publishing "
            f"({detail}).",
            "Someone pushed to the bot branch at the same time. Re-run the job; it rebuilds "
            "the branch from the current checkout.",
        )
    raise git_error(f"push to {branch} on {remote} failed: {detail}", detail)
