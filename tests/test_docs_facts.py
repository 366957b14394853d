"""Facts the code owns, stated in the docs, checked against the code (both directions where a
list is involved), so the docs cannot drift:

- docs/permissions.md: the presets, the floor and the token grammar are generated from
  ``agent/guards/permissions.py`` (regenerate with ``python -m tests.test_docs_facts --write``);
- the sub-actions (folders with an ``action.yml``) wherever the docs list or count them;
- the helper's commands and exit codes (docs/helper-cli.md against ``cli.py`` and
  ``errors.py``);
- docs/troubleshooting.md: every error text it quotes is one the code can print, and each
  comes with its fix; its last section lists every error and warning the code can print
  (generated: ``tests/support/messages.py``).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from cursor_agent_action import cli, errors
from cursor_agent_action.agent.guards import permissions
from cursor_agent_action.agent.guards.permissions import PRESETS, parse_tokens
from cursor_agent_action.docpages import inert
from cursor_agent_action.docpages import kinds as docfiles
from cursor_agent_action.stream.render.summary import ICONS as CONCLUSIONS
from tests.support import messages

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PERMISSIONS_MD = DOCS / "permissions.md"
WRITE = "python -m tests.test_docs_facts --write"

# -- docs/permissions.md, generated -----------------------------------------------------------

PRESET_USE = {
    "read-only": "CI failure triage that reports (summary, comment)",
    "docs": "docs updates on pull requests",
    "edit": "CI failure triage that proposes a fix",
}
# Why each floor command is there (the list itself is the code's).
SHELL_WHY = {
    "act as git or GitHub (our own steps do that work)": ("gh", "git"),
    "move data off the machine": ("curl", "ftp", "nc", "ncat", "netcat", "rsync", "scp", "sftp",
                                  "socat", "ssh", "telnet", "wget"),
    "raise privileges": ("doas", "su", "sudo"),
    "reveal the environment": ("env", "printenv"),
    "run another command behind their own name": ("env", "eval", "exec", "nohup", "setsid",
                                                  "xargs"),
}
# (token form, what it matches, examples: each must be a valid token).
TOKEN_FORMS = (
    ("Shell(command)", "a shell command named `command` (letters, digits, `. _ + - /`; no "
     "spaces or wildcards), whatever its arguments", "`Shell(pytest)`, `Shell(make)`"),
    ("Shell(command:args)", "that command with arguments matching `args` (`*` is a wildcard)",
     "`Shell(npm:run test*)`"),
    ("Read(glob)", "files the agent reads with its read tool", "`Read(src/**)`"),
    ("Write(glob)", "files the agent writes or edits with its tools", "`Write(docs/**/*.md)`"),
    ("WebFetch(domain)", "pages the agent fetches from `domain` (a host name, `*`, or "
     "`*.domain`)", "`WebFetch(docs.python.org)`, `WebFetch(*.example.com)`"),
    ("Mcp(server:tool)", "a tool of an MCP server from `mcp-config` (`*` for any name, or a "
     "name ending in `*`)", "`Mcp(github:get_issue)`, `Mcp(docs:*)`"),
)  # fmt: skip


def _code(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def render_presets() -> str:
    allow = permissions._PRESET_ALLOW
    base = permissions._READ_ONLY_ALLOW
    rows = ["| preset | for | allows |", "| --- | --- | --- |"]
    for preset in PRESETS:
        extra = [token for token in allow[preset] if token not in base]
        if preset == "read-only":
            shell = [t.removeprefix("Shell(")[:-1] for t in base if t.startswith("Shell(")]
            what = (f"`Read(**)` and read-only shell: {_code(shell)}; no writes. Not `find` or "
                    "`rg`: they run any program (`find -exec`, `rg --pre`); the CLI's own glob "
                    "and grep tools search the files under `Read(**)`, and `allow: Shell(find)` "
                    "opts in")
        else:
            what = f"`read-only` plus {_code(extra)}"
            if "Write(**)" in extra:
                what += ": writes anywhere the floor does not protect"
            if preset == "docs":
                what += ("; never a file a build, a test run or a docs toolchain executes "
                         "(the list below), even where a wider allow names it")
        name = f"`{preset}`" + (" (default)" if preset == permissions.DEFAULT_PRESET else "")
        rows.append(f"| {name} | {PRESET_USE[preset]} | {what} |")
    return "\n".join(rows) + "\n"


def render_floor() -> str:
    writes = list(permissions._FLOOR_WRITE)
    secrets = [glob.removeprefix("**/") for glob in permissions._SECRET_GLOBS]
    shell = "; ".join(f"{why}: {_code(words)}" for why, words in SHELL_WHY.items())
    return (
        "**The floor** (deny rules in every preset; deny wins over allow, so no `allow` can lift "
        "them):\n\n"
        f"- writing {_code(writes)}: the agent's own policy, rules and hooks (Cursor's and "
        "Claude's), other agents' rules (Gemini, Cline, Windsurf, Junie, Kiro, Roo, Amazon Q), "
        "git's hooks (they would run in our later `git commit`) and CI;\n"
        f"- reading or writing secrets, at any depth: {_code(secrets)} (in `.git/config` "
        "`actions/checkout` keeps the job token unless `persist-credentials: false`);\n"
        f"- shell commands that {shell};\n"
        "- every web fetch (`WebFetch(*)`) and every MCP tool (`Mcp(*:*)`), unless an `allow` "
        "token names some: then only what `allow` names.\n"
    )


def render_docs_files() -> str:
    rows = ["| the `docs` preset writes | what |", "| --- | --- |"]
    rows += [f"| {_code([f'*.{e}' for e in exts.split(',')])} | {what} |"
             for exts, what in docfiles.DOC_TYPES]
    rows.append(f"| {_code([f'*.{e}' for e in docfiles.IMAGE_TYPES.split(',')])} | images |")
    rows += ["", "| never (in `docs`; publish warns when a change holds one) | why |",
             "| --- | --- |"]
    rows += [f"| `{pattern}` | {why} |" for pattern, why in docfiles.EXECUTED]
    return "\n".join(rows) + "\n"


def render_inert() -> str:
    tables = (("reST and MyST directives (`.. name::`, ```` ```{name} ````)", inert.DIRECTIVES),
              ("reST and MyST roles (`:name:`...``, `{name}`...``)", inert.ROLES),
              ("AsciiDoc macros (`name::target[]`, `name:target[]`)", inert.ASCIIDOC_MACROS),
              ("AsciiDoc attribute entries (`:name: value`)", inert.ASCIIDOC_ATTRIBUTES))
    rows: list[str] = []
    for title, groups in tables:
        rows += ["", f"| {title} | why they pass |", "| --- | --- |"]
        for group in groups:
            options = f" (options: {_code([f':{o}:' for o in group.options])})" if (
                group.options) else ""
            rows.append(f"| {_code(list(group.names))} | {group.why}{options} |")
    return "\n".join(rows[1:]) + "\n"


def render_tokens() -> str:
    rows = ["| token | matches | e.g. |", "| --- | --- | --- |"]
    rows += [f"| `{form}` | {what} | {examples} |" for form, what, examples in TOKEN_FORMS]
    return "\n".join(rows) + "\n"


GENERATED: dict[str, Callable[[], str]] = {
    "presets": render_presets, "floor": render_floor, "tokens": render_tokens,
    "docs-files": render_docs_files, "inert": render_inert,
}


def _section_re(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated:{name} [^>]*-->\n)(?P<body>.*?)(<!-- /generated:{name} -->)", re.S)


@pytest.mark.parametrize("name", GENERATED)
def test_permissions_md_states_what_permissions_py_does(name: str) -> None:
    match = _section_re(name).search(PERMISSIONS_MD.read_text())
    assert match, f"docs/permissions.md has no '{name}' markers"
    assert match["body"] == GENERATED[name](), f"docs/permissions.md is out of date: run `{WRITE}`"


def test_the_token_table_has_every_kind_the_parser_accepts_and_its_examples_parse() -> None:
    pattern = permissions._TOKEN.pattern
    kinds = re.search(r"\^\(([\w|]+)\)", pattern)
    assert kinds
    assert sorted({form.partition("(")[0] for form, _, _ in TOKEN_FORMS}) == sorted(
        kinds[1].split("|"))
    examples = [e for _, _, text in TOKEN_FORMS for e in re.findall(r"`([^`]+)`", text)]
    assert parse_tokens(examples) == examples


def test_the_floor_commands_are_each_explained_and_all_there() -> None:
    explained = {word for words in SHELL_WHY.values() for word in words}
    assert explained == set(permissions._FLOOR_SHELL)


def test_the_floor_is_what_the_doc_lists_plus_web_and_mcp_unless_allowed() -> None:
    """The parts render_floor shows are the whole FLOOR, and the closed web and MCP doors
    open only to what allow names."""
    listed = ({f"Write({g})" for g in permissions._FLOOR_WRITE}
              | {f"{kind}({g})" for g in permissions._SECRET_GLOBS for kind in ("Read", "Write")}
              | {f"Shell({w})" for w in permissions._FLOOR_SHELL})
    assert listed == set(permissions.FLOOR)
    closed = set(permissions.build_policy("edit").deny) - listed
    assert closed == {"WebFetch(*)", "Mcp(*:*)"}
    opened = permissions.build_policy("edit", allow=["WebFetch(docs.python.org)"])
    assert "WebFetch(*)" not in opened.deny
    assert "Mcp(*:*)" in opened.deny


def write() -> None:
    text = PERMISSIONS_MD.read_text()
    for name, render in GENERATED.items():
        match = _section_re(name).search(text)
        assert match, f"docs/permissions.md has no '{name}' markers"
        text = text[: match.start("body")] + render() + text[match.end("body") :]
    PERMISSIONS_MD.write_text(text)
    page = DOCS / "troubleshooting.md"
    text = page.read_text()
    match = _section_re("messages").search(text)
    assert match, "docs/troubleshooting.md has no 'messages' markers"
    page.write_text(text[: match.start("body")] + messages.render() + text[match.end("body") :])


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {WRITE}")
    write()


# -- the sub-actions -----------------------------------------------------------------------------

SUB_ACTIONS = sorted(p.parent.name for p in ROOT.glob("*/action.yml"))
_NUMBERS = {2: "Two", 3: "Three", 4: "Four", 5: "Five", 6: "Six", 7: "Seven", 8: "Eight"}


def test_there_are_sub_actions_to_check() -> None:
    assert {"publish", "comment", "ci-context", "gate"} <= set(SUB_ACTIONS)


def test_the_readme_pins_every_sub_action_the_same_way() -> None:
    pinning = re.search(r"## Pinning a version\n(.*?)\n## ", (ROOT / "README.md").read_text(), re.S)
    assert pinning
    named = re.findall(r"`/([\w-]+)`", pinning[1])
    assert sorted(named) == SUB_ACTIONS


def test_follow_ups_counts_and_names_every_sub_action() -> None:
    text = (DOCS / "follow-ups.md").read_text()
    intro = text.split("\n\n")[1]
    assert intro.startswith(f"The agent never touches git or GitHub. "
                            f"{_NUMBERS[len(SUB_ACTIONS)]} deterministic helper commands do")
    for name in SUB_ACTIONS:
        assert f"cursor-agent-action/{name}@" in intro or f".../{name}@" in intro, name
        assert re.search(rf"^## .*`{name}`|^## .*\b{name}\b", text, re.M | re.I), name


def test_development_md_and_the_architecture_name_every_sub_action() -> None:
    development = (DOCS / "development.md").read_text()
    architecture = (ROOT / "README.md").read_text().split("## Architecture")[1]
    for name in SUB_ACTIONS:
        assert f"`{name}/`" in development, name
        assert f"`{name}/`" in architecture, name


def test_each_sub_action_runs_a_helper_command_the_helper_lists() -> None:
    for name in SUB_ACTIONS:
        steps = yaml.safe_load((ROOT / name / "action.yml").read_text())["runs"]["steps"]
        used = {m for s in steps for m in re.findall(r"-m cursor_agent_action ([\w-]+)",
                                                   s.get("run", ""))}
        assert used, name
        assert used <= set(cli.COMMANDS), name


# -- the helper's commands and exit codes ---------------------------------------------------------


def _exit_codes(markdown: str) -> dict[str, str]:
    """code -> meaning, from the table under "## Exit codes"."""
    section = markdown.split("## Exit codes", 1)[1].split("\n## ", maxsplit=1)[0]
    return dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))


def test_helper_cli_lists_exactly_the_commands() -> None:
    text = (DOCS / "helper-cli.md").read_text()
    commands = re.findall(r"^\| `([\w-]+)[^`]*` \|", text, re.M)
    assert commands == list(cli.COMMANDS)


def test_helper_cli_lists_exactly_the_exit_codes_with_every_conclusion() -> None:
    codes = _exit_codes((DOCS / "helper-cli.md").read_text())
    constants = {str(value) for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert set(codes) == constants | {"130"}
    # Exit code 1: every conclusion but success.
    for conclusion in CONCLUSIONS:
        if conclusion != "success":
            assert f"`{conclusion}`" in codes[str(errors.EXIT_RUN_FAILED)], conclusion
    epilog = cli.build_parser(None).epilog or ""
    in_epilog = re.findall(r"(\d+) [a-z]", epilog)
    assert sorted(in_epilog, key=int) == sorted(constants | {"130"}, key=int)
    assert "docs/helper-cli.md" in (errors.__doc__ or "")


def test_every_docs_page_a_message_names_exists() -> None:
    """Hints send readers to docs/NAME.md (and never to a README section that is not there)."""
    texts = _templates()
    # (The demo's task names its sample workspace's docs/usage.md: not one of ours.)
    named = {m for text in texts for m in re.findall(r"(?:[Ss]ee|listed in|documented in) "
                                                      r"docs/([\w-]+\.md)", text)}
    assert named
    assert [name for name in named if not (DOCS / name).exists()] == []
    readme = (ROOT / "README.md").read_text()
    for text in texts:
        for section in re.findall(r"the README, '([^']+)'", text):
            assert re.search(rf"^#+ {re.escape(section)}$", readme, re.M), section


# -- docs/troubleshooting.md ------------------------------------------------------------------

TROUBLESHOOTING = DOCS / "troubleshooting.md"
HOLE = "\x00"  # where a message has a formatted value
_SOURCES = [*sorted((ROOT / "src").rglob("*.py")), ROOT / "scripts" / "try_example.py",
            ROOT / "tests" / "support" / "your_world.py",
            ROOT / "tests" / "support" / "example_world.py"]  # what try_example prints
_SHELL_SOURCES = [ROOT / "action.yml", *sorted(ROOT.glob("*/action.yml")),
                  *sorted(ROOT.glob("scripts/*.sh"))]
# A quoted error text leaves out what varies: an ellipsis, or a placeholder in capitals.
_ELISION = re.compile(r"\.\.\.|…|'[A-Z]+'|\b(?!JSON\b|YAML\b|API\b|CLI\b)[A-Z]+\b")


def _template(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(part.value) if isinstance(part, ast.Constant) else HOLE
                       for part in node.values)
    return None


def _templates() -> list[str]:
    """Every string the code can print, a formatted value as HOLE; the shell's variables too."""
    found = []
    for path in _SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                left, right = _template(node.left), _template(node.right)
                if left is not None and right is not None:
                    found.append(left + right)
            text = _template(node)
            if text:
                found.append(text)
    for path in _SHELL_SOURCES:
        text = re.sub(r"\$\{?\w+\}?|\$\(.*?\)", HOLE, path.read_text())
        found += [line.strip() for line in text.splitlines() if len(line.strip()) > 3]
    return sorted(set(found))


