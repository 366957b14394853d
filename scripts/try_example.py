"""Run one of examples/*.yml under act on this machine, offline, and show what it did.

    .venv/bin/python scripts/try_example.py docs-update [--keep DIR] [--answer TEXT]

The wiring is the test suite's (``tests/support/example_world.py``): this checkout as the
action, a loopback GitHub REST API, a loopback CLI download server whose package is the stand-in
CLI (it replays a short run and, for docs-update, edits docs/usage.md), a small repository with
a pull request, and stand-ins for actions/checkout and the artifact actions. Nothing reaches the
network and no account is needed. See docs/local-testing.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository's own tests.support

from tests.support.act import ActRun  # noqa: E402
from tests.support.example_world import (  # noqa: E402
    HEAD_REF,
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

DIAGNOSIS = {"cause": "a renamed constant", "failing-step": "Run pytest",
             "suggested-fix": "Read MAX_RETRIES.", "confidence": 0.8}


def _docs_update(world: World, answer: str) -> ActRun:
    number = world.github.add_pull(HEAD_REF)
    serve_standin_cli(world.downloads, world.base,
                      {"edits": {"docs/usage.md": USAGE_AFTER}, "answer": answer,
                       "record": "record.jsonl"})
    return world.run("docs-update.yml", "pull_request", pull_request_event(world, number))


def _ci_triage(world: World, answer: str) -> ActRun:
    number = world.github.add_pull(HEAD_REF)
    run_id = add_failed_run(world, b"2026-11-22T01:00:01.0000000Z FAILED tests/test_cli.py\n",
                            pull_numbers=(number,))
    text = f"{answer}\n\n```json\n{json.dumps(DIAGNOSIS)}\n```"
    serve_standin_cli(world.downloads, world.base, {"answer": text, "record": "record.jsonl"})
    return world.run("ci-triage.yml", "workflow_run",
                     workflow_run_event(world, run_id, pull_numbers=(number,)))


def _comment_command(world: World, answer: str) -> ActRun:
    world.github.permissions["maintainer"] = "write"
    number = world.github.add_pull(HEAD_REF, head_sha=world.head_sha)
    serve_standin_cli(world.downloads, world.base,
                      {"edits": {"docs/usage.md": USAGE_AFTER}, "answer": answer,
                       "record": "record.jsonl"})
    event = comment_event(world, number, "/cursor docs Update docs/usage.md for the rename")
    return world.run("comment-command.yml", "issue_comment", event)


def _monorepo_matrix(world: World, answer: str) -> ActRun:
    serve_standin_cli(world.downloads, world.base, {"answer": answer, "record": "record.jsonl"})
    return world.run("monorepo-matrix.yml", "workflow_dispatch", {"inputs": {}})


def _code_review(world: World, answer: str) -> ActRun:
    number = add_review_pull(world)
    findings = [
        {"path": "src/cli.py", "line": 1, "severity": "major", "title": "Callers still read "
         "RETRIES", "body": "`RETRIES` is gone; keep it as an alias until the callers move.",
         "suggestion": "MAX_RETRIES = RETRIES = 3"},
        {"path": "docs/usage.md", "line": 3, "severity": "minor", "title": "Docs not updated",
         "body": "Still says `--retries`: this line is not in the diff, so the finding goes "
         "in the review body."},
    ]
    serve_standin_cli(world.downloads, world.base,
                      {"answer": review_answer(findings, answer), "record": "record.jsonl"})
    return world.run("code-review.yml", "pull_request", pull_request_event(world, number))


def _ci_fix(world: World, answer: str) -> ActRun:
    number = world.github.add_pull(HEAD_REF)
    run_id = add_failed_run(world, b"2026-11-22T01:00:01.0000000Z KeyError: 'RETRIES'\n",
                            pull_numbers=(number,))
    serve_standin_cli(world.downloads, world.base,
                      {"edits": {"src/cli.py": "MAX_RETRIES = 3\nRETRIES = MAX_RETRIES\n"},
                       "answer": answer, "record": "record.jsonl"})
    return world.run("ci-fix.yml", "workflow_run",
                     workflow_run_event(world, run_id, pull_numbers=(number,)))


EXAMPLES: dict[str, Callable[[World, str], ActRun]] = {
    "docs-update": _docs_update, "ci-triage": _ci_triage, "monorepo-matrix": _monorepo_matrix,
    "comment-command": _comment_command, "code-review": _code_review, "ci-fix": _ci_fix,
}


def _report(run: ActRun, world: World) -> None:
    jobs = sorted({str(r["jobID"]) for r in run.records if r.get("jobID")})
    print(f"act exited with {run.returncode} in {run.duration_s:.0f} s")
    for job in jobs:
        print(f"\n== job {job}: {run.job_result(job)}")
        summary = run.summary(job).strip()
        if summary:
            print(summary)
    calls: list[dict[str, Any]] = [{"method": r.method, "path": r.path}
                                   for r in world.github.requests if r.method != "GET"]
    print("\n== what the jobs asked of the GitHub API (writes only)")
    for call in calls:
        print(f"  {call['method']} {call['path']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example", choices=sorted(EXAMPLES))
    parser.add_argument("--keep", metavar="DIR", help="keep the world (repository, remote, "
                        "act logs) in DIR instead of a temporary directory")
    parser.add_argument("--answer", default="Done: the docs describe the code as it is now.",
                        help="what the stand-in agent answers")
    args = parser.parse_args(argv)
    if not shutil.which("git"):
        parser.error("git is needed (the example's repository is a real one)")
    base = Path(args.keep).absolute() if args.keep else Path(tempfile.mkdtemp(prefix="try-"))
    base.mkdir(parents=True, exist_ok=True)
    if any(base.iterdir()):
        parser.error(f"{base} is not empty")
    print(f"Running examples/{args.example}.yml under act, offline, in {base} ...")
    with build_world(base) as world:
        run = EXAMPLES[args.example](world, args.answer)
        _report(run, world)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print(f"\nThe world is kept in {base} (act's raw log: see ActRun in tests/support/act.py)")
    failed = [job for job in {str(r["jobID"]) for r in run.records if r.get("jobID")}
              if run.job_result(job) not in ("success", None)]
    return 1 if run.timed_out or failed else 0


if __name__ == "__main__":
    sys.exit(main())
