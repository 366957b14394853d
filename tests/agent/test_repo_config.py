"""PolicyGuard: our policy, and none of the repository's CLI configuration, for a run.

The attack tests put every kind of configuration file at the git root, between the root and the
working directory and in it (a monorepo job), in other cases and as links and directories, and
check that the stand-in CLI (which records every path it can see from the git root down) sees
none of them, and that all of it is back byte for byte afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cursor_agent_action.agent.guards.permissions import build_policy
from cursor_agent_action.agent.guards.repo_config import TABLE, PolicyGuard, levels
from cursor_agent_action.errors import SetupError
from tests.support.agent_run import run

# -- PolicyGuard -------------------------------------------------------------------------------


def _policy() -> bytes:
    return build_policy("docs").render()


def test_guard_writes_policy_and_removes_file_and_created_dir(tmp_path: Path) -> None:
    with PolicyGuard(tmp_path, build_policy("docs")) as guard:
        assert (tmp_path / ".cursor" / "cli.json").read_bytes() == _policy()
    assert not guard.tampered
    assert list(tmp_path.iterdir()) == []


def test_guard_restores_a_pre_existing_file_byte_for_byte(tmp_path: Path) -> None:
    cursor = tmp_path / ".cursor"
    cursor.mkdir()
    original = b'{"permissions": {"allow": ["Shell(**)"]}}\r\n\x00odd bytes'
    (cursor / "cli.json").write_bytes(original)
    os.chmod(cursor / "cli.json", 0o600)
    (cursor / "rules.md").write_text("keep me")
    with PolicyGuard(tmp_path, build_policy("read-only")) as guard:
        assert (cursor / "cli.json").read_bytes() == build_policy("read-only").render()
    assert not guard.tampered
    assert (cursor / "cli.json").read_bytes() == original
    assert (os.stat(cursor / "cli.json").st_mode & 0o777) == 0o600
    assert (cursor / "rules.md").read_text() == "keep me"
    assert sorted(p.name for p in cursor.iterdir()) == ["cli.json", "rules.md"]


def test_guard_restores_after_an_exception(tmp_path: Path) -> None:
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor" / "cli.json").write_bytes(b"original\n")
    with pytest.raises(RuntimeError, match="boom"), PolicyGuard(tmp_path, build_policy("edit")):
        raise RuntimeError("boom")
    assert (tmp_path / ".cursor" / "cli.json").read_bytes() == b"original\n"


def test_restore_is_idempotent(tmp_path: Path) -> None:
    guard = PolicyGuard(tmp_path, build_policy("edit"))
    with guard:
        guard.restore()  # e.g. from a signal handler
        assert not (tmp_path / ".cursor").exists()
        (tmp_path / ".cursor").mkdir()
        (tmp_path / ".cursor" / "cli.json").write_text("written after restore")
    # __exit__ after an earlier restore() changes nothing.
    assert (tmp_path / ".cursor" / "cli.json").read_text() == "written after restore"
    assert not guard.tampered


def _modify(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"Shell(ls)", b"Shell(**)"))


def _delete(path: Path) -> None:
    path.unlink()


def _symlink(path: Path) -> None:
    elsewhere = path.parent.parent.parent / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())  # same bytes, but through a link
    path.unlink()
    path.symlink_to(elsewhere)


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "x").write_text("x")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _dir_symlink(path: Path) -> None:
    target = path.parent.parent.parent / "outside"
    target.mkdir()
    (target / "cli.json").write_bytes(path.read_bytes())
    path.unlink()
    path.parent.rmdir()
    path.parent.symlink_to(target)


@pytest.mark.parametrize("tamper", [_modify, _delete, _symlink, _directory, _fifo, _dir_symlink])
@pytest.mark.parametrize("pre_existing", [True, False])
def test_tampering_is_reported_and_the_original_restored(
    tmp_path: Path, tamper: object, pre_existing: bool
) -> None:
    workspace = tmp_path / "ws"
    cursor = workspace / ".cursor"
    cursor.mkdir(parents=True)
    if pre_existing:
        (cursor / "cli.json").write_bytes(b"ours\n")
    with PolicyGuard(workspace, build_policy("read-only")) as guard:
        assert callable(tamper)
        tamper(cursor / "cli.json")
    assert guard.tampered
    assert not cursor.is_symlink()
    if pre_existing:
        assert (cursor / "cli.json").read_bytes() == b"ours\n"
        assert not (cursor / "cli.json").is_symlink()
    else:
        assert not (cursor / "cli.json").exists()
        assert not (cursor / "cli.json").is_symlink()
    assert not (tmp_path / "outside" / "cli.json").exists() or tamper is _dir_symlink
    if tamper is _symlink:
        assert (tmp_path / "elsewhere.json").read_bytes() == build_policy("read-only").render()


def test_guard_refuses_a_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="does not exist"):
        PolicyGuard(tmp_path / "nope", build_policy("edit")).__enter__()
    assert not (tmp_path / "nope").exists()


def test_a_failed_restore_is_a_clear_error(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".cursor").mkdir(parents=True)
    (workspace / ".cursor" / "cli.json").write_bytes(b"ours\n")
    guard = PolicyGuard(workspace, build_policy("edit"))
    with pytest.raises(SetupError, match="restored") as info, guard:
        shutil.rmtree(workspace)  # nowhere left to restore the file to
    assert "Do not commit" in info.value.hint
    assert guard.tampered


def test_agent_files_in_a_created_cursor_dir_are_kept(tmp_path: Path) -> None:
    with PolicyGuard(tmp_path, build_policy("edit")) as guard:
        (tmp_path / ".cursor" / "notes.md").write_text("agent wrote this")
    assert not guard.tampered
    assert [p.name for p in (tmp_path / ".cursor").iterdir()] == ["notes.md"]


def test_hooks_and_mcp_config_are_set_aside_for_the_run_and_restored(tmp_path: Path) -> None:
    """A checkout's .cursor/hooks.json and mcp.json (commands the CLI would run) are gone while
    the guard holds and come back byte for byte, mode included."""
    cursor = tmp_path / ".cursor"
    cursor.mkdir()
    (cursor / "hooks.json").write_bytes(b'{"hooks": {"beforeShellExecution": [1]}}\r\n')
    (cursor / "hooks.json").chmod(0o600)
    (cursor / "mcp.json").write_bytes(b'{"mcpServers": {}}')
    with PolicyGuard(tmp_path, build_policy("edit")) as guard:
        assert sorted(p.name for p in cursor.iterdir()) == ["cli.json"]
    assert not guard.tampered
    assert sorted(p.name for p in cursor.iterdir()) == ["hooks.json", "mcp.json"]
    assert (cursor / "hooks.json").read_bytes() == b'{"hooks": {"beforeShellExecution": [1]}}\r\n'
    assert (cursor / "hooks.json").stat().st_mode & 0o777 == 0o600
    assert (cursor / "mcp.json").read_bytes() == b'{"mcpServers": {}}'


@pytest.mark.parametrize("name", ["hooks.json", "mcp.json"])
@pytest.mark.parametrize("pre_existing", [True, False])
def test_hooks_or_mcp_config_appearing_during_the_run_is_tampering(
    tmp_path: Path, name: str, pre_existing: bool
) -> None:
    cursor = tmp_path / ".cursor"
    cursor.mkdir()
    if pre_existing:
        (cursor / name).write_bytes(b"original")
    with PolicyGuard(tmp_path, build_policy("read-only")) as guard:
        (cursor / name).write_text('{"planted": true}')
    assert guard.tampered
    if pre_existing:
        assert (cursor / name).read_bytes() == b"original"
    else:
        assert not (cursor / name).exists()




# -- every level from the git root to the working directory (a monorepo job) -----------------


def _tree(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Everything under ``root`` but ``.git``: kind, bytes (a link's target) and mode."""
    found: dict[str, tuple[str, bytes, int]] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [name for name in dirs if not (Path(directory) == root and name == ".git")]
        for name in (*dirs, *files):
            path = Path(directory) / name
            info = path.lstat()
            relative = str(path.relative_to(root))
            if path.is_symlink():
                found[relative] = ("link", os.fsencode(os.readlink(path)), 0)
            elif path.is_dir():
                found[relative] = ("dir", b"", info.st_mode & 0o7777)
            else:
                found[relative] = ("file", path.read_bytes(), info.st_mode & 0o7777)
    return found


