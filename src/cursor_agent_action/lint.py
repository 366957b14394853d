"""``lint``: warn for every ``with:`` key a workflow gives this action or a sub-action that it
does not declare (GitHub runs the step as if the key were not there), with the closest valid
name; for a sub-action that does not exist; and for publish's ``allowed-paths`` and
``protected-paths`` that cannot do what they are for (:mod:`.gh.publish.pathlint`).

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
from cursor_agent_action.gh.publish import pathlint
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


def _scalars(node: yaml.Node | None) -> dict[str, tuple[int, str]]:
    """A mapping's scalar entries: key -> (1-based line of the value's first line, value)."""
    return {name: (value.start_mark.line + 1 + (value.style in ("|", ">")), str(value.value))
            for name, (_, value) in _mapping(node).items()
            if isinstance(value, yaml.ScalarNode)}


def check(text: str, root: Path | None = None) -> list[Finding]:
    """The unknown inputs and sub-actions of one workflow's text, and the problems of
    publish's path inputs (:mod:`.gh.publish.pathlint`; ``root``: the repository, to tell a
    directory), in line order.

    Raises ``yaml.YAMLError`` when the text is not YAML.
    """
    inputs = declared_inputs()
    findings = []
    top = _mapping(yaml.compose(text, Loader=yaml.SafeLoader))
    jobs = top.get("jobs", (None, None))[1]
    workflow_env = {k: v for k, (_, v) in _scalars(top.get("env", (None, None))[1]).items()}
    agents: list[pathlint.AgentStep] = []
    publishes: list[pathlint.PublishStep] = []
    for _, job in _mapping(jobs).values():
        env = {**workflow_env, **{k: v for k, (_, v) in
                                  _scalars(_mapping(job).get("env", (None, None))[1]).items()}}
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
            values = _scalars(given)
            if sub == "":
                preset, allow = pathlint.agent_preset({k: v for k, (_, v) in values.items()})
                agents.append(pathlint.AgentStep(uses.start_mark.line + 1, preset, allow))
            elif sub == "publish":
                publishes.append(pathlint.PublishStep(*(
                    (values[name][0], pathlint.resolve(values[name][1], env))
                    if name in values else None
                    for name in ("allowed-paths", "protected-paths"))))
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
    for step in publishes:
        findings += [Finding(line, message)
                     for line, message in pathlint.check_publish(step, agents, root)]
    return sorted(findings, key=lambda f: f.line)


def repository_of(path: Path) -> Path:
    """The repository a workflow file belongs to: above ``.github/workflows``, else here."""
    parent = path.absolute().parent
    if parent.name == "workflows" and parent.parent.name == ".github":
        return parent.parent.parent
    return Path.cwd()


def check_file(path: Path) -> list[Finding]:
    """:func:`check` of a file; UsageError when it cannot be read or is not YAML."""
    try:
        return check(path.read_text(encoding="utf-8"), repository_of(path))
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
               "action it is given to, and publish's path inputs can match what they should.")
    return 0
