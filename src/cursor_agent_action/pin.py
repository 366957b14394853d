"""``pin``: resolve a ref of cursor-agent-action to its full commit SHA and write that SHA into
the ``uses:`` lines of this action and its sub-actions in workflow files; nothing else in the
files changes.

    cursor-agent-action pin [--ref main] [--source URL|CLONE] WORKFLOW ...

The ref is looked up with ``git ls-remote`` at ``--source`` (default: the action's GitHub
repository), or with ``git rev-parse`` when ``--source`` is a local clone (offline; short SHAs
too). An empty or malformed ref, or an answer that is not a full SHA, stops it before any file
is written. The ref's name becomes the line's comment (``# v1.2.0``, which Dependabot reads, or
``# main``); pinned to a SHA given as such, the line keeps its own comment.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

from cursor_agent_action import safegit
from cursor_agent_action.actionrefs import ACTION, CHECKOUT_REF, REPOSITORY, USES
from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.options import add_option
from cursor_agent_action.runner_io import Runner, scrub_urls

DEFAULT_SOURCE = f"https://github.com/{ACTION}"
FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")
_TIMEOUT_S = 60


def _valid_ref(ref: str) -> bool:
    """A name git could give a branch or tag, or a (short) hexadecimal SHA."""
    return bool(_REF.fullmatch(ref)) and ".." not in ref and "//" not in ref and not (
        ref.endswith((".lock", "/", ".")))


def _git(args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return safegit.git(args, cwd, timeout=_TIMEOUT_S, ok=None)
    except safegit.GitNotFound as exc:
        raise GitHubError("git is not installed.", "Install git, then pin again.") from exc
    except safegit.GitFailed as exc:
        raise GitHubError(f"{what} did not finish: {exc}.",
                          "Check the network, or pin from a local clone of "
                          f"{ACTION}: --source PATH.") from exc


def resolve(ref: str, source: str) -> str:
    """The full commit SHA ``ref`` names at ``source`` (a URL or a local clone)."""
    ref = ref.strip()
    if not ref:
        raise UsageError("--ref is empty: there is nothing to pin to.",
                         "Give a branch, tag or full commit SHA of cursor-agent-action, e.g. "
                         "--ref main.")
    if not _valid_ref(ref):
        raise UsageError(f"--ref {ref!r} is not a branch, tag or commit name.",
                         "Give a branch (main), a tag (v1.2.0) or a full commit SHA.")
    local = Path(source)
    if local.is_dir():
        done = _git(["rev-parse", "-q", "--verify", f"{ref}^{{commit}}"], local,
                    f"looking up {ref} in {source}")
        sha = done.stdout.decode("utf-8", "replace").strip()
        if done.returncode != 0:
            raise UsageError(f"{ref!r} is not a branch, tag or commit of the clone {source}.",
                             f"Fetch it first (git -C {source} fetch), or check the name.")
    elif FULL_SHA.fullmatch(ref):
        return ref  # what a remote cannot be asked about; a clone would check it
    else:
        sha = _remote(ref, source)
    if not FULL_SHA.fullmatch(sha):
        raise GitHubError(f"looking up {ref!r} at {scrub_urls(source)} gave no commit SHA "
                          f"({sha[:80]!r}).", "Check --source, or give a full commit SHA.")
    return sha


def _remote(ref: str, source: str) -> str:
    if re.fullmatch(r"[0-9a-f]{4,39}", ref):
        raise UsageError(f"--ref {ref} looks like a short SHA, which a remote cannot look up.",
                         "Give all 40 characters, or --source a local clone.")
    names = [f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}"]
    done = _git(["ls-remote", "--", source, *names], Path.cwd(), f"git ls-remote {source}")
    if done.returncode != 0:
        said = safegit.words(done.stderr)[:300]
        raise GitHubError(f"cannot list the refs of {scrub_urls(source)}: {scrub_urls(said)}",
                          "Check the network and the URL, or pin from a local clone of "
                          f"{ACTION}: --source PATH.")
    found: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        sha, _, name = line.partition("\t")
        found[name.strip()] = sha.strip()
    for name in names:
        if name in found:
            return found[name]
    raise UsageError(f"{ref!r} is neither a branch nor a tag of {scrub_urls(source)}.",
                     f"Check the name (git ls-remote {scrub_urls(source)} lists them), or give "
                     "a full commit SHA.")


def rewrite(text: str, sha: str, ref: str) -> tuple[str, int]:
    """``text`` with every ``uses:`` line of this action and its sub-actions at ``sha`` (and
    the ``ref:`` of a checkout of this action's repository), and how many lines changed."""
    lines, changed = [], 0
    checkout_indent = -1  # the indentation of a checkout's `repository:` of this action
    for original in text.splitlines(keepends=True):
        line = original
        body = line.rstrip("\r\n")
        indent = len(body) - len(body.lstrip())
        if body.strip() and indent < checkout_indent:
            checkout_indent = -1  # that step's with: has ended
        if REPOSITORY.match(body):
            checkout_indent = indent
        match = USES.match(body) or (
            CHECKOUT_REF.match(body) if indent == checkout_indent else None)
        if match:
            comment = match["comment"] or ""
            if not FULL_SHA.fullmatch(ref):  # what the SHA is: v1.2.0, or main
                comment = f"# {ref}"
            space = match["space"] or (" " if comment else "")
            at = f"{match['action']}@" if "action" in match.groupdict() else ""
            new = f"{match['lead']}{match['quote']}{at}{sha}{match['quote']}{space}{comment}"
            changed += new != body
            line = new + line[len(body):]
        lines.append(line)
    return "".join(lines), changed


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--ref", default="main",
               help="the branch, tag or commit of cursor-agent-action to pin to")
    add_option(parser, "--source", default=DEFAULT_SOURCE, metavar="URL|CLONE",
               help="where to look the ref up: a git URL, or a local clone (offline)")
    parser.add_argument("workflows", nargs="+", metavar="WORKFLOW",
                        help="workflow files whose uses: lines of this action to rewrite")


def command(args: argparse.Namespace, runner: Runner) -> int:
    texts = {}
    for name in args.workflows:
        path = Path(name)
        try:
            texts[path] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}.",
                             "Give the path of a workflow file (.github/workflows/NAME.yml)."
                             ) from exc
    sha = resolve(args.ref, args.source)  # before any file is written
    for path, text in texts.items():
        new, changed = rewrite(text, sha, args.ref.strip())
        if not any(USES.match(line) for line in text.splitlines()) and not changed:
            runner.warning(f"{path} does not use {ACTION}: nothing to pin there.", title="pin")
            continue
        if new != text:
            try:
                path.write_text(new, encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"cannot write {path}: {exc.strerror or exc}.",
                                 "Check that the file is writable.") from exc
        runner.log(f"{path}: {changed} line(s) changed; this action's uses: lines are at "
                   f"{sha} ({args.ref.strip()}).")
    return 0
