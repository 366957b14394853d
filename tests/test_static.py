"""Static checks of the action, the sub-actions, our CI and the example workflows.

- zizmor (offline audits) finds nothing;
- each file validates against GitHub's schema vendored in check-jsonschema;
- every `uses:` of a remote action is pinned to a full commit SHA with a version comment;
- composite steps get inputs only through `env:` and run bash with `set -euo pipefail`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

ACTIONS = sorted(p for p in [ROOT / "action.yml", *ROOT.glob("*/action.yml")] if p.is_file())
WORKFLOWS = sorted([*ROOT.glob(".github/workflows/*.yml"), *ROOT.glob("examples/*.yml")])
DEPENDABOT = ROOT / ".github" / "dependabot.yml"
# Lists the examples' pins where Dependabot updates them (it does not read examples/).
PINS = ROOT / ".github" / "pins" / "action.yml"

_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<rest>.*)$")
_PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
# The examples use this action (and its sub-actions) at COMMIT_SHA, the placeholder the README's
# "Pinning a version" fills in; .github/zizmor.yml allows exactly that here.
_OWN_ACTION = re.compile(r"^cursor-agent-action/cursor-agent-action(/[\w-]+)?@COMMIT_SHA$")
_VERSION_COMMENT = re.compile(r"^\s+#\s*v\d+(\.\d+)*\s*$")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_there_is_something_to_check() -> None:
    assert ROOT / "action.yml" in ACTIONS
    assert ROOT / ".github" / "workflows" / "ci.yml" in WORKFLOWS
    assert {p.name for p in ROOT.glob("examples/*.yml")} >= {
        "docs-update.yml",
        "ci-triage.yml",
        "monorepo-matrix.yml",
    }


def test_zizmor_offline_finds_nothing() -> None:
    files = [_rel(p) for p in [*ACTIONS, PINS, *WORKFLOWS, DEPENDABOT]]
    config = ROOT / ".github" / "zizmor.yml"
    result = _run(
        [
            str(BIN / "zizmor"),
            "--offline",
            "--no-progress",
            "--strict-collection",
            "--config",
            str(config),
            *files,
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout, result.stdout


@pytest.mark.parametrize("path", [*ACTIONS, PINS], ids=_rel)
def test_action_matches_github_schema(path: Path) -> None:
    result = _run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(path)]
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_workflow_matches_github_schema(path: Path) -> None:
    result = _run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path)]
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dependabot_matches_schema() -> None:
    result = _run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.dependabot", str(DEPENDABOT)]
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", [*ACTIONS, PINS, *WORKFLOWS], ids=_rel)
def test_remote_actions_pinned_to_full_sha_with_version_comment(path: Path) -> None:
    bad = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = _USES.match(line)
        if not match or match["ref"].startswith("./") or _OWN_ACTION.match(match["ref"]):
            continue
        if not (_PINNED.match(match["ref"]) and _VERSION_COMMENT.match(match["rest"])):
            bad.append(f"{_rel(path)}:{number}: {line.strip()}")
    assert bad == [], "pin to a 40-hex SHA and add '# vX.Y.Z':\n" + "\n".join(bad)


def _steps(action: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = action["runs"]["steps"]
    return steps


@pytest.mark.parametrize("path", ACTIONS, ids=_rel)
def test_composite_steps_are_strict_bash_fed_through_env(path: Path) -> None:
    action = yaml.safe_load(path.read_text())
    assert action["runs"]["using"] == "composite"
    for step in _steps(action):
        if "run" not in step:
            continue
        name = step.get("name") or step.get("id") or step["run"][:40]
        assert step.get("shell") == "bash", name
        assert step["run"].lstrip().startswith("set -euo pipefail"), name
        # Expressions in a script are template injection; values go through env: instead.
        assert "${{" not in step["run"], name


@pytest.mark.parametrize("path", ACTIONS, ids=_rel)
def test_helper_is_started_with_exec(path: Path) -> None:
    """So the runner's cancellation signal reaches the helper (it stops the agent cleanly)."""
    for step in _steps(yaml.safe_load(path.read_text())):
        for line in step.get("run", "").splitlines():
            if '"$CAA_PYTHON"' in line:
                assert 'exec "$CAA_PYTHON" ' in line, line