def _entries() -> list[tuple[str, str]]:
    """(quoted error text, its fix) for every error the page lists: table rows and bullets."""
    entries = []
    page = _section_re("messages").sub("", TROUBLESHOOTING.read_text())  # the generated list
    for line in page.splitlines():
        row = re.match(r"^\| (.+?) \| (.+?) \|$", line)
        if row and row[1] not in ("Error", "---"):
            entries += [(quoted, row[2]) for quoted in re.findall(r"`([^`]+)`", row[1])]
    for bullet in re.split(r"\n(?=- )", page):
        if not bullet.startswith("- **"):
            continue
        flat = " ".join(bullet.split())
        # An error's text in code, or the name of a known failure in bold.
        quoted = [*re.findall(r"\*\*`([^`]+)`\*\*", flat),
                  *re.findall(r"(?:^- |\) and )\*\*([^`*]+)\*\*", flat)]
        fix = re.sub(r"\*\*`?[^`*]+`?\*\*", "", flat)
        entries += [(text, fix) for text in quoted]
    return entries


def _fits(piece: str, template: str) -> bool:
    """Whether ``piece`` is part of some message ``template`` can print, each HOLE standing for
    any text (the value the code formats in, e.g. the input's name), with at least 12 of the
    piece's characters (or all of a shorter one) the template's own."""
    if piece in template:
        return True
    parts = template.split(HOLE)
    if len(parts) == 1:
        return False
    need = min(12, len(piece))
    for i, first in enumerate(parts[:-1]):
        # The piece starts with the end of part i (possibly none of it), then a hole.
        for cut in range(len(first) + 1):
            head = first[cut:]
            if not piece.startswith(head):
                continue
            rest = piece[len(head):]
            for j in range(i + 1, len(parts)):
                middle = "".join(".*?" + re.escape(p) for p in parts[i + 1 : j]) + ".*?"
                for end in range(len(rest) + 1):
                    tail = rest[end:]
                    if not parts[j].startswith(tail):
                        continue
                    found = re.fullmatch(middle, rest[:end], re.S)
                    own = len(head) + len(tail) + sum(len(p) for p in parts[i + 1 : j])
                    if found and own >= need:
                        return True
    return False


