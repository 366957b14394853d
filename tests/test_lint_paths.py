"""``cursor-agent-action lint`` checks publish's ``allowed-paths`` and ``protected-paths``
before any run: a bare directory in the allow-list, a pattern that names nothing the agent's
preset may write, one that names only protected paths, one that can never match. Each is one
line naming the input, the pattern (on its own line of the workflow) and the fix; lint exits
2. Before, the newcomer's `allowed-paths: docs` passed lint and was refused only after the
agent had run."""

from __future__ import annotations

from pathlib import Path

import pytest

from cursor_agent_action.cli import main
from cursor_agent_action.lint import check

ROOT = Path(__file__).resolve().parents[1]


def _workflow(preset: str, allowed: list[str], protected: list[str] | None = None,
              env: str = "") -> str:
    block = "".join(f"            {p}\n" for p in allowed)
    guard = ("          protected-paths: |\n" + "".join(f"            {p}\n" for p in protected)
             if protected is not None else "")
    return f"""name: Agent
on: workflow_dispatch
{env}jobs:
  agent:
    runs-on: ubuntu-latest
    steps:
      - id: agent
        uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA
        with:
          permissions: {preset}
          prompt: Update the docs.
  publish:
    runs-on: ubuntu-latest
    steps:
      - uses: cursor-agent-action/cursor-agent-action/publish@COMMIT_SHA
        with:
          allowed-paths: |
{block}{guard}"""


def _line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.strip() == needle)


def test_a_bare_directory_is_named_with_the_fix_on_its_line() -> None:
    text = _workflow("docs", ["docs", "**/*.md"])
    (finding,) = check(text)
    assert finding.line == _line_of(text, "docs")
    assert finding.message == (
        "publish `allowed-paths`: `docs` names a file called `docs`, not what is below that "
        "directory (an allow-list names files): write `docs/` or `docs/**`.")


def test_a_directory_of_the_repository_is_told_apart_from_a_file(tmp_path: Path) -> None:
    """With `edit` any name is writable: the repository says that `src` is a directory
    (and that `Makefile`, a file without a dot, is not one)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "Makefile").write_text("all:\n")
    text = _workflow("edit", ["src", "Makefile"])
    (finding,) = check(text, tmp_path)
    assert finding.line == _line_of(text, "src")
    assert "`src` names a file called `src`, not what is below that directory" in (
        finding.message)
    assert check(text) == []  # without the repository, nothing says src is a directory


def test_a_pattern_outside_what_the_preset_writes_is_named() -> None:
    text = _workflow("docs", ["src/**/*.py", "**/*.md"])
    (finding,) = check(text)
    assert finding.line == _line_of(text, "src/**/*.py")
    assert "`src/**/*.py` names nothing the agent may write with `permissions: docs`" in (
        finding.message)
    assert "every change it allows would be refused" in finding.message


def test_a_read_only_agent_has_nothing_to_publish() -> None:
    (finding,) = check(_workflow("read-only", ["**/*.md"]))
    assert "runs with `permissions: read-only` (line 8), which writes nothing" in (
        finding.message)


def test_an_allowed_pattern_under_the_default_protected_paths_is_named() -> None:
    (finding,) = check(_workflow("edit", [".github/workflows/*.yml", "src/**"]))
    assert ("`.github/workflows/*.yml` names only protected paths (`**/.github/**` in "
            "protected-paths), which publish refuses") in finding.message


@pytest.mark.parametrize(("pattern", "why"), [
    ("../docs/*.md", "paths have no `.` or `..` segments"),
    ("./docs/*.md", "paths have no `.` or `..` segments"),
    ("docs//*.md", "an empty segment (`//`) never matches"),
    ("docs\\*.md", "`\\` is a literal character here"),
    ("~/notes/*.md", "`~` is not expanded"),
])
def test_a_pattern_that_can_never_match_is_named(pattern: str, why: str) -> None:
    (finding,) = check(_workflow("edit", [pattern, "src/**"]))
    assert f"publish `allowed-paths`: `{pattern}` can never match ({why}" in finding.message
    (guard,) = check(_workflow("edit", ["src/**"], [pattern]))
    assert f"publish `protected-paths`: `{pattern}` can never match ({why}" in guard.message
    assert "as written it protects nothing" in guard.message


def test_an_env_value_is_read_and_other_expressions_are_left_alone() -> None:
    env = "env:\n  ALLOWED_PATHS: |\n    docs\n"
    text = _workflow("docs", ["**/*.md"]).replace(
        "allowed-paths: |\n            **/*.md\n", "allowed-paths: ${{ env.ALLOWED_PATHS }}\n")
    (finding,) = check(text.replace("jobs:\n", env + "jobs:\n", 1))
    assert "`docs` names a file called `docs`" in finding.message
    assert check(text.replace("${{ env.ALLOWED_PATHS }}", "${{ inputs.paths }}")) == []
    assert check(_workflow("${{ inputs.preset }}", ["src/**/*.py"])) == []


def test_the_examples_and_the_readme_workflow_are_clean() -> None:
    for path in sorted((ROOT / "examples").glob("*.yml")):
        assert check(path.read_text(), ROOT) == [], path


def test_the_command_exits_2_naming_each_problem_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (tmp_path / "guides").mkdir()  # the repository's own directory, found from the file
    bad = workflows / "agent.yml"
    bad.write_text(_workflow("edit", ["guides", "src/**"]))
    assert main(["lint", str(bad)]) == 2
    out = capsys.readouterr().out
    assert "`guides` names a file called `guides`" in out
    assert "lint: 1 problem(s) in 1 workflow file(s)." in out
