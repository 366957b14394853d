"""Every git call of ours, hardened the same way against a tree the agent may have touched.

One place builds the command line and the environment:

- ``git`` itself is an absolute path found once, in the system directories first (a ``git`` the
  agent planted on a PATH entry, e.g. ``~/.local/bin``, never runs);
- no global or system config (``GIT_CONFIG_GLOBAL=/dev/null``, ``GIT_CONFIG_NOSYSTEM=1``), no
  system attributes, no replace refs, no optional locks, no pager, no prompts;
- ``-c`` settings that beat the repository's own config: no fsmonitor, no hooks, no credential
  helper, no global excludes or attributes file, no automatic gc or maintenance, no submodule
  recursion, no signing; ``safe.directory`` only for the repository we were asked to use;
- an environment built from an allow-list (proxy and certificate settings for a push), never
  the caller's (no ``GIT_DIR``/``GIT_WORK_TREE``/``GIT_EXTERNAL_DIFF`` from anywhere).

Callers add what a command needs on top: ``--no-ext-diff --no-textconv`` on diffs, a temporary
``GIT_INDEX_FILE``, the push credential in ``GIT_CONFIG_*`` variables.

:func:`git` is the checked call: every way a git command can fail (no git, cannot start, too
slow, a refusing exit code) is one :class:`GitFailed` with git's own words; each caller adds the
hint its user needs. :func:`run` is the bare call, for a caller that reads the exit code itself.
:func:`head_commit` and :func:`toplevel` are the one lookup of the checked-out commit and of the
top of the work tree.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Container, Mapping, Sequence
from pathlib import Path

TIMEOUT_S = 300
SYSTEM_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/opt/homebrew/bin")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
_PASSED = (
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GIT_SSL_CAINFO",
    "TMPDIR",
    "TZ",
)
HARDENED_CONFIG = (
    "core.fsmonitor=false",
    f"core.hooksPath={os.devnull}",
    "credential.helper=",
    f"core.attributesFile={os.devnull}",
    f"core.excludesFile={os.devnull}",
    "core.pager=cat",
    "core.untrackedCache=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.splitIndex=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "submodule.recurse=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "log.showSignature=false",
    "color.ui=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "protocol.ext.allow=never",
    "core.askPass=",
)


DETAIL_CHARS = 600
"""How much of git's own words an error message quotes."""


