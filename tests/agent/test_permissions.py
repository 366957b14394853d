"""Permission presets, the hardened floor, token grammar, the command and PolicyGuard."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from cursor_agent_action.agent.permissions import (
    FLOOR,
    PRESETS,
    PolicyGuard,
    build_policy,
    parse_tokens,
)
from cursor_agent_action.cli import main
from cursor_agent_action.errors import SetupError, UsageError
from cursor_agent_action.globs import glob_to_regex
from cursor_agent_action.runner_io import parse_output_file

REQUIRED_FLOOR = (
    "Write(.github/**)",
    "Write(.cursor/**)",
    "Write(.git/**)",
    "Read(**/.env*)",
    "Write(**/.env*)",
    "Read(**/*.pem)",
    "Read(**/*.key)",
    "Read(**/id_rsa*)",
    "Read(**/.npmrc)",
    "Read(**/.pypirc)",
    "Read(**/.netrc)",
    "Read(**/credentials*)",
    "Read(.git/config)",
    "Shell(git)",
    "Shell(gh)",
    "Shell(curl)",
    "Shell(wget)",
    "Shell(ssh)",
    "Shell(scp)",
    "Shell(nc)",
    "Shell(sudo)",
    "Shell(env)",
)


# -- presets and floor -------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_carries_the_whole_floor(preset: str) -> None:
    policy = build_policy(preset)
    assert set(FLOOR) <= set(policy.deny)
    for token in REQUIRED_FLOOR:
        assert token in policy.deny, token


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_reads_the_repo_and_runs_harmless_shell_only(preset: str) -> None:
    policy = build_policy(preset)
    assert "Read(**)" in policy.allow
    for word in ("ls", "grep", "cat", "wc", "head", "tail"):
        assert f"Shell({word})" in policy.allow
    shell_allowed = {t for t in policy.allow if t.startswith("Shell(")}
    assert not shell_allowed & set(policy.deny)


@pytest.mark.parametrize("preset", PRESETS)
def test_no_preset_allows_a_shell_command_that_runs_other_programs(preset: str) -> None:
    """`find -exec` and `rg --pre` run any program, past the floor's shell denies; a user may
    still opt in with an explicit allow."""
    for word in ("find", "rg", "xargs", "env", "bash", "sh", "python"):
        assert f"Shell({word})" not in build_policy(preset).allow
    assert "Shell(find)" in build_policy(preset, allow=["Shell(find)"]).allow


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(
    "path",
    [".github/workflows/ci.yml", ".cursor/cli.json", ".git/hooks/pre-commit", ".env",
     "app/.env.local", "deploy/server.pem", "home/.ssh/id_rsa", ".npmrc", "docs/.env.md"],
)  # fmt: skip
def test_no_preset_permits_writing_protected_paths(preset: str, path: str) -> None:
    assert not build_policy(preset).permits_write(path)


def test_read_only_allows_no_writes() -> None:
    policy = build_policy("read-only")
    assert not policy.allows_writes
    assert not [t for t in policy.allow if t.startswith("Write(")]
    assert not policy.permits_write("README.md")


def test_docs_writes_markdown_and_docs_tree_only() -> None:
    policy = build_policy("docs")
    assert policy.allows_writes
    for path in ("README.md", "guide/intro.mdx", "docs/api/index.html", "./CHANGELOG.md"):
        assert policy.permits_write(path), path
    for path in ("src/app.py", "package.json", "docsx/a.md.txt"):
        assert not policy.permits_write(path), path


def test_edit_writes_anywhere_not_protected() -> None:
    policy = build_policy("edit")
    assert policy.allows_writes
    assert policy.permits_write("src/app.py")
    assert policy.permits_write("Makefile")
    assert not policy.permits_write(".github/dependabot.yml")


def test_unknown_preset_is_a_usage_error_listing_presets() -> None:
    with pytest.raises(UsageError, match="unknown permissions preset 'write-all'") as info:
        build_policy("write-all")
    assert "read-only, docs, edit" in info.value.hint


# -- user tokens ---------------------------------------------------------------------------------


def test_user_allow_and_deny_extend_the_preset_and_deny_wins() -> None:
    policy = build_policy("edit", allow=["Shell(pytest)"], deny=["Write(src/generated/**)"])
    assert "Shell(pytest)" in policy.allow
    assert "Write(src/generated/**)" in policy.deny
    assert policy.permits_write("src/app.py")
    assert not policy.permits_write("src/generated/client.py")


@pytest.mark.parametrize(
    "token",
    ["Shell(git)", "Shell(curl)", "Write(.github/**)", "Write(.github/workflows/ci.yml)",
     "Read(.env)", "Read(config/prod.pem)", "Write(.cursor/cli.json)"],
)  # fmt: skip
def test_user_allow_cannot_lift_the_floor(token: str) -> None:
    with pytest.raises(UsageError, match="hardened floor") as info:
        build_policy("edit", allow=[token])
    assert repr(token) in info.value.message


def test_allow_wildcard_overlapping_the_floor_is_fine_and_floor_still_holds() -> None:
    policy = build_policy("read-only", allow=["Write(**/*.yml)"])
    assert policy.permits_write("config/app.yml")
    assert not policy.permits_write(".github/workflows/ci.yml")


@pytest.mark.parametrize("token", ["Read(/etc/**)", "Write(~/notes.md)", "Read(../other/**)"])
def test_allow_globs_must_stay_in_the_workspace(token: str) -> None:
    with pytest.raises(UsageError, match="inside the workspace"):
        build_policy("read-only", allow=[token])
    # As a deny rule, the same glob only narrows the policy: accepted.
    assert token in build_policy("read-only", deny=[token]).deny


@pytest.mark.parametrize(
    "token",
    [
        "Bash(ls)",
        "shell(ls)",
        "Shell(git status)",
        "Shell(*)",
        "Shell()",
        "Shell(-rf)",
        "Read()",
        "Read( docs/**)",
        "Write(a(b))",
        "Write(a\x01)",
        "Shell(ls), Shell(cat)",
        "Read(docs/**)  # the docs",
        "Mcp(server, tool)",
        "Write",
    ],
)
def test_bad_tokens_are_rejected_naming_the_token(token: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_tokens(f"Shell(ls)\n{token}\n")
    assert repr(token) in info.value.message
    assert "Shell(command)" in info.value.hint


def test_parse_tokens_skips_blank_lines_and_comments_and_accepts_lists() -> None:
    text = "\n# tests\r\n  Shell(pytest)  \n\nRead(src/**)\n   # indented comment\n"
    assert parse_tokens(text) == ["Shell(pytest)", "Read(src/**)"]
    assert parse_tokens(["Shell(make)", "Write(a/**)\nWrite(b/{x,y}.md)"]) == [
        "Shell(make)",
        "Write(a/**)",
        "Write(b/{x,y}.md)",
    ]
    assert parse_tokens("") == []


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("**", "a/b/c", True),
        ("**/*.md", "README.md", True),
        ("**/*.md", "a/b/c.md", True),
        ("*.md", "a/c.md", False),
        ("docs/**", "docs/a/b.txt", True),
        ("docs/**", "docs", False),
        ("**/.env*", ".env", True),
        ("**/.env*", "x/.env.prod", True),
        ("src/?.py", "src/a.py", True),
        ("src/?.py", "src/ab.py", False),
        ("{a,b}/*.md", "b/x.md", True),
        ("{a,b}/*.md", "c/x.md", False),
        ("a{b", "a{b", True),
        ("a.b", "axb", False),
    ],
)
def test_glob_model(glob: str, path: str, expected: bool) -> None:
    assert bool(glob_to_regex(glob).fullmatch(path)) is expected


# -- rendering -------------------------------------------------------------------------------


def test_rendered_cli_json_is_complete_sorted_and_deterministic() -> None:
    one = build_policy("docs", allow=["Shell(make)", "Read(a/**)"], deny=["Shell(rm)", "Shell(rm)"])
    two = build_policy("docs", allow=["Read(a/**)", "Shell(make)"], deny=["Shell(rm)"])
    assert one.render() == two.render()
    data = one.render()
    assert data.endswith(b"}\n")
    parsed = json.loads(data)
    assert parsed == one.to_cli_json()
    assert parsed["version"] == 1
    assert parsed["editor"] == {"vimMode": False}
    assert parsed["permissions"]["allow"] == sorted(set(parsed["permissions"]["allow"]))
    assert parsed["permissions"]["deny"] == sorted(set(parsed["permissions"]["deny"]))
    assert parsed["permissions"]["deny"].count("Shell(rm)") == 1


# -- command ---------------------------------------------------------------------------------


def test_print_shows_the_exact_file_bytes_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["permissions", "--preset", "docs", "--allow", "Shell(make)", "--print",
         "--working-directory", str(tmp_path)]
    )  # fmt: skip
    assert code == 0
    expected = build_policy("docs", allow=["Shell(make)"]).render().decode()
    assert capsys.readouterr().out == expected
    assert list(tmp_path.iterdir()) == []


def test_command_writes_the_policy_and_sets_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.txt"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    code = main(
        ["permissions", "--preset", "edit", "--deny", "Shell(rm)\nShell(docker)",
         "--working-directory", str(workspace), "--output-file", str(out)]
    )  # fmt: skip
    assert code == 0
    written = (workspace / ".cursor" / "cli.json").read_bytes()
    assert written == build_policy("edit", deny=["Shell(rm)", "Shell(docker)"]).render()
    assert "replacing" not in capsys.readouterr().out
    outputs = parse_output_file(out.read_text())
    assert outputs == {
        "policy-file": str(workspace / ".cursor" / "cli.json"),
        "allows-writes": "true",
    }
    assert main(["permissions", "--working-directory", str(workspace)]) == 0
    assert "read-only policy" in (log := capsys.readouterr().out)
    assert "replacing the file there" in log
    assert (workspace / ".cursor" / "cli.json").read_bytes() == build_policy("read-only").render()


def test_command_reads_env_lists_and_flags_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CURSOR_AGENT_ACTION_PERMISSIONS", "docs")
    monkeypatch.setenv("CURSOR_AGENT_ACTION_ALLOW", "# from the action\nShell(make)\n\nShell(npm)")
    monkeypatch.setenv("CURSOR_AGENT_ACTION_DENY", "Write(docs/private/**)")
    assert main(["permissions", "--print"]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert {"Shell(make)", "Shell(npm)", "Write(docs/**)"} <= set(parsed["permissions"]["allow"])
    assert "Write(docs/private/**)" in parsed["permissions"]["deny"]

    assert main(["permissions", "--print", "--preset", "read-only", "--allow", "Shell(tox)"]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert "Shell(tox)" in parsed["permissions"]["allow"]
    assert "Shell(make)" not in parsed["permissions"]["allow"]
    assert "Write(docs/**)" not in parsed["permissions"]["allow"]


@pytest.mark.parametrize(
    "argv",
    [["--allow", "Shell(ls)\nShell(rm -rf)"], ["--deny", "Bash(x)"], ["--allow", "Shell(gh)"],
     ["--preset", "yolo"]],
)  # fmt: skip
def test_bad_input_exits_2_with_one_error_and_writes_nothing(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["permissions", "--working-directory", str(tmp_path), *argv])
    assert code == 2
    out = capsys.readouterr().out
    assert out.startswith("::error title=invalid input::")
    assert out.count("::error") == 1
    assert list(tmp_path.iterdir()) == []


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


@pytest.mark.parametrize("link", [".cursor/cli.json", ".cursor"])
def test_guard_refuses_a_symlinked_policy_path_and_changes_nothing(
    tmp_path: Path, link: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (target / "cli.json").write_text("victim")
    if link == ".cursor":
        (workspace / ".cursor").symlink_to(target)
    else:
        (workspace / ".cursor").mkdir()
        (workspace / ".cursor" / "cli.json").symlink_to(target / "cli.json")
    with (
        pytest.raises(SetupError, match="symbolic link"),
        PolicyGuard(workspace, build_policy("edit")),
    ):
        pytest.fail("must not enter")
    assert (target / "cli.json").read_text() == "victim"
    assert (workspace / link).is_symlink()


def test_guard_refuses_a_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(SetupError, match="does not exist"):
        PolicyGuard(tmp_path / "nope", build_policy("edit")).__enter__()
    assert not (tmp_path / "nope").exists()


def test_a_failed_restore_is_a_clear_error(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".cursor").mkdir(parents=True)
    (workspace / ".cursor" / "cli.json").write_bytes(b"ours\n")
    guard = PolicyGuard(workspace, build_policy("edit"))
    with pytest.raises(SetupError, match="could not restore") as info, guard:
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


@pytest.mark.parametrize("name", ["hooks.json", "mcp.json"])
def test_guard_refuses_a_symlinked_or_odd_set_aside_file(tmp_path: Path, name: str) -> None:
    cursor = tmp_path / "ws" / ".cursor"
    cursor.mkdir(parents=True)
    (tmp_path / "victim").write_text("victim")
    (cursor / name).symlink_to(tmp_path / "victim")
    with pytest.raises(SetupError, match="symbolic link"), PolicyGuard(
        tmp_path / "ws", build_policy("edit")
    ):
        pytest.fail("must not enter")
    assert (cursor / name).is_symlink()
    assert not (cursor / "cli.json").exists()
    (cursor / name).unlink()
    (cursor / name).mkdir()
    with pytest.raises(SetupError, match="not a regular file"), PolicyGuard(
        tmp_path / "ws", build_policy("edit")
    ):
        pytest.fail("must not enter")
    assert (cursor / name).is_dir()


@pytest.mark.parametrize("token", [
    "Shell(npm:run test*)", "Shell(git-lfs)", "Shell(pytest:-q *)", "WebFetch(docs.python.org)",
    "WebFetch(*.example.com)", "WebFetch(*)", "Mcp(github:get_issue)", "Mcp(github:*)",
    "Mcp(*:*)", "Mcp(linear:list_*)",
])  # fmt: skip
def test_the_current_token_grammar_is_accepted(token: str) -> None:
    assert parse_tokens(token) == [token]


@pytest.mark.parametrize(("token", "says"), [
    ("Shell(git status)", "Shell() takes one command name"),
    ("Shell(npm:run (x))", "Shell() takes one command name"),
    ("WebFetch(https://example.com/path)", "WebFetch() takes a domain"),
    ("WebFetch(ex ample.com)", "WebFetch() takes a domain"),
    ("Mcp(github)", "Mcp() takes server:tool"),
    ("Mcp(git hub:x)", "Mcp() takes server:tool"),
    ("Fetch(example.com)", "invalid permission token"),
])  # fmt: skip
def test_a_malformed_current_token_is_named_with_the_grammar(token: str, says: str) -> None:
    with pytest.raises(UsageError, match=re.escape(says)) as error:
        parse_tokens(token)
    assert "WebFetch(domain)" in error.value.hint
    assert "Mcp(server:tool)" in error.value.hint


def test_web_fetches_and_mcp_tools_are_denied_unless_allowed_explicitly() -> None:
    closed = build_policy("edit")
    assert "WebFetch(*)" in closed.deny
    assert "Mcp(*:*)" in closed.deny
    opened = build_policy("edit", allow=["WebFetch(docs.python.org)", "Mcp(github:get_issue)"])
    assert "WebFetch(*)" not in opened.deny
    assert "Mcp(*:*)" not in opened.deny
    assert {"WebFetch(docs.python.org)", "Mcp(github:get_issue)"} <= set(opened.allow)


def test_shell_with_arguments_cannot_lift_a_floor_command() -> None:
    with pytest.raises(UsageError, match="denied by the hardened floor"):
        build_policy("edit", allow=["Shell(git:status)"])


@pytest.mark.parametrize(("allow", "server", "named"), [
    ("Mcp(github:get_issue)", "github", True),
    ("Mcp(git*:get_issue)", "github", True),
    ("Mcp(*:*)", "docs", True),
    ("Mcp(github:get_issue)", "gitlab", False),
    ("Mcp(git*:x)", "docs", False),
])  # fmt: skip
def test_a_policy_says_which_mcp_servers_its_allow_tokens_name(
    allow: str, server: str, named: bool
) -> None:
    """What mcp-config's warning relies on (wildcards in the server part included)."""
    assert build_policy("read-only", allow=[allow]).names_mcp_server(server) is named
