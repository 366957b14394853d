"""Your repository as the world a workflow runs in, offline (``scripts/try_example.py``, run
in your repository or with ``--repo``): a copy of it whose ``origin`` is a bare copy, a pull
request from ``--head`` into ``--base`` with the files and diff GitHub would list, and what
the stand-in agent answers about *that* diff: review findings on lines the pull request adds,
a docs update of one of your Markdown files, a diagnosis naming the failing step of the log you
give (``--log FILE``).

Your repository is only read (``git clone`` of it, then ``git diff`` in the copy); nothing is
written to it. Uncommitted changes are not part of the pull request, as on GitHub.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cursor_agent_action.gh.ci_context import clean
from cursor_agent_action.gh.testlog import FailureFinder, describe
from tests.support.example_world import World, review_answer, serve_world

MAX_FILES = 300  # what GitHub's files endpoint lists at most is 3000; a try needs fewer
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_REMOTE = re.compile(r"github\.com[:/]+([\w.-]+)/([\w.-]+?)(?:\.git)?/?$")


class WorldError(Exception):
    """Your repository cannot make a pull request as asked: the message says why and what to
    give instead."""


@dataclass(frozen=True)
class YourPull:
    source: Path  # your repository's top directory
    repository: str  # owner/name (from origin's GitHub URL, else you/<directory name>)
    base_ref: str
    head_ref: str
    base_sha: str
    head_sha: str
    files: list[dict[str, Any]] = field(default_factory=list)  # as GET /pulls/{n}/files

    def added_lines(self) -> list[tuple[str, int, str]]:
        """(path, line in the head's file, text) of every line the pull request adds."""
        found = []
        for entry in self.files:
            line = 0
            for text in str(entry.get("patch", "")).splitlines():
                if hunk := _HUNK.match(text):
                    line = int(hunk.group(1))
                elif text.startswith("+"):
                    found.append((entry["filename"], line, text[1:]))
                    line += 1
                elif not text.startswith(("-", "\\")):
                    line += 1
        return found


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "core.quotePath=false", "-c", "user.name=try",
         "-c", "user.email=try@example.com", *args],
        capture_output=True, text=True, errors="replace", check=False, timeout=300,
        stdin=subprocess.DEVNULL)  # fmt: skip
    if check and done.returncode != 0:
        raise WorldError(f"git {' '.join(args[:2])} in {repo} failed: "
                         f"{' '.join(done.stderr.split())[:400]}")
    return done


def toplevel(path: Path) -> Path | None:
    """The top directory of the git repository ``path`` is in, or None."""
    done = _git(path, "rev-parse", "--show-toplevel", check=False) if path.is_dir() else None
    return Path(done.stdout.strip()) if done and done.returncode == 0 else None


def _default_branch(repo: Path) -> str:
    remote_head = _git(repo, "symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD",
                       check=False).stdout.strip()
    if remote_head:
        return remote_head
    for name in ("main", "master", "trunk", "develop"):
        if _git(repo, "rev-parse", "-q", "--verify", f"refs/heads/{name}^{{commit}}",
                check=False).returncode == 0:
            return name
    raise WorldError(f"cannot tell the default branch of {repo} (no origin/HEAD, none of main, "
                     "master, trunk or develop): give the pull request's base with --base BRANCH.")


def _repository(repo: Path) -> str:
    url = _git(repo, "remote", "get-url", "origin", check=False).stdout.strip()
    if match := _REMOTE.search(url):
        return f"{match.group(1)}/{match.group(2)}"
    name = re.sub(r"[^\w.-]", "-", repo.name) or "repository"
    return f"you/{name}"


