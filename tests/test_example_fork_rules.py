"""examples/fork-review.yml keeps the rules that make ``pull_request_target`` safe
(docs/security.md, "Fork pull requests"), read from the file itself so an edit that breaks one
fails here without act: nothing of the head checked out or used on the runner, least
permissions per job, the agent's view made from the head's objects with the key masked, no
expression inside a script. The unsafe variant the act tests run breaks them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fork-review.yml"
UNSAFE = ROOT / "tests" / "fixtures" / "workflows" / "fork-review-unsafe.yml"
HEAD_SHA = "${{ github.event.pull_request.head.sha }}"


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = job.get("steps") or []
    return steps


HEAD_COMMANDS = ("git checkout", "git switch", "git worktree", "git reset", "submodule update",
                 "include.path")


def _step_rules(name: str, step: dict[str, Any]) -> list[str]:
    """What one step of job ``name`` breaks."""
    broken = []
    uses, given = str(step.get("uses", "")), step.get("with") or {}
    if uses.startswith("./"):
        broken.append(f"{name}: a local action ({uses}) comes from the checkout")
    if uses.startswith("actions/checkout@"):
        if "base.sha" not in str(given.get("ref")):
            broken.append(f"{name}: a checkout of something other than the base")
        if given.get("persist-credentials") is not False:
            broken.append(f"{name}: the checkout keeps its credential")
    if uses.startswith("actions/cache"):
        broken.append(f"{name}: a cache a fork's run could fill")
    script = str(step.get("run", ""))
    if "${{" in script:
        broken.append(f"{name}: an expression inside a script")
    if any(command in script for command in HEAD_COMMANDS):
        broken.append(f"{name}: a script checks out or configures the head")
    return broken


def _agent_rules(name: str, job: dict[str, Any], step: dict[str, Any]) -> list[str]:
    """What the agent's step (and its job) breaks."""
    given = step.get("with") or {}
    rules = [
        (job.get("permissions") != {"contents": "read"},
         "the agent's job holds more than contents: read"),
        (given.get("view-commit") != HEAD_SHA,
         "the agent does not see the head's objects (view-commit)"),
        (given.get("api-key-masking") != "masked-or-fail",
         "the key may be in the box (api-key-masking)"),
        (given.get("permissions", "read-only") != "read-only", "the agent may write"),
        (given.get("isolation") == "none", "isolation none"),
        (given.get("network") == "open", "network open"),
    ]
    return [f"{name}: {words}" for broken, words in rules if broken]


def broken_rules(workflow: dict[str, Any]) -> list[str]:
    """Each rule of the fork review the workflow breaks, in words."""
    broken = []
    keys: dict[Any, Any] = workflow
    triggers = keys.get("on", keys.get(True))  # YAML 1.1 reads `on` as True
    if list(triggers or {}) != ["pull_request_target"]:
        broken.append("it runs on more than pull_request_target")
    if workflow.get("permissions") != {}:
        broken.append("the workflow grants permissions to every job")
    jobs: dict[str, Any] = workflow["jobs"]
    agents = 0
    for name, job in jobs.items():
        for step in _steps(job):
            broken += _step_rules(name, step)
            if str(step.get("uses", "")).startswith("cursor-agent-action/cursor-agent-action@"):
                agents += 1
                broken += _agent_rules(name, job, step)
        writes = [k for k, v in (job.get("permissions") or {}).items() if v == "write"]
        if "pull-requests" in writes and any(
                str(s.get("uses", "")).startswith("actions/checkout@") or "run" in s
                for s in _steps(job)):
            broken.append(f"{name}: the job that writes checks out or runs a script")
    if not agents:
        broken.append("no job runs the agent")
    return broken


def test_the_example_keeps_every_rule() -> None:
    assert broken_rules(yaml.safe_load(EXAMPLE.read_text())) == []


def test_the_unsafe_variant_breaks_them() -> None:
    """Not vacuous: the variant the attacks get through is caught here too."""
    broken = broken_rules(yaml.safe_load(UNSAFE.read_text()))
    assert "agent: a local action (./.github/actions/setup) comes from the checkout" in broken
    assert "agent: a script checks out or configures the head" in broken
    assert "agent: the agent does not see the head's objects (view-commit)" in broken


@pytest.mark.parametrize(("edit", "words"), [
    (("persist-credentials: false", "persist-credentials: true"), "keeps its credential"),
    (("contents: read # the base", "contents: write # the base"), "more than contents: read"),
    (("api-key-masking: masked-or-fail", "api-key-masking: masked"), "api-key-masking"),
    (("ref: ${{ github.event.pull_request.base.sha }}",
      "ref: ${{ github.event.pull_request.head.sha }}"), "other than the base"),
])
def test_each_unsafe_edit_is_named(edit: tuple[str, str], words: str) -> None:
    text = EXAMPLE.read_text()
    assert edit[0] in text
    broken = broken_rules(yaml.safe_load(text.replace(edit[0], edit[1])))
    assert any(words in rule for rule in broken), broken
