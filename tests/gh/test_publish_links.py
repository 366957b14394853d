"""publish refuses what a hostile agent could hide from a path-by-path check: links that lead
out of the repository or into .git or protected paths through other links, and protected
names at any depth, in other cases and Unicode forms. Real git against a local bare remote;
nothing may be pushed and no API call made on a refusal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cursor_agent_action.errors import EXIT_REFUSED
from cursor_agent_action.markdown import escape_invisible
from tests.gh.test_publish import Workspace, sh
from tests.gh.test_publish import ws as workspace_fixture
from tests.gh.test_publish_patch import agent_tree as agent_tree_fixture
from tests.gh.test_publish_patch import make_patch
from tests.support.github_server import error_line

ws = workspace_fixture
agent_tree = agent_tree_fixture
LINKS = "symbolic links that leave the repository or lead into protected paths"


def _link(repo: Path, links: dict[str, str]) -> None:
    for name, target in links.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, repo / name)


def _commit(repo: Path, message: str) -> None:
    sh(repo, "add", "-A")
    sh(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", message)


def _refused(ws: Workspace, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Publish, expect a refusal with nothing pushed and no API call; the error line."""
    code, out = ws.publish(*args)
    line = error_line(capsys.readouterr().out)
    assert code == EXIT_REFUSED, line
    assert out == {}
    assert ws.gh.requests == []
    assert sh(ws.remote, "branch", "--list") == "feature"
    return line


def test_a_new_link_is_refused_unless_links_are_allowed(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _link(ws.repo, {"docs/readme.md": "../README.md"})
    line = _refused(ws, capsys)
    assert "symbolic links (set allow-links to publish links): docs/readme.md" in line
    code, out = ws.publish("--allow-links")
    assert code == 0
    assert out["changed"] == "true"


@pytest.mark.parametrize(("links", "named"), [
    # The issue's chain: each link looks inside the repository on its own.
    ({"docs/y": "..", "docs/x": "y/docs/y/../../etc/passwd"},
     ["docs/x -> y/docs/y/../../etc/passwd (leaves the repository)",
      "docs/y -> .. (points at a directory that holds it"]),
    ({"src/wf": "../.github", "docs/w": "../src/wf/workflows/ci.yml"},
     ["docs/w -> ../src/wf/workflows/ci.yml (leads into .github)",
      "src/wf -> ../.github (leads into .github)"]),
    ({"src/g": "../.git", "docs/cfg": "../src/g/config"},
     ["docs/cfg -> ../src/g/config (leads into .git)"]),
    ({"docs/a": "b/../../..", "docs/b": "c", "docs/c": "."}, ["docs/a -> b/../../.. (leaves"]),
    ({"docs/l1": "l2", "docs/l2": "l1"}, ["docs/l1 -> l2 (goes through more than 40 links"]),
    ({"docs/w": "../.GitHub/workflows"}, ["docs/w -> ../.GitHub/workflows (leads into .GitHub)"]),
    ({"docs/w": "../\uff0ecursor/hooks.json"}, ["(leads into \uff0ecursor)"]),
    ({"docs/w": "../sub/AGENTS.md"}, ["docs/w -> ../sub/AGENTS.md (leads into AGENTS.md)"]),
    ({"docs/h": "/etc/passwd"}, ["docs/h -> /etc/passwd (leaves the repository)"]),
])  # fmt: skip
def test_link_chains_that_leave_or_lead_into_protected_paths_are_refused(
    ws: Workspace, capsys: pytest.CaptureFixture[str], links: dict[str, str], named: list[str]
) -> None:
    _link(ws.repo, links)
    line = _refused(ws, capsys, "--allow-links")
    assert LINKS in line
    for text in named:
        assert text in line


def test_a_new_link_through_a_committed_link_is_followed(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """The link into .git is already in the repository; only the new one is the agent's."""
    _link(ws.repo, {"src/g": "../.git"})
    _commit(ws.repo, "an old link")
    sh(ws.repo, "push", "-q", "origin", "feature")
    _link(ws.repo, {"docs/hooks": "../src/g/hooks"})
    line = _refused(ws, capsys, "--allow-links")
    assert "docs/hooks -> ../src/g/hooks (leads into .git)" in line
    assert "src/g ->" not in line


def test_a_link_to_a_directory_holding_protected_files_is_refused(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """``docs/all -> ../src`` would let ``docs/all/.claude/settings.json`` pass ``docs/**``."""
    (ws.repo / "src" / ".claude").mkdir(parents=True)
    (ws.repo / "src" / ".claude" / "settings.json").write_text("{}\n")
    _commit(ws.repo, "settings")
    sh(ws.repo, "push", "-q", "origin", "feature")
    _link(ws.repo, {"docs/all": "../src"})
    line = _refused(ws, capsys, "--allow-links", "--allowed-paths", "docs/**")
    assert "docs/all -> ../src (leads to a directory holding src/.claude/settings.json)" in line


def test_the_issues_chain_in_a_patch_file_is_refused(
    ws: Workspace, agent_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    patch = make_patch(agent_tree, tmp_path, {},
                       {"docs/y": "..", "docs/x": "y/docs/y/../../etc/passwd"})
    line = _refused(ws, capsys, "--patch-file", str(patch), "--allow-links")
    assert "docs/x -> y/docs/y/../../etc/passwd (leaves the repository)" in line


@pytest.mark.parametrize("path", [
    "docs/.cursor/hooks.json", "src/.claude/settings.json", "docs/AGENTS.md", "pkg/CLAUDE.md",
    "pkg/.mcp.json", "lib/.cursorrules", ".Cursor/hooks.json", ".GITHUB/workflows/x.yml",
    "docs/Agents.md", "docs/\uff0ecursor/hooks.json", "docs/\uff21GENTS.md",
    "docs/.cursor\u200b/hooks.json", "docs/.claude./settings.json",
])  # fmt: skip
def test_protected_names_at_any_depth_and_in_any_form_are_refused(
    ws: Workspace, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    """An allow-list that covers them (``**``) does not help: protected paths win."""
    (ws.repo / path).parent.mkdir(parents=True, exist_ok=True)
    (ws.repo / path).write_text("{}\n")
    line = _refused(ws, capsys, "--allowed-paths", "docs/**\n**/*.md\n**")
    assert f"protected paths: {escape_invisible(path)}" in line  # shown escaped


# (``git~1`` and ``.git.``, which NTFS reads as .git, are left out: git itself never adds them.)
@pytest.mark.parametrize("path", ["sub/.gitattributes", "docs/.GitModules", "a/.g\u200cit/config",
                                  "a/.GİT/hooks/pre-commit"])
def test_git_names_at_any_depth_and_in_any_form_are_refused_even_unprotected(
    ws: Workspace, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    (ws.repo / path).parent.mkdir(parents=True, exist_ok=True)
    (ws.repo / path).write_text("x\n")
    line = _refused(ws, capsys, "--protected-paths", "none")
    assert ".git files" in line