def _commit(repo: Path, ref: str, what: str) -> str:
    done = _git(repo, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if done.returncode != 0:
        raise WorldError(f"{what} {ref!r} is not a branch, tag or commit of {repo}: give an "
                         f"existing one with --{what} (git branch -a lists them).")
    return done.stdout.strip()


def find_pull(source: Path, base: str | None, head: str | None) -> YourPull:
    """The pull request ``head`` -> ``base`` of the repository at ``source`` (defaults: the
    current branch into the default branch)."""
    top = toplevel(source)
    if top is None:
        raise WorldError(f"{source} is not in a git repository: run this in your repository, "
                         "or give it with --repo PATH.")
    if head is None:
        head = _git(top, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
        if not head:
            raise WorldError(f"{top} has no branch checked out (a detached HEAD): check out "
                             "the pull request's branch, or give it with --head BRANCH.")
    base = base or _default_branch(top)
    base_sha, head_sha = _commit(top, base, "base"), _commit(top, head, "head")
    if base_sha == head_sha:
        raise WorldError(f"{head!r} and {base!r} are the same commit: there is no pull "
                         "request to try. Check out your feature branch, or give --head and "
                         "--base.")
    merge_base = _git(top, "merge-base", base_sha, head_sha, check=False)
    if merge_base.returncode != 0:
        raise WorldError(f"{head!r} and {base!r} share no history in {top} (a shallow clone?): "
                         "fetch the rest (git fetch --unshallow) or give other branches.")
    files = _files(top, merge_base.stdout.strip(), head_sha)
    if not files:
        raise WorldError(f"{head!r} changes no file against {base!r}: nothing to review.")
    short = base.removeprefix("origin/")
    return YourPull(top, _repository(top), short, head.removeprefix("origin/"), base_sha,
                    head_sha, files)


def _files(repo: Path, base: str, head: str) -> list[dict[str, Any]]:
    """The changed files as GitHub's files endpoint lists them (patch: the hunks only)."""
    diff = _git(repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", base,
                head).stdout
    files: list[dict[str, Any]] = []
    for chunk in re.split(r"^(?=diff --git )", diff, flags=re.M):
        if not chunk.startswith("diff --git "):
            continue
        head_lines, _, hunks = chunk.partition("\n@@")
        entry: dict[str, Any] = {"status": "modified"}
        for line in head_lines.splitlines():
            if line.startswith("+++ b/"):
                entry["filename"] = line[6:]
            elif line.startswith("--- a/"):
                entry.setdefault("old", line[6:])
            elif line.startswith("rename from "):
                entry.update(status="renamed", previous_filename=line[12:])
            elif line.startswith("rename to "):
                entry["filename"] = line[10:]
            elif line.startswith("new file mode"):
                entry["status"] = "added"
            elif line.startswith("deleted file mode"):
                entry["status"] = "removed"
        entry.setdefault("filename", entry.get("old") or chunk.split(" b/", 1)[-1].split("\n")[0])
        entry.pop("old", None)
        if hunks:
            entry["patch"] = ("@@" + hunks).rstrip("\n")
            entry["additions"] = sum(1 for x in entry["patch"].splitlines()
                                     if x.startswith("+"))
            entry["deletions"] = sum(1 for x in entry["patch"].splitlines()
                                     if x.startswith("-"))
        files.append(entry)
        if len(files) >= MAX_FILES:
            break
    return files


@contextlib.contextmanager
def build_your_world(base: Path, pull: YourPull, workflow_name: str, workflow_text: str,
                     *, api_key: str = "") -> Iterator[World]:
    """The world under ``base`` (empty): a copy of your repository on the pull request's head,
    its origin a bare copy holding the base and head branches; the servers around it."""
    repo = base / "repo"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(pull.source), str(repo)],
                   check=True, capture_output=True, timeout=600)
    _git(repo, "checkout", "-q", "-B", pull.head_ref, pull.head_sha)
    if pull.base_ref != pull.head_ref:
        _git(repo, "branch", "-f", pull.base_ref, pull.base_sha)
    _git(repo, "remote", "set-url", "origin", f"https://github.com/{pull.repository}.git")
    workflow = repo / ".github" / "workflows" / workflow_name
    workflow.parent.mkdir(parents=True, exist_ok=True)
    if not workflow.exists():  # the copy of a workflow you have not committed: not a change
        with (repo / ".git" / "info" / "exclude").open("a", encoding="utf-8") as exclude:
            exclude.write(f"\n/.github/workflows/{workflow_name}\n")
    workflow.write_text(workflow_text, encoding="utf-8")
    bare = base / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True,
                   capture_output=True, timeout=600)
    fields: dict[str, Any] = {"main_sha": pull.base_sha, "head_sha": pull.head_sha,
                              "repository": pull.repository, "base_ref": pull.base_ref,
                              "head_ref": pull.head_ref}
    if api_key:
        fields["api_key"] = api_key
    with serve_world(base, repo, bare, **fields) as world:
        yield world


# -- what the stand-in answers about your pull request -----------------------------------------


