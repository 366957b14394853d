"""A hostile pull request's agent attacks the box, round four: what a red-team session got out
of the box after round three was mended. Each test failed on the code before its fix.

- ignored files: the box decided "ignored" with the copy's own ``.gitignore`` files, which the
  agent may empty, negate or delete (an untracked, self-ignoring ``.venv/.gitignore``: the
  ``.pth`` it then planted came back silently and ran in every later ``python`` of that venv);
- a working tree whose top ``.git`` is a file (a linked worktree, a submodule as the working
  directory): the agent replaced it with a link to a git directory of its own, and root's git
  made the patch there (reading, through it, a repository masked from the agent);
- a token in a git config section's *name* (``url."https://x:TOKEN@host/".insteadOf``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.box import Box
from tests.support.box import run as _run
from tests.support.box import seen as _seen

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="the box runs as root on Linux (CI here is root)",
)
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
PLANTED = ("src/__pycache__/app.cpython-311.pyc", "src/evil.pyc", ".env", "build/run.sh")


def _commit(box: Box, *paths: str) -> None:
    subprocess.run([*GIT, "add", *paths], cwd=box.workspace, check=True)
    subprocess.run([*GIT, "commit", "-qm", "more"], cwd=box.workspace, check=True)


def _ignoring(box: Box) -> None:
    (box.workspace / ".gitignore").write_text("*.pyc\n__pycache__/\n.env\nbuild/\n")
    _commit(box, ".gitignore")


def test_an_emptied_gitignore_in_the_copy_brings_no_ignored_file_out(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    _ignoring(box)
    body = (": > .gitignore; mkdir -p src/__pycache__ build; "
            "for p in " + " ".join(PLANTED) + "; do echo PLANTED > $p; done")
    out = _run(box, capsys, body, "--preset", "edit")
    assert [p for p in PLANTED if (box.workspace / p).exists()] == [], out["log"]
    assert (box.workspace / ".gitignore").read_text().startswith("*.pyc")


def test_a_negating_gitignore_below_brings_no_ignored_file_out(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    _ignoring(box)
    body = "printf '!*.pyc\\n' > src/.gitignore; echo PLANTED > src/evil.pyc; echo ok > new.md"
    out = _run(box, capsys, body, "--preset", "edit")
    assert not (box.workspace / "src/evil.pyc").exists(), out["log"]
    assert not (box.workspace / "src/.gitignore").exists()
    # The new .gitignore is protected: the run fails, and nothing of it comes back.
    assert out["conclusion"] == "failure"
    assert "src/.gitignore" in out["log"]
    assert not (box.workspace / "new.md").exists()


def test_deleting_a_self_ignoring_untracked_gitignore_plants_nothing_in_a_venv(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """An earlier step made a venv in the workspace; like Python 3.13's venv (and pytest's,
    mypy's, ruff's caches) it holds an untracked ``.gitignore`` of ``*``. The agent deletes it in
    its copy and writes a ``.pth`` there, which every later ``python`` of that venv would run."""
    site = box.workspace / ".venv/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (box.workspace / ".venv/.gitignore").write_text("# Created by venv\n*\n")
    body = ("rm .venv/.gitignore; echo 'import os' > .venv/lib/python3.11/site-packages/"
            "zz_evil.pth; echo PLANTED > .venv/run.sh")
    out = _run(box, capsys, body, "--preset", "edit")
    assert not (site / "zz_evil.pth").exists(), out["log"]
    assert not (box.workspace / ".venv/run.sh").exists()
    assert (box.workspace / ".venv/.gitignore").exists()
    assert out["conclusion"] == "success", out["log"]
    assert "that .gitignore ignores were left in the box" in out["summary"]


def _worktree(box: Box) -> None:
    tree = box.base / "wt"
    subprocess.run([*GIT, "worktree", "add", "-q", str(tree)], cwd=box.workspace, check=True)
    box.workspace = tree


def test_a_worktrees_git_file_swapped_for_the_agents_own_git_dir_is_not_used(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    _worktree(box)
    body = (
        "mkdir /tmp/evil && cd /tmp/evil && git init -q . && echo CANARY-OF-THE-AGENT > c.txt"
        " && git -c user.name=a -c user.email=a@a add c.txt && git -c user.name=a"
        " -c user.email=a@a commit -qm x && cd - >/dev/null && cp -r /tmp/evil/.git agentgit"
        " && chmod -R a+rX agentgit; rm -f .git && ln -s agentgit .git; echo more >> README.md"
    )
    out = _run(box, capsys, body, "--preset", "edit")
    state = box.runner_temp / "cursor-agent-action"
    assert [p for p in state.rglob("*.patch") if b"CANARY-OF-THE-AGENT" in p.read_bytes()] == []
    assert (box.workspace / "README.md").read_text() == "# demo\nmore\n", out["log"]
    assert (box.workspace / ".git").is_file()


def test_roots_git_never_reads_a_masked_repository_through_a_git_dir_the_agent_made(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """A private repository an earlier step checked out under RUNNER_TEMP (masked: the agent
    cannot read it); the agent's git dir points its refs and objects there."""
    private = box.runner_temp / "private"
    private.mkdir(parents=True)
    (private / "secret.txt").write_text("PRIVATE-REPO-SECRET-7f3a\n")
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=private, check=True)
    subprocess.run([*GIT, "add", "."], cwd=private, check=True)
    subprocess.run([*GIT, "commit", "-qm", "p"], cwd=private, check=True)
    _worktree(box)
    body = (f"ls {private} > $SEEN/ls-private 2>&1; mkdir -p agentgit/objects/info agentgit/refs"
            "; echo 'ref: refs/heads/main' > agentgit/HEAD; "
            f"ln -s {private}/.git/refs/heads agentgit/refs/heads; "
            f"echo {private}/.git/objects > agentgit/objects/info/alternates; "
            "rm -f .git && ln -s agentgit .git")
    out = _run(box, capsys, body, "--preset", "edit")
    assert "secret.txt" not in _seen(box, "ls-private")
    state = box.runner_temp / "cursor-agent-action"
    assert [p for p in state.rglob("*.patch") if b"PRIVATE-REPO-SECRET" in p.read_bytes()] == []
    assert "secret.txt" not in out["log"] + out["summary"]


