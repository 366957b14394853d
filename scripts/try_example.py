"""Run an example workflow, or any workflow file, under act on this machine, offline, and show
what it did: each job's result and job summary, and every comment, review and pull request it
created, with its text.

    .venv/bin/python scripts/try_example.py docs-update [--keep DIR] [--answer TEXT]
    .venv/bin/python scripts/try_example.py --workflow PATH --event NAME [--event-file FILE]

The wiring is the test suite's (``tests/support/example_world.py``): this checkout as the
action (at whatever ref the workflow names it), a loopback GitHub REST API, a loopback CLI
download server whose package is the stand-in CLI, a small repository with a pull request that
renames a flag, and stand-ins for actions/checkout and the artifact actions. The stand-in agent
answers as the workflow asks: it updates docs/usage.md where the preset allows writes, explains
the failed CI run on ``workflow_run`` (or fixes the failing test, with the ``edit`` preset), and
reviews otherwise (the pull request, or a README against its code). Nothing reaches the
network and no account is needed. See docs/local-testing.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository's own tests.support

from tests.support.act import ActRun  # noqa: E402
from tests.support.example_world import (  # noqa: E402
    HEAD_REF,
    TEST_AFTER,
    USAGE_AFTER,
    World,
    add_failed_run,
    add_review_pull,
    build_world,
    comment_event,
    pull_request_event,
    review_answer,
    serve_standin_cli,
    workflow_run_event,
)

# The event each example runs on.
EXAMPLES: dict[str, str] = {
    "docs-update": "pull_request", "ci-triage": "workflow_run", "monorepo-matrix":
    "workflow_dispatch", "comment-command": "issue_comment", "code-review": "pull_request",
    "ci-fix": "workflow_run",
}  # fmt: skip

DIAGNOSIS = {"cause": "src/cli.py renamed RETRIES to MAX_RETRIES; tests/test_cli.py still "
             "reads RETRIES", "failing-step": "Run pytest",
             "suggested-fix": "Read MAX_RETRIES in tests/test_cli.py.", "confidence": 0.8}
# What the stand-in agent does, by what the workflow asks of it: (answer, files it writes).
ANSWERS: dict[str, tuple[str, dict[str, str]]] = {
    "docs": ("Updated docs/usage.md: the flag is `--max-retries` now, as src/cli.py has it.",
             {"docs/usage.md": USAGE_AFTER}),
    "triage": ("The tests fail because src/cli.py renamed `RETRIES` to `MAX_RETRIES` while "
               "tests/test_cli.py still reads `RETRIES`.\n\n```diff\n-from cli import RETRIES\n"
               "+from cli import MAX_RETRIES\n```\n\n```json\n" + json.dumps(DIAGNOSIS)
               + "\n```", {}),
    "fix": ("Fixed tests/test_cli.py: it reads `MAX_RETRIES`, the name src/cli.py has now.",
            {"tests/test_cli.py": TEST_AFTER}),
    "review": ("The rename in src/cli.py (`RETRIES` to `MAX_RETRIES`) is consistent in the "
               "code, but docs/usage.md still documents `--retries`: update it with this "
               "change.", {}),
    "readme-review": ("README.md agrees with the code next to it: no statement contradicts "
                      "it.", {}),
    "code-review": (review_answer([
        {"path": "src/cli.py", "line": 1, "severity": "minor",
         "title": "Callers still read RETRIES",
         "body": "`RETRIES` is gone; keep it as an alias until the callers move.",
         "suggestion": "MAX_RETRIES = RETRIES = 3"},
        {"path": "docs/usage.md", "line": 3, "severity": "minor", "title": "Docs not updated",
         "body": "Still says `--retries`: this line is not in the diff, so the finding goes in "
         "the review body."},
    ]), {}),
}
COMMAND = "/cursor docs Update docs/usage.md for the renamed flag"
FAILED_LOG = b"2026-11-22T01:00:01.0000000Z FAILED tests/test_cli.py::test_retries\n"


def _agent_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    """The steps that run the agent action itself (not a sub-action)."""
    return [step for job in workflow.get("jobs", {}).values() for step in job.get("steps", [])
            if str(step.get("uses", "")).startswith("cursor-agent-action/cursor-agent-action@")]


def _kind(workflow: dict[str, Any], event: str) -> str:
    """What the workflow asks the agent for: a triage answer (a JSON diagnosis), a fix of the
    failed run, docs changes, or a review."""
    steps = _agent_steps(workflow)
    presets = {str(s.get("with", {}).get("permissions", "read-only")).strip() for s in steps}
    if any("/review@" in str(step.get("uses", "")) for job in workflow.get("jobs", {}).values()
           for step in job.get("steps", [])):
        return "code-review"
    if any("output-schema" in s.get("with", {}) for s in steps):
        return "triage"
    if event == "workflow_run":
        return "fix" if "edit" in presets else "triage"
    if presets - {"read-only", ""}:
        return "docs"
    return "review" if event.startswith("pull_request") or event == "issue_comment" else (
        "readme-review")


def _payload(world: World, event: str, workflow: dict[str, Any]) -> dict[str, Any]:
    """An event of kind ``event`` shaped like GitHub's, with what it refers to in the world:
    a pull request from the head branch (and a failed CI run of it, a comment command)."""
    if _kind(workflow, event) == "code-review":  # the pull request's files and diff too
        number = add_review_pull(world)
    else:
        number = world.github.add_pull(HEAD_REF, head_sha=world.head_sha)
    if event.startswith("pull_request"):
        return pull_request_event(world, number)
    if event == "workflow_run":
        run_id = add_failed_run(world, FAILED_LOG, pull_numbers=(number,))
        return workflow_run_event(world, run_id, pull_numbers=(number,))
    if event == "issue_comment":
        world.github.permissions["maintainer"] = "write"
        return comment_event(world, number, COMMAND)
    if event == "workflow_dispatch":
        triggers = workflow.get("on", workflow.get(True, {}))  # YAML 1.1 reads `on` as True
        spec = triggers.get("workflow_dispatch") if isinstance(triggers, dict) else None
        inputs = (spec or {}).get("inputs") or {}
        return {"inputs": {name: str(item.get("default", "Update docs/usage.md for the "
                                                 "renamed flag")) for name, item in inputs.items()}}
    return {}


def _posted(world: World) -> list[str]:
    """Every write the jobs asked of the GitHub API, with the text it carried."""
    lines = []
    for request in world.github.requests:
        if request.method == "GET":
            continue
        lines.append(f"\n-- {request.method} {request.path}")
        body = request.body if isinstance(request.body, dict) else {}
        for name in ("title", "head", "base", "event", "labels", "context", "state",
                     "description"):
            if body.get(name):
                lines.append(f"{name}: {body[name]}")
        if isinstance(request.body, list):  # labels
            lines.append(f"labels: {request.body}")
        if body.get("body"):
            lines.append(str(body["body"]).rstrip())
        comments = body.get("comments") or []
        if comments:  # a review's line comments, apart from its body
            lines.append(f"-- its {len(comments)} line comment(s):")
        for comment in comments:
            lines.append(f"[{comment.get('path')}:{comment.get('line')}] {comment.get('body')}")
        variables = body.get("variables", {}).get("input", {})  # GraphQL: a signed commit
        if isinstance(variables, dict) and variables.get("message"):
            lines.append(f"commit: {variables['message'].get('headline')}")
    return lines


def legs(run: ActRun) -> list[tuple[str, str, ActRun]]:
    """The jobs that ran, in the order they started: (job id, label, its records), one per
    matrix leg (the label names the leg's values)."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in run.records:
        if record.get("jobID"):
            matrix = record.get("matrix") or {}
            key = (str(record["jobID"]), json.dumps(matrix, sort_keys=True))
            found.setdefault(key, []).append(record)
    out = []
    for (job, matrix), records in found.items():
        values = json.loads(matrix)
        label = job + (f" ({', '.join(f'{k}: {v}' for k, v in values.items())})" if values else "")
        out.append((job, label, dataclasses.replace(run, records=records)))
    return out


def _act_errors(run: ActRun) -> list[str]:
    """What act itself said went wrong (its own lines, not a job's)."""
    said = [line for line in run.raw.splitlines()
            if line.strip() and not line.startswith("{") and "error" in line.lower()]
    said += [str(r.get("msg", "")) for r in run.records
             if r.get("level") in ("error", "fatal") and not r.get("jobID")]
    return [line.strip() for line in said if line.strip()][:10]


def report(run: ActRun, world: World, workflow: dict[str, Any]) -> list[str]:
    """Per job (and matrix leg) its result and summary, the jobs that did not run, then what
    was posted."""
    ran = legs(run)
    lines = [f"act exited with {run.returncode} in {run.duration_s:.0f} s"]
    if not ran and run.returncode != 0:
        triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare on as true
        names = ([triggers] if isinstance(triggers, str) else list(triggers or []))
        lines += ["act ran no job:", *(f"  {line}" for line in _act_errors(run)),
                  f"The workflow runs on: {', '.join(map(str, names)) or 'nothing'} "
                  "(--event names one of them)."]
        return lines
    for job, label, records in ran:
        lines.append(f"\n== job {label}: {records.job_result(job) or 'not run'}")
        summary = records.summary(job).strip()
        lines.append(summary or "(no job summary)")
    seen = {job for job, _, _ in ran}
    for job in workflow.get("jobs") or {}:
        if str(job) not in seen:
            lines.append(f"\n== job {job}: skipped (its `if:` was false, or a job it needs did "
                         "not succeed)")
    posted = _posted(world)
    lines.append("\n== what the jobs posted to the GitHub API"
                 + ("" if posted else ": nothing"))
    return lines + posted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("example", nargs="?", choices=sorted(EXAMPLES),
                        help="an example of examples/, by name")
    parser.add_argument("--workflow", metavar="PATH", help="any workflow file instead")
    parser.add_argument("--event", help="the event it runs on (with --workflow), e.g. "
                        "pull_request, workflow_run, issue_comment, workflow_dispatch, push")
    parser.add_argument("--event-file", metavar="FILE",
                        help="the event's payload (JSON) instead of one made to fit the world")
    parser.add_argument("--keep", metavar="DIR", help="keep the world (repository, remote, "
                        "act logs) in DIR instead of a temporary directory")
    parser.add_argument("--answer", help="what the stand-in agent answers instead")
    args = parser.parse_args(argv)
    if bool(args.example) == bool(args.workflow):
        parser.error("give an example's name or --workflow PATH (not both)")
    if args.workflow and not args.event:
        parser.error("--workflow needs --event NAME")
    if not shutil.which("git"):
        parser.error("git is needed (the world's repository is a real one)")
    source = Path(args.workflow) if args.workflow else ROOT / "examples" / f"{args.example}.yml"
    event = args.event or EXAMPLES[args.example]
    try:
        text = source.read_text(encoding="utf-8")
        workflow = yaml.safe_load(text)
        payload = json.loads(Path(args.event_file).read_text()) if args.event_file else None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        parser.error(str(exc))
    if not isinstance(workflow, dict):
        parser.error(f"{source} is not a workflow")
    base = Path(args.keep).absolute() if args.keep else Path(tempfile.mkdtemp(prefix="try-"))
    base.mkdir(parents=True, exist_ok=True)
    if any(base.iterdir()):
        parser.error(f"{base} is not empty")
    print(f"Running {source} on {event} under act, offline, in {base} ...")
    with build_world(base) as world:
        (world.repo / ".github" / "workflows" / source.name).write_text(text, encoding="utf-8")
        answer, writes = ANSWERS[_kind(workflow, event)]
        serve_standin_cli(world.downloads, world.base, {
            "answer": args.answer or answer, "writes": writes, "record": "record.jsonl"})
        made = _payload(world, event, workflow)
        run = world.run(source.name, event, made if payload is None else payload)
        print("\n".join(report(run, world, workflow)))
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"\nThe world is kept in {base} (act's raw log: act-*/act.log)")
    ran = legs(run)
    failed = [label for job, label, records in ran
              if records.job_result(job) not in ("success", None)]
    return 1 if run.timed_out or failed or (not ran and run.returncode != 0) else 0


if __name__ == "__main__":
    sys.exit(main())
