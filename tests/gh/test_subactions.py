"""The sub-actions (publish, comment, ci-context, gate, review, pr-context): inputs reach the
helper only through env vars the command really reads, every input states its default, outputs
come from the helper step."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from cursor_agent_action import cli
from cursor_agent_action.options import VOCABULARY_ENV

ROOT = Path(__file__).resolve().parents[2]
SUBACTIONS = {
    "publish": ("publish", {"changed", "branch", "commit-sha", "pr-number", "pr-url"}),
    "comment": ("comment", {"comment-id", "comment-url", "issue-number"}),
    "ci-context": ("ci-context", {"context-file", "failed-jobs", "head-sha", "pr-number",
                                  "matrix", "job-count", "jobs-dir", "jobs-file",
                                  "not-triaged"}),
    "gate": ("gate", {"allowed", "reason", "actor", "task", "preset", "pr-number", "head-sha",
                      "head-ref", "base-ref"}),
    "review": ("review", {"review-id", "review-url", "comments-posted", "outside-diff",
                          "highest-severity", "status-state", "status-sha",
                          "not-reviewed", "not-reviewed-count", "missing-shards"}),
    "pr-context": ("pr-context", {"context-file", "schema-file", "head-sha", "base-sha",
                                  "changed-files", "diff-truncated", "matrix",
                                  "shard-count", "plan-dir", "plan-file", "not-reviewed",
                                  "not-reviewed-count"}),
}


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((ROOT / name / "action.yml").read_text())
    assert isinstance(data, dict)
    return data


def env_names_read_by(command: str) -> set[str]:
    parser = cli.build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = " ".join(action.help or "" for action in sub.choices[command]._actions)
    return set(re.findall(r"env (CURSOR_AGENT_ACTION_[A-Z_]+)", helps))


@pytest.mark.parametrize("name", sorted(SUBACTIONS))
def test_inputs_map_one_to_one_onto_env_vars_the_command_reads(name: str) -> None:
    command, _ = SUBACTIONS[name]
    action = load(name)
    steps = action["runs"]["steps"]
    (helper_step,) = [s for s in steps if "CAA_PYTHON" in (s.get("env") or {})]
    env = helper_step["env"]
    used = set(re.findall(r"\$\{\{ inputs\.([a-z0-9-]+) \}\}", yaml.safe_dump(env)))
    assert used == set(action["inputs"])
    known = env_names_read_by(command)
    # The vocabulary (messages name inputs) is read by the error paths of every command.
    assert env.pop(VOCABULARY_ENV) == "inputs"
    ours = {key for key in env if key.startswith("CURSOR_AGENT_ACTION_")}
    assert ours <= known, ours - known
    assert env["GITHUB_TOKEN"] == "${{ inputs.github-token }}"
    assert "CURSOR_AGENT_ACTION_TOKEN_ENV" in known


@pytest.mark.parametrize("name", sorted(SUBACTIONS))
def test_inputs_state_defaults_and_booleans_are_strings(name: str) -> None:
    for input_name, spec in load(name)["inputs"].items():
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", input_name)
        assert "Default:" in spec["description"], input_name
        assert "default" not in spec or isinstance(spec["default"], str), input_name


@pytest.mark.parametrize("name", sorted(SUBACTIONS))
def test_run_steps_are_strict_bash_without_expressions_and_exec_the_helper(name: str) -> None:
    command, outputs = SUBACTIONS[name]
    action = load(name)
    steps = action["runs"]["steps"]
    for step in steps:
        assert step["shell"] == "bash"
        assert step["run"].startswith("set -euo pipefail\n")
        assert "${{" not in step["run"]
        assert step["run"].rstrip().splitlines()[-1].startswith("exec ")
    assert 'scripts/setup-helper.sh"' in steps[0]["run"]
    assert steps[-1]["run"].rstrip().endswith(f"-m cursor_agent_action {command}")
    assert set(action["outputs"]) == outputs
    for out_name, spec in action["outputs"].items():
        assert spec["value"] == f"${{{{ steps.{steps[-1]['id']}.outputs.{out_name} }}}}"