def test_fits_lets_a_formatted_value_stand_for_anything_but_not_everything() -> None:
    template = f"{HOLE} must be a number above 0, not {HOLE}."
    assert _fits("timeout-minutes must be a number above 0, not", template)
    assert not _fits("timeout-minutes must be a whole number", template)
    assert not _fits("anything at all, not", template)


_TEMPLATES = _templates()


def _shares_a_word(piece: str, template: str) -> bool:
    words = re.findall(r"[\w-]{4,}", piece)
    return not words or any(word in template for word in words)


def test_troubleshooting_lists_errors() -> None:
    assert len(_entries()) > 40


@pytest.mark.parametrize(("quoted", "fix"), _entries(), ids=lambda v: v[:50])
def test_each_error_troubleshooting_quotes_is_one_the_code_prints(quoted: str, fix: str) -> None:
    """Each piece of the quoted text (cut where the doc leaves something out) is in a message
    of the code, so a reworded message fails here until the page follows."""
    templates = _TEMPLATES
    pieces = [p.strip(" .,:;()") for p in _ELISION.split(quoted)]
    missing = [p for p in pieces if len(p) > 3 and not any(
        _fits(p, t) for t in templates if _shares_a_word(p, t))]
    assert missing == [], f"not in any message of the code: {missing}"
    assert len(re.findall(r"[a-z]+", fix)) >= 4, f"no fix given for {quoted!r}"