def test_ci_workflow_grants_nothing_by_default() -> None:
    ci = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    assert ci["permissions"] == {}
    checkouts = [
        step
        for job in ci["jobs"].values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("actions/checkout@")
    ]
    assert checkouts
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)


def _own_action_file(uses: str) -> Path | None:
    """action.yml behind a `uses:` of this repository's action or sub-actions, else None."""
    if uses == "./":
        return ROOT / "action.yml"
    match = re.match(r"^cursor-agent-action/cursor-agent-action(?:/(?P<sub>[\w-]+))?@", uses)
    if not match:
        return None
    return ROOT / (match["sub"] or "") / "action.yml"


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_workflows_pass_only_inputs_our_actions_declare(path: Path) -> None:
    """A renamed or mistyped input would be ignored with a mere warning on GitHub."""
    workflow = yaml.safe_load(path.read_text())
    for job in workflow["jobs"].values():
        for step in job.get("steps", []):
            action_file = _own_action_file(str(step.get("uses", "")))
            if action_file is None:
                continue
            inputs = yaml.safe_load(action_file.read_text())["inputs"]
            given = set(step.get("with", {}))
            assert given <= set(inputs), f"{step['uses']}: unknown {sorted(given - set(inputs))}"
            required = {n for n, spec in inputs.items() if spec.get("required")}
            assert required <= given, f"{step['uses']}: missing {sorted(required - given)}"


# The agent action itself (not its sub-actions).
_AGENT_ACTION = re.compile(r"^(\./?|cursor-agent-action/cursor-agent-action@\S+)$")


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_agent_never_shares_a_job_with_a_write_token(path: Path) -> None:
    """A job that runs the agent grants no write permission (the agent runs as the runner user
    and could change what later steps of its job execute, tokens and all)."""
    workflow = yaml.safe_load(path.read_text())
    for name, job in workflow["jobs"].items():
        uses = [str(step.get("uses", "")) for step in job.get("steps", [])]
        if any(_AGENT_ACTION.match(u) for u in uses):
            granted = job.get("permissions", workflow.get("permissions"))
            assert isinstance(granted, dict), f"{name}: set explicit, read-only permissions"
            assert "write" not in granted.values(), f"{name} runs the agent with {granted}"


def _run_blocks(path: Path) -> list[tuple[str, str]]:
    """(name, script) of every `run:` step of an action or workflow file."""
    data = yaml.safe_load(path.read_text())
    step_lists = [data.get("runs", {}).get("steps", [])] + [
        job.get("steps", []) for job in data.get("jobs", {}).values()
    ]
    return [
        (f"{_rel(path)}: {step.get('name') or step.get('id') or index}", step["run"])
        for steps in step_lists
        for index, step in enumerate(steps)
        if "run" in step
    ]


def test_shell_passes_shellcheck(tmp_path: Path) -> None:
    """scripts/*.sh and every `run:` block (as bash, the shell of each of them) pass shellcheck."""
    blocks = [block for path in [*ACTIONS, *WORKFLOWS] for block in _run_blocks(path)]
    assert len(blocks) > 10
    names: dict[str, str] = {}
    for number, (name, script) in enumerate(blocks):
        target = tmp_path / f"run-{number}.sh"
        # An expression (there should be none in a run: block) becomes a plain word.
        target.write_text("#!/usr/bin/env bash\n" + re.sub(r"\$\{\{.*?\}\}", "EXPR", script))
        names[target.name] = name
    scripts = sorted(ROOT.glob("scripts/*.sh"))
    assert scripts
    result = _run(
        [str(BIN / "shellcheck"), "--shell=bash", "--format=gcc",
         *map(str, scripts), *sorted(str(p) for p in tmp_path.glob("run-*.sh"))]
    )  # fmt: skip
    report = result.stdout
    for file_name, name in names.items():
        report = report.replace(str(tmp_path / file_name), f"[{name}]")
    assert result.returncode == 0, report + result.stderr


def _pins(path: Path) -> dict[str, set[str]]:
    """Remote action -> the SHAs ``path`` pins it to."""
    found: dict[str, set[str]] = {}
    for line in path.read_text().splitlines():
        match = _USES.match(line)
        if match and _PINNED.match(match["ref"]):
            name, _, sha = match["ref"].partition("@")
            found.setdefault(name, set()).add(sha)
    return found


