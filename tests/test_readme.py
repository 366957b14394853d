"""The front door and the reference: docs/reference.md's inputs and outputs tables are
action.yml's, exactly (both directions); the README stays short, its workflow is the safe
two-job pattern with real inputs, and every link in README.md and docs/ leads somewhere.

Regenerate the tables after changing action.yml with ``python -m tests.test_readme --write``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference.md"
ACTION = ROOT / "action.yml"
README_MAX_LINES = 300
_DEFAULT = re.compile(r"^(?P<text>.*?)\s*Default: (?P<default>.+?)\.?$", re.S)


def _action() -> dict[str, Any]:
    action: dict[str, Any] = yaml.safe_load(ACTION.read_text())
    return action


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def split_default(description: str) -> tuple[str, str]:
    """'Does X. Default: `y`.' -> ('Does X.', '`y`')."""
    match = _DEFAULT.match(description.strip())
    if not match:
        raise ValueError(f"description does not state its default: {description!r}")
    return match["text"], match["default"]


def render_inputs(action: dict[str, Any]) -> str:
    rows = ["| Input | Description | Default |", "| --- | --- | --- |"]
    for name, spec in action["inputs"].items():
        text, default = split_default(spec["description"])
        rows.append(f"| `{name}` | {_cell(text)} | {_cell(default)} |")
    return "## Inputs\n\n" + "\n".join(rows) + "\n"


def render_outputs(action: dict[str, Any]) -> str:
    rows = ["| Output | Description |", "| --- | --- |"]
    rows += [
        f"| `{name}` | {_cell(spec['description'])} |" for name, spec in action["outputs"].items()
    ]
    intro = (
        "## Outputs\n\nOnce the agent has started, every output is set, also when the run fails "
        "or times out. Outputs that hold the agent's text are untrusted: read them through "
        "`env:` (see [Security](security.md)).\n\n"
    )
    return intro + "\n".join(rows) + "\n"


SECTIONS = {"inputs": render_inputs, "outputs": render_outputs}


def _section_re(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- section:{name} \(owner: action[^>]*-->\n)(?P<body>.*?)(<!-- /section:{name} -->)",
        re.S,
    )


def section(text: str, name: str) -> str:
    match = _section_re(name).search(text)
    assert match, f"no '{name}' section markers"
    return match["body"]


def _table_names(body: str) -> list[str]:
    return re.findall(r"^\| `([^`]+)` \|", body, re.M)


@pytest.mark.parametrize("kind", ["inputs", "outputs"])
def test_reference_table_lists_exactly_the_actions_names(kind: str) -> None:
    in_readme = _table_names(section(REFERENCE.read_text(), kind))
    in_action = list(_action()[kind])
    assert [n for n in in_action if n not in in_readme] == [], "missing from docs/reference.md"
    assert [n for n in in_readme if n not in in_action] == [], "not in action.yml"
    assert in_readme == in_action, "same order as action.yml"


@pytest.mark.parametrize("kind", ["inputs", "outputs"])
def test_reference_table_matches_action_yml(kind: str) -> None:
    expected = SECTIONS[kind](_action())
    assert section(REFERENCE.read_text(), kind) == expected, (
        "docs/reference.md is out of date: run `python -m tests.test_readme --write`"
    )


def test_each_input_states_its_default() -> None:
    """The description's 'Default:' is the `default:` value itself when there is one."""
    for name, spec in _action()["inputs"].items():
        _, stated = split_default(spec["description"])
        if "default" in spec:
            assert stated == f"`{spec['default']}`", name
        else:
            assert not stated.startswith("`"), f"{name}: states a value but sets no default"


def test_cli_version_default_named_is_the_installers() -> None:
    from cursor_agent_action.agent.install.versions import DEFAULT_CLI_VERSION

    _, stated = split_default(_action()["inputs"]["cli-version"]["description"])
    assert f"({DEFAULT_CLI_VERSION})" in stated


def test_split_default_rejects_a_description_without_default() -> None:
    with pytest.raises(ValueError, match="does not state its default"):
        split_default("The task for the agent.")


def write() -> None:
    text = REFERENCE.read_text()
    for name, render in SECTIONS.items():
        match = _section_re(name).search(text)
        assert match, f"docs/reference.md has no '{name}' section markers"
        text = text[: match.start("body")] + render(_action()) + text[match.end("body") :]
    REFERENCE.write_text(text)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.test_readme --write")
    write()


def test_quick_start_workflow_is_valid_and_clean(tmp_path: Path) -> None:
    """The workflow users copy from Usage passes GitHub's schema and zizmor."""
    blocks = re.findall(r"```yaml\n(.*?)```", section(README.read_text(), "usage"), re.S)
    assert blocks, "the usage section has no yaml example"
    workflow = tmp_path / "quick-start.yml"
    workflow.write_text(blocks[0])
    assert "jobs" in yaml.safe_load(blocks[0])
    bin_dir = Path(sys.executable).parent
    checks = [
        [str(bin_dir / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows"],
        [
            str(bin_dir / "zizmor"),
            "--offline",
            "--no-progress",
            "--config",
            str(ROOT / ".github" / "zizmor.yml"),
        ],
    ]
    for argv in checks:
        result = subprocess.run(
            [*argv, str(workflow)], capture_output=True, text=True, timeout=120, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr


def _readme_workflow() -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", section(README.read_text(), "usage"), re.S)
    workflow: dict[str, Any] = yaml.safe_load(blocks[0])
    return workflow


def test_readme_is_a_front_door_not_a_manual() -> None:
    assert len(README.read_text().splitlines()) <= README_MAX_LINES


def test_readme_workflow_is_the_two_job_pattern_with_real_inputs() -> None:
    """The agent's job has no write permission; the write token is in another job, which
    never runs the agent; every `with:` key is an input of the action it configures; every
    other action is pinned by SHA, and ours by the COMMIT_SHA placeholder the text explains."""
    jobs = _readme_workflow()["jobs"]
    ours = "cursor-agent-action/cursor-agent-action"
    runs_agent = {name for name, job in jobs.items()
                  if any(step.get("uses", "").startswith(ours + "@") for step in job["steps"])}
    writes = {name for name, job in jobs.items() if "write" in job.get("permissions", {}).values()}
    assert runs_agent
    assert writes
    assert not runs_agent & writes
    for job in jobs.values():
        for step in job["steps"]:
            uses = step.get("uses", "")
            if not uses.startswith(ours):
                assert not uses or re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", uses), uses
                continue
            path, _, ref = uses.partition("@")
            assert ref == "COMMIT_SHA"
            sub = path.removeprefix(ours).strip("/")
            inputs = yaml.safe_load((ROOT / sub / "action.yml").read_text())["inputs"]
            assert set(step.get("with", {})) <= set(inputs), uses
    assert "COMMIT_SHA" in section(README.read_text(), "usage").split("```yaml")[0]


_LINK = re.compile(r"\]\(<?([^)>\s]+)>?\)")


def _anchors(markdown: str) -> set[str]:
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    text = page.read_text()
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        destination = (page.parent / file).resolve() if file else page
        assert destination.exists(), f"{page.name}: {target}"
        if anchor and destination.suffix == ".md":
            assert anchor in _anchors(destination.read_text()), f"{page.name}: {target}"