def test_troubleshooting_lists_every_error_and_warning_the_code_prints() -> None:
    """The generated list is the code's: a new message fails here until the page is
    regenerated."""
    match = _section_re("messages").search(TROUBLESHOOTING.read_text())
    assert match, "docs/troubleshooting.md has no 'messages' markers"
    assert match["body"] == messages.render(), f"docs/troubleshooting.md is out of date: `{WRITE}`"


def test_the_message_finder_finds_each_kind_of_message() -> None:
    """Not vacuous: one of each shape the finder reads is in its list."""
    found = {(m.kind, m.text) for m in messages.messages()}
    assert ("error", "cannot create a state directory under …: ….") in found  # raise SetupError
    assert ("warning", "CURSOR_API_KEY …: the CLI will fail to authenticate unless it is logged "
            "in on this machine: set it to your key.") in found  # runner.warning
    assert any(kind == "warning" and text.startswith("Running the agent under Landlock")
               for kind, text in found)  # a *_warning function's return
    assert any(kind == "error" and text.startswith("The agent tried to change the runner's file")
               for kind, text in found)  # fail_run
    assert not any(text == "… failed: …" for _, text in found)  # box/root.py's own SetupError
    assert len(found) > 100
    shell = {(m.module, m.text) for m in messages.shell_messages()}
    assert ("scripts/setup-helper.sh", "The helper needs Python >= 3.10, but '…' is ….") in shell
    assert ("action.yml", "job-summary must be 'true' or 'false'.") in shell
    assert ("scripts/setup-helper.sh", "The cached helper venv … …; building it again.") in shell
