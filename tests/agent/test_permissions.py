"""Permission presets, the hardened floor, token grammar and the command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cursor_agent_action.agent.guards.permissions import FLOOR, PRESETS, build_policy, parse_tokens
from cursor_agent_action.cli import main
from cursor_agent_action.errors import UsageError
from cursor_agent_action.globs import glob_to_regex
from cursor_agent_action.output_file import parse_output_file

REQUIRED_FLOOR = (
    "Write(**/.github/**)",
    "Write(**/.cursor/**)",
    "Write(**/.git/**)",
    "Write(**/.claude/**)",
    "Write(**/.git*)",
    "Write(**/AGENTS.md)",
    "Write(**/CLAUDE.md)",
    "Write(**/.mcp.json)",
    "Write(**/.cursorrules)",
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


def test_docs_writes_documentation_and_images_only() -> None:
    policy = build_policy("docs")
    assert policy.allows_writes
    for path in ("README.md", "docs/api/index.rst", "./CHANGELOG.md",
                 "docs/book.adoc", "docs/notes.txt", "docs/img/flow.svg", "logo.png"):
        assert policy.permits_write(path), path
    # MDX is code: Docusaurus compiles it to JavaScript (issue 45).
    for path in ("src/app.py", "package.json", "docs/api/index.html", "docs/data.json",
                 "guide/intro.mdx"):
        assert not policy.permits_write(path), path


@pytest.mark.parametrize("path", [
    "docs/conf.py", "docs/conftest.py", "docs/notes.md/conftest.py", "docs/Makefile",
    "docs/_ext/links.md", "mkdocs.yml", "docs/package.json", ".readthedocs.yaml",
    "docs/requirements.txt", "CMakeLists.txt", "docs/site.config.mjs", "docs/intro.mdx",
    "build.rs", "docs/overrides/main.html", "docs/nb/intro.ipynb", ".pre-commit-config.yaml",
])
def test_docs_never_writes_what_a_docs_toolchain_executes_even_when_widened(path: str) -> None:
    """The attack: beside a real docs change the agent writes docs/conf.py (Sphinx runs it)
    and docs/conftest.py (pytest loads it). Widening the preset keeps them out."""
    for policy in (build_policy("docs"), build_policy("docs", allow=["Write(docs/**)"])):
        assert not policy.permits_write(path), (path, policy.allow)
    assert build_policy("docs", allow=["Write(docs/**)"]).permits_write("docs/data.json")


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
     "Read(.env)", "Read(config/prod.pem)", "Write(.cursor/cli.json)",
     # a floor command by its path: the CLI would match the first word as written
     "Shell(/usr/bin/curl)", "Shell(/usr/bin/git)", "Shell(./wget)", "Shell(bin/gh:pr*)"],
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
    assert {"Shell(make)", "Shell(npm)", "Write(**/*.{png,jpg,jpeg,gif,svg,webp,avif,ico})"} \
        <= set(parsed["permissions"]["allow"])
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


# -- protected names at any depth, in any case and Unicode form --------------------------------

PROTECTED_AT_DEPTH = [
    ".cursor/hooks.json", "docs/.cursor/hooks.json", "src/.claude/settings.json",
    "docs/AGENTS.md", "pkg/deep/CLAUDE.md", "packages/app/.mcp.json", "lib/.cursorrules",
    ".Cursor/hooks.json", "docs/.CURSOR/sandbox.json", ".GITHUB/workflows/x.yml",
    "docs/agents.md", "docs/Agents.MD", "src/\uff0eclaude/settings.json",  # fullwidth dot
    "\uff0egithub/workflows/ci.yml", "docs/\uff21GENTS.md",  # fullwidth A
    ".g\u200cit/config", ".GİT/hooks/pre-commit", ".git./config", "git~1/config",
    "sub/.gitattributes", "docs/.GitModules", ".github./workflows/x.yml", "x/.CLAUDE/s.json",
]  # fmt: skip


@pytest.mark.parametrize("path", PROTECTED_AT_DEPTH)
@pytest.mark.parametrize("preset", ["docs", "edit"])
def test_protected_names_at_any_depth_and_in_any_form_are_never_writable(
    path: str, preset: str
) -> None:
    """``docs/**`` and ``**/*.md`` (docs) or ``**`` (edit) allow these paths by glob; the
    check after the run refuses them all the same."""
    assert not build_policy(preset, allow=["Write(**)"]).permits_write(path)


@pytest.mark.parametrize("path", ["docs/guide.md", "src/cursor.py", "docs/agents-guide.md",
                                  "github/README.md", "src/claude_client.py", "x/.cursorignore"])
def test_names_that_only_look_alike_stay_writable(path: str) -> None:
    assert build_policy("edit").permits_write(path)


def test_the_floor_denies_the_protected_names_at_any_depth_as_the_cli_matches_them() -> None:
    """The deny rules the CLI gets match nested paths too (its globs are case-sensitive: the
    other forms are caught after the run and by publish)."""
    deny = build_policy("edit").deny
    for path in ("docs/.cursor/hooks.json", "a/b/.claude/settings.json", "docs/AGENTS.md",
                 "x/CLAUDE.md", "p/.mcp.json", "p/.cursorrules", "p/.gitattributes",
                 ".github/workflows/ci.yml", "sub/.github/workflows/ci.yml"):
        assert any(glob_to_regex(token[6:-1]).fullmatch(path)
                   for token in deny if token.startswith("Write(")), path


@pytest.mark.parametrize("token", ["Write(docs/.cursor/**)", "Write(**/AGENTS.md)",
                                   "Write(.GitHub/**)", "Write(src/.claude/settings.json)"])
def test_an_allow_naming_a_protected_name_anywhere_is_refused(token: str) -> None:
    with pytest.raises(UsageError, match="hardened floor"):
        build_policy("edit", allow=[token])