def _plant(level: Path, tag: str) -> list[str]:
    """Every file of the table at ``level`` (directories with a file in them), each with its own
    bytes and an odd mode; the paths planted."""
    planted = []
    for entry in TABLE:
        path = level / entry.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry.path in (".cursor/rules", ".cursor/commands", ".cursor/skills"):
            (path / "sub").mkdir(parents=True)
            (path / "sub" / "x.md").write_bytes(f"{tag} {entry.path}\r\n\x00".encode())
            (path / "sub").chmod(0o750)
            planted.append(f"{path}/sub/x.md")
        else:
            path.write_bytes(f'{{"{tag}": "{entry.path}"}}\r\n\x00'.encode())
            path.chmod(0o640)
            planted.append(str(path))
    return planted


def _monorepo(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository whose job works in ``packages/app``, with every kind of configuration
    at the root, in ``packages`` (between) and in ``packages/app`` itself."""
    root = tmp_path / "mono"
    workspace = root / "packages" / "app"
    workspace.mkdir(parents=True)
    (workspace / "main.py").write_text("print('hi')\n")
    for level, tag in ((root, "root"), (root / "packages", "between"), (workspace, "here")):
        _plant(level, tag)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=root, check=True)
    return root, workspace


def test_levels_run_from_the_git_root_down_to_the_working_directory(tmp_path: Path) -> None:
    root, workspace = _monorepo(tmp_path)
    assert levels(workspace) == [root, root / "packages", workspace]
    assert levels(tmp_path) == [tmp_path.resolve()]  # outside a repository: only itself


@pytest.mark.parametrize("instructions", ["keep", "ignore"])
def test_no_configuration_of_any_level_is_there_during_the_run_and_all_comes_back(
    tmp_path: Path, instructions: str
) -> None:
    """Root-level and between-level files of every kind are gone while the guard holds (the
    instruction files too with ignore), only our policy is there, and afterwards the tree is
    byte for byte (modes and directories included) what it was."""
    root, workspace = _monorepo(tmp_path)
    before = _tree(root)
    policy = build_policy("edit")
    with PolicyGuard(workspace, policy, instructions=instructions) as guard:
        during = _tree(root)
        for prefix in ("", "packages/", "packages/app/"):
            for entry in TABLE:
                path = prefix + entry.path
                if path == "packages/app/.cursor/cli.json":
                    assert during[path] == ("file", policy.render(), 0o644)
                elif entry.rights or instructions == "ignore":
                    assert path not in during, path
                else:
                    assert during[path] == before[path]
    assert not guard.tampered
    assert _tree(root) == before


@pytest.mark.parametrize("name", [".Cursor/hooks.json", ".CURSOR/sandbox.json",
                                  ".claude/SETTINGS.json", ".MCP.json"])
def test_configuration_in_other_cases_is_set_aside_too(tmp_path: Path, name: str) -> None:
    """On a case-insensitive checkout (macOS) ``.Cursor/hooks.json`` is ``.cursor/hooks.json``."""
    root, workspace = _monorepo(tmp_path)
    (root / name).parent.mkdir(exist_ok=True)
    (root / name).write_text("variant")
    before = _tree(root)
    with PolicyGuard(workspace, build_policy("edit")):
        assert not (root / name).exists()
    assert _tree(root) == before


def test_links_and_odd_entries_in_place_of_configuration_are_set_aside_not_followed(
    tmp_path: Path,
) -> None:
    """A ``.cursor`` that is a link (at the root), a hooks.json that is a link or a directory
    (between), a policy that is a link (here): none is written through, all come back as they
    were, and the files they point at are never touched."""
    root = tmp_path / "mono"
    workspace = root / "packages" / "app"
    workspace.mkdir(parents=True)
    (root / ".git").mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "hooks").mkdir(parents=True)
    (elsewhere / "hooks.json").write_text("victim")
    (elsewhere / "cli.json").write_text("victim policy")
    (root / ".cursor").symlink_to(elsewhere)
    (root / "packages" / ".cursor").mkdir()
    (root / "packages" / ".cursor" / "hooks.json").symlink_to(elsewhere / "hooks.json")
    (root / "packages" / ".cursor" / "mcp.json").mkdir()
    (workspace / ".cursor").mkdir()
    (workspace / ".cursor" / "cli.json").symlink_to(elsewhere / "cli.json")
    victims = _tree(elsewhere)
    before = _tree(root)
    with PolicyGuard(workspace, build_policy("read-only")) as guard:
        assert not os.path.lexists(root / ".cursor")
        assert not os.path.lexists(root / "packages" / ".cursor" / "hooks.json")
        assert not os.path.lexists(root / "packages" / ".cursor" / "mcp.json")
        assert not (workspace / ".cursor" / "cli.json").is_symlink()
    assert not guard.tampered
    assert _tree(root) == before
    assert _tree(elsewhere) == victims


def test_configuration_the_agent_planted_at_any_level_is_removed_and_reported(
    tmp_path: Path,
) -> None:
    """An uncontained agent writes hooks at the root, a sandbox file between, a link in place
    of .claude: each is found, removed and named; the repository's own files come back."""
    root, workspace = _monorepo(tmp_path)
    before = _tree(root)
    with PolicyGuard(workspace, build_policy("edit")) as guard:
        (root / ".cursor" / "hooks.json").write_text('{"hooks": "planted"}')
        (root / "packages" / ".cursor" / "sandbox.json").write_text('{"type": "insecure_none"}')
        (root / ".claude").rmdir()
        (root / ".claude").symlink_to(tmp_path)
        (workspace / ".mcp.json").mkdir()
    assert guard.tampered
    named = "\n".join(guard.changes)
    for path in (".cursor/hooks.json", "packages/.cursor/sandbox.json", ".claude",
                 "packages/app/.mcp.json"):
        assert f"{path}: " in named
    assert _tree(root) == before


@pytest.mark.usefixtures("run_env")
@pytest.mark.parametrize("isolation", ["auto", "none"])
def test_the_cli_sees_no_configuration_of_any_level_in_a_monorepo_job(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], isolation: str
) -> None:
    """The stand-in CLI lists every path from the git root down when it starts: the policy is
    the only configuration file among them; after the run the tree is as it was."""
    root, workspace = _monorepo(tmp_path)
    before = _tree(root)
    result = run(tmp_path, workspace, capsys, {}, "--repo-instructions", "ignore",
                 "--isolation", isolation)
    assert result.code == 0, result.log
    [entry] = result.runs
    seen = set(entry["repo_files"])
    assert "packages/app/main.py" in seen  # it did look
    assert json.loads(entry["cli_json"])["permissions"]["deny"]  # ours
    for prefix in ("", "packages/", "packages/app/"):
        for item in TABLE:
            if prefix + item.path != "packages/app/.cursor/cli.json":
                assert prefix + item.path not in seen, prefix + item.path
    assert _tree(root) == before


