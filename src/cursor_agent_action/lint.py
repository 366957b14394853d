"""``lint``: warn for every ``with:`` key a workflow gives this action or a sub-action that it
does not declare (GitHub runs the step as if the key were not there), with the closest valid
name; and for a sub-action that does not exist.

    cursor-agent-action lint [WORKFLOW ...]     (default: .github/workflows/*.yml, *.yaml)
"""

from __future__ import annotations

import argparse
import difflib
from dataclasses import dataclass
from pathlib import Path

import yaml

from cursor_agent_action.actionrefs import ACTION, action_name, declared_inputs
from cursor_agent_action.errors import EXIT_USAGE, UsageError
from cursor_agent_action.runner_io import Runner


@dataclass(frozen=True)
class Finding:
    line: int  # 1-based, in the workflow file
    message: str


def _closest(word: str, names: tuple[str, ...] | list[str]) -> str:
    found = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return found[0] if found else ""


def _mapping(node: yaml.Node | None) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    """A mapping node's entries by key (key node, value node); {} for anything else."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(key.value): (key, value) for key, value in node.value
            if isinstance(key, yaml.ScalarNode)}


def check(text: str) -> list[Finding]:
    """The unknown inputs and sub-actions of one workflow's text, in line order.

    Raises ``yaml.YAMLError`` when the text is not YAML.
    """
    inputs = declared_inputs()
    findings = []
    jobs = _mapping(yaml.compose(text, Loader=yaml.SafeLoader)).get("jobs", (None, None))[1]
    for _, job in _mapping(jobs).values():
        steps = _mapping(job).get("steps", (None, None))[1]
        for step in steps.value if isinstance(steps, yaml.SequenceNode) else []:
            entries = _mapping(step)
            uses = entries.get("uses", (None, None))[1]
            if not isinstance(uses, yaml.ScalarNode):
                continue
            name = str(uses.value).partition("@")[0]
            if name != ACTION and not name.startswith(f"{ACTION}/"):
                continue
            sub = name[len(ACTION) + 1:]
            if sub not in inputs:
                best = _closest(sub, [s for s in inputs if s])
                hint = (f"did you mean {action_name(best)}?" if best else
                        f"its sub-actions are {', '.join(s for s in inputs if s)}.")
                findings.append(Finding(uses.start_mark.line + 1,
                                        f"{name} is not an action of {ACTION}: {hint}"))
                continue
            given = entries.get("with", (None, None))[1]
            for key, _ in _mapping(given).values():
                if key.value in inputs[sub]:
                    continue
                best = _closest(str(key.value), inputs[sub])
                hint = (f"did you mean `{best}`?" if best else
                        f"its inputs are {', '.join(inputs[sub])}.")
                findings.append(Finding(
                    key.start_mark.line + 1,
                    f"`{key.value}` is not an input of {name}: {hint} The step would run as "
                    "if it were not there."))
    return sorted(findings, key=lambda f: f.line)


def check_file(path: Path) -> list[Finding]:
    """:func:`check` of a file; UsageError when it cannot be read or is not YAML."""
    try:
        return check(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}.",
                         "Give the path of a workflow file (.github/workflows/NAME.yml).") from exc
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not YAML: {' '.join(str(exc).split())}",
                         "Fix the file's syntax; GitHub would not run it either.") from exc


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workflows", nargs="*", metavar="WORKFLOW",
                        help="workflow files (default: .github/workflows/*.yml and *.yaml)")


def command(args: argparse.Namespace, runner: Runner) -> int:
    paths = [Path(p) for p in args.workflows] or sorted(
        p for pattern in ("*.yml", "*.yaml") for p in Path(".github/workflows").glob(pattern))
    if not paths:
        raise UsageError("no workflow files given, and none in .github/workflows here.",
                         "Run this in your repository, or give the files: cursor-agent-action "
                         "lint PATH ...")
    count = 0
    for path in paths:
        for finding in check_file(path):
            # file and line: GitHub shows it on the workflow's line (lint run in a job)
            runner.command("warning", f"{path}:{finding.line}: {finding.message}",
                           title="lint", file=str(path), line=str(finding.line))
            count += 1
    if count:
        runner.log(f"lint: {count} problem(s) in {len(paths)} workflow file(s).")
        return EXIT_USAGE
    runner.log(f"lint: every with: key in {len(paths)} workflow file(s) is an input of the "
               "action it is given to.")
    return 0
