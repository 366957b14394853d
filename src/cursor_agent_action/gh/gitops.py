"""Plain ``git`` through subprocess, for publish. Every failure is a GitHubError with a hint.

The push token never reaches argv or ``.git/config``: it travels in the environment of the one
git process that needs it, as ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``
(git >= 2.31), which other users cannot read (``/proc/PID/environ`` is private, unlike
``/proc/PID/cmdline``). See https://git-scm.com/docs/git-config#ENVIRONMENT.

The checkout may have been written by the agent, ``.git/config`` included, and publish's
environment holds the push token: every git call turns off the config that runs commands on
ordinary operations (``core.fsmonitor``, hooks) and ignores the system config. Filter drivers
and other command-running keys in ``.git/config`` remain: publish from a fresh checkout.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.globs import glob_to_regex
from cursor_agent_action.runner_io import scrub_urls

TRAILER = "Cursor-Agent-Action-Run"
"""Commit trailer marking the commits publish makes; only such a branch tip is overwritten."""

_TIMEOUT_S = 300
# Command-line config wins over every config file (https://git-scm.com/docs/git#Documentation/git.txt--cltnamegtltvaluegt).
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}")


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
    # Not GIT_CONFIG_GLOBAL: actions/checkout and users rely on the global config
    # (safe.directory, credentials).
    full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never",
                "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    what = doing or f"git {args[0]}"
    try:
        result = subprocess.run(
            ["git", *_SAFE_CONFIG, *args], cwd=cwd, env=full_env, input=input, capture_output=True,
            # A file name need not be UTF-8 (the agent can create any): shown with U+FFFD.
            encoding="utf-8", errors="replace", timeout=_TIMEOUT_S, check=False,
        )
    except OSError as exc:  # a missing cwd raises FileNotFoundError too, like a missing git
        if not cwd.is_dir():
            raise UsageError(f"the directory {cwd} does not exist or is not a directory.",
                             "Set working-directory to the checked-out repository (relative "
                             "to the workspace, or absolute).") from exc
        if isinstance(exc, FileNotFoundError):
            raise GitHubError("git is not installed or not on PATH.",
                              "Install git on the runner (GitHub-hosted runners have it).") from exc
        raise GitHubError(f"cannot run git in {cwd}: {exc.strerror}.",
                          "Check that the job's user may read and enter the directory.") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitHubError(f"{what} did not finish in {_TIMEOUT_S} s.",
                          "Check the network and the remote, then re-run.") from exc
    if check and result.returncode != 0:
        raise failed(what, result)
    return result


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
    out = git(["rev-parse", "--show-toplevel"], path, doing=f"finding the repository at {path}")
    return Path(out.stdout.strip())


def head_commit(repo: Path) -> str:
    result = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], repo, check=False)
    if result.returncode != 0:
        raise GitHubError(f"{repo} has no commit checked out.",
                          "Check out the branch the agent worked on before publishing.")
    return result.stdout.strip()


def changed_paths(repo: Path) -> list[str]:
    """Every path that differs from HEAD (tracked, or untracked and not ignored), sorted.

    Renames list both their old and new path.
    """
    out = git(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"],
              repo, doing="git status").stdout
    return sorted({entry[3:] for entry in out.split("\0") if len(entry) > 3})


def protected_regex(pattern: str) -> re.Pattern[str]:
    """A protected-paths glob (same syntax as permission globs); a trailing ``/`` or a plain
    directory name also covers everything under it."""
    pattern = pattern.strip().lstrip("/")
    pattern += "**" if pattern.endswith("/") else ""
    return re.compile(glob_to_regex(pattern).pattern + "(?:/.*)?", re.DOTALL)


def matching(paths: Sequence[str], patterns: Sequence[str]) -> list[str]:
    regexes = [protected_regex(p) for p in patterns if p.strip()]
    return [path for path in paths if any(rx.fullmatch(path) for rx in regexes)]


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


def snapshot_commit(repo: Path, parent: str, *, message: str, author_name: str,
                    author_email: str) -> str:
    """Commit the whole working tree (as ``git add -A`` sees it) on top of ``parent`` (HEAD);
    return its sha.

    Uses a temporary index and ``commit-tree``: the user's index, HEAD and branch are left
    exactly as they were. No hooks run and no signing is attempted.
    """
    identity = {"GIT_AUTHOR_NAME": author_name, "GIT_AUTHOR_EMAIL": author_email,
                "GIT_COMMITTER_NAME": author_name, "GIT_COMMITTER_EMAIL": author_email}
    with tempfile.TemporaryDirectory(prefix="caa-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(["read-tree", parent], repo, env=index)
        git(["add", "-A", "."], repo, env=index, doing="staging the changes")
        tree = git(["write-tree"], repo, env=index).stdout.strip()
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