@pytest.mark.usefixtures("run_env")
def test_an_agent_that_plants_root_hooks_fails_the_run_and_they_are_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root, workspace = _monorepo(tmp_path)
    before = _tree(root)
    planted = str(root / "packages" / ".cursor" / "hooks.json")
    result = run(tmp_path, workspace, capsys, {"edits": {planted: '{"hooks": {}}'}},
                 "--isolation", "none")
    assert result.outputs["conclusion"] == "failure"
    assert "packages/.cursor/hooks.json: a file appeared during the run" in result.summary
    assert _tree(root) == before


def test_docs_permissions_has_the_table_with_every_file_and_its_source() -> None:
    """One table in the code, the same in docs/permissions.md."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "permissions.md").read_text()
    for entry in TABLE:
        row = next((line for line in docs.splitlines() if line.startswith(f"| `{entry.path}")),
                   "")
        assert row, entry.path
        assert entry.does in row
        for source in entry.source.split(", "):
            assert source in row, (entry.path, source)


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_cursor_entry_that_is_no_directory_in_the_working_directory_is_set_aside_whole(
    tmp_path: Path, kind: str
) -> None:
    """Our policy needs a real ``.cursor/``: a link (never written through) or a file there is
    set aside for the run and comes back as it was."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "cli.json").write_text("victim")
    if kind == "link":
        (workspace / ".cursor").symlink_to(target)
    else:
        (workspace / ".cursor").write_text("a file")
    before = _tree(workspace)
    with PolicyGuard(workspace, build_policy("edit")) as guard:
        assert (workspace / ".cursor").is_dir()
        assert not (workspace / ".cursor").is_symlink()
    assert not guard.tampered
    assert _tree(workspace) == before
    assert (target / "cli.json").read_text() == "victim"


def test_a_directory_the_agent_replaced_by_a_file_above_the_working_directory_comes_back(
    tmp_path: Path,
) -> None:
    root, workspace = _monorepo(tmp_path)
    before = _tree(root)
    with PolicyGuard(workspace, build_policy("edit")) as guard:
        shutil.rmtree(root / "packages" / ".claude")
        (root / "packages" / ".claude").write_text("not a directory")
        (workspace / ".cursor" / "cli.json").unlink()
        (workspace / ".cursor" / "cli.json").mkdir()
    assert "packages/.claude: became a file" in guard.changes
    assert "packages/app/.cursor/cli.json: our policy became a directory (or was changed)" in (
        guard.changes)
    assert _tree(root) == before