def _inline(text: str, limit: int = 80) -> str:
    text = " ".join(text.replace("`", "'").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def review_findings(pull: YourPull, count: int = 3) -> list[dict[str, Any]]:
    """Findings on added lines of the pull request, one per file (the first line that is not
    blank), at most ``count``."""
    findings: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path, line, text in pull.added_lines():
        if path in seen or not text.strip():
            continue
        seen.add(path)
        findings.append({
            "path": path, "line": line, "severity": "minor",
            "title": f"A look at line {line} of {Path(path).name}",
            "body": f"The stand-in agent picked this added line (`{_inline(text)}`) to show "
                    "where a finding lands; the real agent says what is wrong with it, if "
                    "anything."})
        if len(findings) >= count:
            break
    return findings


def markdown_target(pull: YourPull, repo: Path) -> str:
    """The Markdown file a docs update edits: one the pull request changes, else the README,
    else any Markdown file of the repository, else a new NOTES.md."""
    changed = [f["filename"] for f in pull.files
               if f["filename"].lower().endswith(".md") and f["status"] != "removed"]
    if changed:
        return str(changed[0])
    tracked = _git(repo, "ls-files", "-z", "--", "*.md", "*.MD", "*.markdown").stdout
    names = sorted((n for n in tracked.split("\0") if n), key=lambda n: (n.count("/"), n))
    readme = [n for n in names if Path(n).name.lower() == "readme.md" and "/" not in n]
    return (readme or names or ["NOTES.md"])[0]


def docs_write(pull: YourPull, repo: Path) -> tuple[str, dict[str, str]]:
    """(answer, writes) of a docs update: a section appended to one of your Markdown files
    that lists what the pull request changes."""
    target = markdown_target(pull, repo)
    path = repo / target
    before = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    changed = [f["filename"] for f in pull.files][:10]
    section = (f"\n## Changes in {pull.head_ref}\n\n"
               + "".join(f"- `{_inline(name, 120)}`\n" for name in changed))
    after = before + ("" if not before or before.endswith("\n") else "\n") + section
    answer = (f"Updated {target}: it now lists the {len(pull.files)} file(s) {pull.head_ref} "
              f"changes against {pull.base_ref}.")
    return answer, {target: after}


@dataclass(frozen=True)
class Failure:
    step: str  # the failing step's name, as the run's job lists it (or the failing tests)
    line: str  # the first line of the log that says what went wrong
    what: str = "the step"  # or "the test run" (a plain log: the runner's failing tests)


_STAMP = re.compile(r"^\ufeff?\d{4}-\d\d-\d\dT[\d:.]+Z ")
_ERROR = re.compile(r"(?i)(##\[error\]|\berror\b|\bfailed\b|\bfailure\b|traceback)")


def read_failure(log: str) -> Failure:
    """The failing step of a GitHub Actions job log (the last ``##[group]Run ...`` before the
    first ``##[error]``) and its first line that says what went wrong. A plain test runner's
    log (no step in it) names its failing tests or command instead, as ``ci-context`` reads
    them (gh/testlog.py)."""
    step, found_step, first = "", "", ""
    finder = FailureFinder()
    for raw in log.splitlines():
        finder.feed(clean(raw)[1])
        line = _STAMP.sub("", raw).strip()
        if line.startswith("##[group]"):
            step = line[len("##[group]"):].strip()
            continue
        if line.startswith("##[error]") and not found_step:
            found_step = step
        if not first and _ERROR.search(line) and not line.startswith(
                "##[error]Process completed"):
            first = line.removeprefix("##[error]").strip()
    if found_step or step:
        return Failure(found_step or step, first[:300])
    named = describe(finder.failures, finder.more)
    return Failure(named or "(the log names no step, test or command)", first[:300],
                   "the test run" if named else "the step")


def triage_answer(failure: Failure, fix: bool = False) -> str:
    """A diagnosis of the failure in the log, ending in the JSON the ci-triage schema asks."""
    diagnosis = {"cause": failure.line or "the log says no more than that the step failed",
                 "failing-step": failure.step,
                 "suggested-fix": f"Look at {failure.what} {failure.step!r}: "
                                  f"{failure.line or 'its log'}.", "confidence": 0.5}
    head = ("The stand-in agent read the failed run's log: " if not fix else
            "The stand-in agent does not fix code; it read the failed run's log: ")
    return (f"{head}{failure.what} `{_inline(failure.step)}` failed with "
            f"`{_inline(failure.line or 'no error line')}`.\n\n```json\n"
            f"{json.dumps(diagnosis)}\n```")


def answers(pull: YourPull, repo: Path, failure: Failure) -> dict[str, tuple[str, dict[str, str]]]:
    """What the stand-in answers, by what the workflow asks of it (try_example's kinds)."""
    names = ", ".join(f"`{_inline(f['filename'], 60)}`" for f in pull.files[:5])
    more = f" and {len(pull.files) - 5} more" if len(pull.files) > 5 else ""
    docs = docs_write(pull, repo)
    return {
        "docs": docs,
        "triage": (triage_answer(failure), {}),
        "fix": (triage_answer(failure, fix=True), {}),
        "review": (f"Reviewed {pull.head_ref} against {pull.base_ref}: {len(pull.files)} "
                   f"file(s) changed ({names}{more}). The stand-in does not judge code; the "
                   "real agent would say here what to change.", {}),
        "readme-review": (f"Read {markdown_target(pull, repo)} against the code next to it "
                          "(the stand-in checks nothing; the real agent would).", {}),
        "code-review": (review_answer(review_findings(pull),
                                      f"{len(pull.files)} file(s) changed."), {}),
    }