class GitFailed(Exception):
    """A git command failed: it could not start (``returncode`` None), did not finish in time
    (``timed_out``) or exited with a code its caller does not accept. ``command`` names it
    (``git diff``), ``detail`` is git's own words on one line (its stderr, else its stdout)."""

    def __init__(self, message: str, *, command: str = "git", detail: str = "",
                 returncode: int | None = None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.command = command
        self.detail = detail
        self.returncode = returncode
        self.timed_out = timed_out


class GitNotFound(GitFailed):
    """No git executable in the system directories or on PATH."""


@functools.lru_cache(maxsize=1)
def git_executable() -> str:
    """The absolute path of git: a system directory first, else PATH as it is the first time
    this is asked (the helper asks before the agent starts)."""
    for directory in SYSTEM_DIRS:
        candidate = os.path.join(directory, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("git")
    if not found:
        raise GitNotFound("git is not installed", command="git")
    return os.path.abspath(found)


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a hardened git process."""
    env = {name: os.environ[name] for name in _PASSED if name in os.environ}
    env.update(
        PATH=SYSTEM_PATH, HOME=os.devnull, LC_ALL="C", LANG="C", GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull, GIT_ATTR_NOSYSTEM="1", GIT_NO_REPLACE_OBJECTS="1",
        GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GCM_INTERACTIVE="never",
        GIT_PAGER="cat", GIT_ASKPASS="", SSH_ASKPASS="",
    )
    env.update(extra or {})
    return env


def argv(args: Sequence[str], repo: Path) -> list[str]:
    """The full command line for ``git args`` in ``repo``."""
    settings = [*HARDENED_CONFIG, f"safe.directory={repo}"]
    return [git_executable(), *(part for s in settings for part in ("-c", s)), *args]


def run(
    args: Sequence[str],
    repo: Path,
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = TIMEOUT_S,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` in ``repo``; bytes in and out, never raises on git's own exit code.

    Raises ``OSError`` (cannot start), ``GitNotFound`` and ``subprocess.TimeoutExpired``.
    """
    return subprocess.run(
        argv(args, repo), cwd=repo, env=environment(env), input=input, capture_output=True,
        timeout=timeout, check=False, stdin=None if input is not None else subprocess.DEVNULL,
    )


def words(output: bytes) -> str:
    """git's output on one line (whitespace runs collapsed; not UTF-8 shown as U+FFFD)."""
    return " ".join(output.decode("utf-8", "replace").split())


def git(
    args: Sequence[str],
    repo: Path,
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = TIMEOUT_S,
    ok: Container[int] | None = (0,),
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` in ``repo``; raise :class:`GitFailed` when it cannot start, does not
    finish within ``timeout`` seconds or exits with a code not in ``ok`` (None: any code)."""
    command = f"git {args[0]}" if args else "git"
    try:
        done = run(args, repo, env=env, input=input, timeout=timeout)
    except GitNotFound:
        raise
    except OSError as exc:
        raise GitFailed(f"cannot run git: {exc}", command=command) from exc
    except subprocess.TimeoutExpired as exc:
        raise GitFailed(f"{command} did not finish within {exc.timeout:g} s", command=command,
                        timed_out=True) from exc
    if ok is not None and done.returncode not in ok:
        detail = words(done.stderr) or words(done.stdout)
        message = (f"{command} was killed by signal {-done.returncode}" if done.returncode < 0
                   else f"{command} failed: {detail[:DETAIL_CHARS] or done.returncode}")
        raise GitFailed(message, command=command, detail=detail, returncode=done.returncode)
    return done


def blobs(repo: Path, oids: Sequence[str], *, env: Mapping[str, str] | None = None
          ) -> dict[str, bytes]:
    """Many blobs' bytes, exactly, in one ``git cat-file --batch`` (one git for any number);
    :class:`GitFailed` when one is no blob."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    out = git(["cat-file", "--batch"], repo, env=env,
              input="".join(f"{oid}\n" for oid in wanted).encode()).stdout
    found: dict[str, bytes] = {}
    at = 0
    for oid in wanted:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3 or header[1] != b"blob":
            raise GitFailed(f"reading blob {oid[:12]} failed: git answered {out[at:end]!r}",
                            command="git cat-file")
        size = int(header[2])
        found[oid] = out[end + 1:end + 1 + size]
        at = end + 1 + size + 1  # the content, then a LF
    return found


def head_commit(repo: Path, *, env: Mapping[str, str] | None = None) -> str:
    """The commit checked out in ``repo`` (``env``: e.g. the ``GIT_DIR`` that names the
    repository instead of a ``.git`` in the tree); :class:`GitFailed` when there is none."""
    found = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], repo, env=env).stdout
    return found.decode().strip()


def toplevel(path: Path) -> Path:
    """The top of the work tree ``path`` is in; :class:`GitFailed` when it is in none."""
    found = git(["rev-parse", "--show-toplevel"], path).stdout.strip()
    return Path(found.decode("utf-8", "surrogateescape"))


def git_dirs(path: Path) -> tuple[Path, Path]:
    """The absolute git directory and common directory (where the objects and the shared
    config are) of the work tree ``path`` is in (they differ for a linked worktree);
    :class:`GitFailed` when it is in none."""
    out = git(["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
              path).stdout
    git_dir, common = (line.decode("utf-8", "surrogateescape") for line in out.splitlines()[:2])
    return Path(git_dir), Path(common)