def test_a_token_in_a_url_sections_name_is_masked_and_warned_about(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "ghs_INSTEADOFsecret0123456789abcdefABCD"
    subprocess.run(["git", "config", f"url.https://x-access-token:{token}@github.com/.insteadOf",
                    "https://github.com/"], cwd=box.workspace, check=True)
    subprocess.run(["git", "config", "remote.origin.url", "https://github.com/o/r"],
                   cwd=box.workspace, check=True)
    out = _run(box, capsys, "cat .git/config > $SEEN/config")
    assert token not in _seen(box, "config")
    assert "https://github.com/o/r" in _seen(box, "config")  # the rest is still there
    assert "persist-credentials: false" in out["log"]


def test_a_protected_file_a_new_gitignore_hides_still_fails_the_run(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new .gitignore ignoring itself and a new .gitattributes: neither is in the patch, but
    the run still fails and names them (second round of attacks; it succeeded before)."""
    body = ("printf '.gitignore\\n.gitattributes\\n' > .gitignore; "
            "printf 'src/app.py filter=x\\n' > .gitattributes; echo 'print(2)' > src/app.py")
    out = _run(box, capsys, body, "--preset", "edit")
    assert out["conclusion"] == "failure", out["log"]
    assert ".gitattributes" in out["log"]
    assert (box.workspace / "src/app.py").read_text() == "print('hi')\n"  # nothing applied
    assert not (box.workspace / ".gitattributes").exists()


def test_a_submodule_whose_git_file_the_agent_deleted_gives_nothing_back(
    box: Box, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The copy's submodule pointer is root's but sits in a directory the agent owns: deleted,
    root's walk entered the submodule and new files landed in its checkout."""
    source = tmp_path / "subsource"
    source.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=source, check=True)
    (source / "lib.py").write_text("x = 1\n")
    subprocess.run([*GIT, "add", "."], cwd=source, check=True)
    subprocess.run([*GIT, "commit", "-qm", "s"], cwd=source, check=True)
    subprocess.run([*GIT, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
                    str(source), "sub"], cwd=box.workspace, check=True)
    subprocess.run([*GIT, "commit", "-qm", "sub"], cwd=box.workspace, check=True)
    out = _run(box, capsys, "rm -f sub/.git; echo EVIL > sub/conftest.py; echo ok > top.md",
               "--preset", "edit")
    assert not (box.workspace / "sub" / "conftest.py").exists(), out["log"]
    assert (box.workspace / "top.md").read_text() == "ok\n"
    assert "sub/conftest.py" in out["summary"]