def test_examples_pin_what_dependabot_updates() -> None:
    """Dependabot updates action.yml files and .github/workflows, not examples/: every action
    an example uses is pinned, to the same SHA, in a file it updates (its dependabot.yml
    directories: "/" for the workflows and root action, plus each listed action.yml)."""
    config = yaml.safe_load(DEPENDABOT.read_text())
    (actions,) = [u for u in config["updates"] if u["package-ecosystem"] == "github-actions"]
    maintained_files = [*ROOT.glob(".github/workflows/*.yml")]
    for directory in actions["directories"]:
        maintained_files += ROOT.joinpath(directory.lstrip("/")).glob("action.yml")
    maintained: dict[str, set[str]] = {}
    for path in maintained_files:
        for name, shas in _pins(path).items():
            maintained.setdefault(name, set()).update(shas)
    examples = sorted(ROOT.glob("examples/*.yml"))
    assert examples
    stale = [
        f"{_rel(path)}: {name}@{sorted(shas)} (Dependabot keeps {sorted(maintained.get(name, ()))})"
        for path in examples
        for name, shas in _pins(path).items()
        if not shas <= maintained.get(name, set()) or len(maintained[name]) != 1
    ]
    assert stale == [], "\n".join(stale)


def _pin_command() -> str:
    """The shell lines README.md's "Pinning a version" gives to copy an example, pinned."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Pinning a version\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return str(block)


def test_examples_and_readme_use_the_one_pin_placeholder() -> None:
    """Every use of this action, its sub-actions and its checkout is at COMMIT_SHA."""
    own = re.compile(r"cursor-agent-action/cursor-agent-action(?:/[\w-]+)?@(\S+)")
    readme = (ROOT / "README.md").read_text()
    for path in sorted(ROOT.glob("examples/*.yml")):
        text = path.read_text()
        assert set(own.findall(text)) == {"COMMIT_SHA"}, _rel(path)
        for step in (s for job in yaml.safe_load(text)["jobs"].values() for s in job["steps"]):
            if step.get("with", {}).get("repository") == "cursor-agent-action/cursor-agent-action":
                assert step["with"]["ref"] == "COMMIT_SHA", _rel(path)
    assert set(own.findall(readme)) == {"COMMIT_SHA"}


@pytest.mark.parametrize("example", sorted(ROOT.glob("examples/*.yml")), ids=lambda p: p.name)
def test_an_example_pinned_as_the_readme_says_passes_zizmor_without_our_config(
    tmp_path: Path, example: Path
) -> None:
    """A user's scratch repository: the example copied and pinned with the README's command,
    run as printed (``~`` a fresh home holding your repository and a clone of this project
    "set up as above": its examples and venv; nothing of the project on ``PATH``; offline),
    then zizmor with no configuration at all."""
    home = tmp_path / "home"
    clone = home / "src" / "cursor-agent-action"
    clone.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=t", "-c", "user.email=t@e",
                    "commit", "-q", "--allow-empty", "-m", "main"], check=True)
    sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], check=True,
                         capture_output=True, text=True).stdout.strip()
    (clone / "examples").mkdir()
    (clone / "examples" / example.name).write_text(example.read_text())
    (clone / ".venv").symlink_to(Path(sys.prefix))
    scratch = home / "src" / "your-project"
    scratch.mkdir(parents=True)
    command = _pin_command().replace("docs-update.yml", example.name)
    assert '"$CAA/.venv/bin/cursor-agent-action" pin --ref main ' in command
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if Path(p).resolve() != BIN.resolve())
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}
    subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=tmp_path, env=env,
                   check=True, timeout=60)
    pinned = (scratch / ".github" / "workflows" / example.name).read_text()
    assert "@COMMIT_SHA" not in pinned
    assert "ref: COMMIT_SHA" not in pinned
    assert f"cursor-agent-action/cursor-agent-action@{sha}" in pinned
    result = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--no-progress", "--no-config", "--strict-collection",
         str(scratch / ".github" / "workflows" / example.name)],
        cwd=scratch, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout, result.stdout
