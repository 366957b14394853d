"""Run an example workflow, or any workflow file, under act on this machine, offline, and show
what it did: each job's result and job summary, and every comment, review and pull request it
created, with its text.

    .venv/bin/python scripts/try_example.py docs-update [--keep DIR] [--answer TEXT]
    .venv/bin/python scripts/try_example.py --workflow PATH [--event NAME] [--event-file FILE]
    (in your repository) /path/to/cursor-agent-action/.venv/bin/python \
        /path/to/cursor-agent-action/scripts/try_example.py --workflow .github/workflows/X.yml \
        [--repo PATH] [--base BRANCH] [--head BRANCH] [--log FILE] [--cli-path CLI]

The wiring is the test suite's (``tests/support/example_world.py``): this checkout as the
action (at whatever ref the workflow names it), a loopback GitHub REST API, a loopback CLI
download server whose package is the stand-in CLI, and stand-ins for actions/checkout and the
artifact actions. The repository is yours when the script is started in a git repository other
than this checkout, or given ``--repo``: a pull request from your current branch (``--head``)
into your default branch (``--base``), and the stand-in answers about that diff
(``tests/support/your_world.py``). Otherwise it is the sample: a small repository with a pull
request that renames a flag. The stand-in agent answers as the workflow asks: it updates a
Markdown file where the preset allows writes, explains the failed CI run on ``workflow_run``
(or fixes the failing test, with the ``edit`` preset), and reviews otherwise (the pull
request, or a README against its code). Nothing reaches the network and no account is needed,
unless ``--cli-path`` runs the real CLI with your CURSOR_API_KEY. See docs/local-testing.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from cursor_agent_action.lint import check

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repository's own tests.support

from tests.support.act import REPOSITORY, ActRun  # noqa: E402
from tests.support.example_world import (  # noqa: E402
    HEAD_REF,
    TEST_AFTER,
    USAGE_AFTER,
    CliPackageError,
    World,
    add_failed_run,
    add_large_review_pull,
    add_review_pull,
    build_world,
    comment_event,
    git,
    pull_request_event,
    review_answer,
    serve_cli,
    serve_standin_cli,
    workflow_run_event,
)
from tests.support.users import TEST_AGENT_USER, remove_user, user_exists  # noqa: E402
from tests.support.your_world import (  # noqa: E402
    Failure,
    WorldError,
    YourPull,
    answers,
    build_your_world,
    find_pull,
    read_failure,
    toplevel,
)

# The event each example runs on.
EXAMPLES: dict[str, str] = {
    "docs-update": "pull_request", "ci-triage": "workflow_run", "monorepo-matrix":
    "workflow_dispatch", "comment-command": "issue_comment", "code-review": "pull_request",
    "ci-fix": "workflow_run", "fork-review": "pull_request_target",
}  # fmt: skip
FORK = "someone/widgets"
"""Where the pull request of a ``pull_request_target`` run comes from: a fork, whose head is
only in the "GitHub" remote's ``refs/pull/N/head``, as GitHub keeps a fork's head."""

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


def _payload(world: World, event: str, workflow: dict[str, Any], pull: YourPull | None,
             *, log: bytes, failure: Failure, pr_files: int = 0) -> dict[str, Any]:
    """An event of kind ``event`` shaped like GitHub's, with what it refers to in the world:
    a pull request from the head branch (and a failed CI run of it, a comment command)."""
    if pull is not None:  # yours: its files and diff, as GitHub lists them
        number = world.github.add_pull(world.head_ref, world.base_ref, head_sha=world.head_sha)
        world.github.set_pull_files(number, pull.files)
    elif _kind(workflow, event) == "code-review":  # the pull request's files and diff too
        number = add_large_review_pull(world, pr_files) if pr_files else add_review_pull(world)
    else:
        number = world.github.add_pull(HEAD_REF, head_sha=world.head_sha)
    if event.startswith("pull_request"):
        head = str(world.github.state.pulls[number]["head"]["sha"])
        if event != "pull_request_target":
            return pull_request_event(world, number, head_sha=head)
        world.github.state.pulls[number]["head"]["repo"] = {"full_name": FORK}
        git(world.bare, "update-ref", f"refs/pull/{number}/head", head)
        return pull_request_event(world, number, FORK, head_sha=head)
    if event == "workflow_run":
        run_id = add_failed_run(world, log, pull_numbers=(number,), step=failure.step)
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


def job_errors(run: ActRun, job: str) -> list[str]:
    """What act and the job's steps said went wrong in ``job``: each failed step with the last
    lines it printed, and act's own error lines."""
    records = [r for r in run.records if r.get("jobID") == job]
    said: list[str] = []
    for record in records:
        if record.get("stepResult") == "failure":
            # All the step's output: under load act may log a line after the step's result.
            printed = [line.strip() for r in records
                       if r.get("raw_output") and r.get("stepID") == record.get("stepID")
                       for line in str(r.get("msg", "")).splitlines() if line.strip()]
            # Its error lines (git's "fatal: ..."), also when more output came after them,
            # then its last lines.
            errors = [x for x in printed if "fatal" in x.lower() or "error" in x.lower()]
            shown = dict.fromkeys([*errors[-4:], *printed[-6:]])
            said += [str(record.get("msg", "")).strip(), *(f"  {x}" for x in shown)]
        elif record.get("level") in ("error", "fatal"):
            said.append(str(record.get("msg", "")).strip())
    return [line[:300] for line in dict.fromkeys(said) if line.strip()][-16:]


def report(run: ActRun, world: World, workflow: dict[str, Any]) -> list[str]:
    """Per job (and matrix leg) its result and summary, the jobs that did not run, then what
    was posted."""
    ran = legs(run)
    lines = [f"act exited with {run.returncode} in {run.duration_s:.0f} s"]
    if not ran and run.returncode != 0:
        names = _triggers(workflow)
        lines += ["act ran no job:", *(f"  {line}" for line in _act_errors(run)),
                  f"The workflow runs on: {', '.join(names) or 'nothing'} "
                  "(--event names one of them)."]
        return lines
    for job, label, records in ran:
        lines.append(f"\n== job {label}: {records.job_result(job) or 'not run'}")
        summary = records.summary(job).strip()
        result = records.job_result(job)
        lines.append(summary or "(no job summary)")
        if result not in ("success", None) and (errors := job_errors(records, job)):
            # Also under a summary: a step after the agent's (an artifact upload) may be what
            # failed, and the summary cannot say so.
            lines += [f"-- job {label} failed: act and the job's steps said:",
                      *(f"  {line}" for line in errors)]
    seen = {job for job, _, _ in ran}
    for job in workflow.get("jobs") or {}:
        if str(job) not in seen:
            lines.append(f"\n== job {job}: skipped (its `if:` was false, or a job it needs did "
                         "not succeed)")
    lines += shards_seen(run)
    posted = _posted(world)
    lines.append("\n== what the jobs posted to the GitHub API"
                 + ("" if posted else ": nothing"))
    if any("${{" in line for line in posted):
        posted.append("\nwarning: a text above holds an unexpanded `${{ ... }}`: act leaves a "
                      "skipped job's outputs as their text where GitHub gives ''; check "
                      "`needs.<job>.result == 'success'` before reading them in an `if:`.")
    return lines + posted


def shards_seen(run: ActRun) -> list[str]:
    """The shards a sharded review planned (pr-context's plan.json in an artifact), each with
    its files and diff size, and the files in none."""
    lines = []
    for path in sorted(run.artifacts.glob("*/plan.json")) if run.artifacts.is_dir() else []:
        try:
            plan = json.loads(path.read_text(encoding="utf-8"))
            shards, gaps = plan["shards"], plan["not_reviewed"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        lines.append(f"\n== the shards planned ({path.parent.name}): {len(shards)}, for "
                     f"{plan.get('changed_files')} changed file(s)")
        for shard in shards:
            files = shard["files"]
            lines.append(f"shard {shard['number']}: {len(files)} file(s), {shard['size']:,} "
                         f"bytes of diff ({', '.join(files[:3])}"
                         + (f" and {len(files) - 3} more" if len(files) > 3 else "") + ")")
        for gap in gaps:
            lines.append(f"not reviewed: {gap['path']} ({gap['size']:,} bytes): {gap['reason']}")
    return lines


def _triggers(workflow: dict[str, Any]) -> list[str]:
    """The events the workflow runs on, in the order it lists them."""
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare on as true
    return [triggers] if isinstance(triggers, str) else [str(t) for t in triggers or []]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("example", nargs="?", choices=sorted(EXAMPLES),
                        help="an example of examples/, by name")
    parser.add_argument("--workflow", metavar="PATH", help="any workflow file instead")
    parser.add_argument("--event", help="the event it runs on, e.g. pull_request, "
                        "workflow_run, issue_comment, workflow_dispatch, push (default: "
                        "pull_request if the workflow runs on it, else the first it lists)")
    parser.add_argument("--event-file", metavar="FILE",
                        help="the event's payload (JSON) instead of one made to fit the world")
    parser.add_argument("--keep", metavar="DIR", help="keep the world (repository, remote, "
                        "act logs) in DIR instead of a temporary directory")
    parser.add_argument("--answer", help="what the stand-in agent answers instead")
    parser.add_argument("--pr-files", metavar="N", type=int, default=0,
                        help="the sample's pull request adds N more files (code-review: a "
                        "review spread over the matrix, one shard per agent job)")
    yours = parser.add_argument_group("your repository (the default when started in a git "
                                      "repository other than this checkout)")
    yours.add_argument("--repo", metavar="PATH", help="your repository (default: the one the "
                       "current directory is in)")
    yours.add_argument("--sample", action="store_true",
                       help="run in the sample repository even when started in yours")
    yours.add_argument("--base", metavar="BRANCH", help="the pull request's base (default: "
                       "the default branch: origin/HEAD, else main, master, trunk or develop)")
    yours.add_argument("--head", metavar="BRANCH", help="the pull request's head (default: "
                       "the current branch)")
    yours.add_argument("--log", metavar="FILE", help="the failed CI job's log (a "
                       "workflow_run triage names the failing step it shows)")
    yours.add_argument("--cli-path", metavar="CLI", help="run this real cursor-agent with "
                       "your CURSOR_API_KEY instead of the stand-in (it reaches Cursor's "
                       "servers)")
    return parser


def _your_source(args: argparse.Namespace) -> Path | None:
    """Your repository's top directory, or None for the sample world."""
    if args.sample:
        return None
    if args.repo:
        return Path(args.repo).absolute()
    here = toplevel(Path.cwd())
    return here if here is not None and here != toplevel(ROOT) else None


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if bool(args.example) == bool(args.workflow):
        parser.error("give an example's name or --workflow PATH (not both)")
    if not shutil.which("git"):
        parser.error("git is needed (the world's repository is a real one)")
    source = Path(args.workflow) if args.workflow else ROOT / "examples" / f"{args.example}.yml"
    api_key = os.environ.get("CURSOR_API_KEY", "").strip() if args.cli_path else ""
    if args.cli_path and not os.access(args.cli_path, os.X_OK):
        parser.error(f"--cli-path {args.cli_path} is not an executable file")
    if args.cli_path and not api_key:
        parser.error("--cli-path runs the real agent: set CURSOR_API_KEY to your key")
    try:
        text = source.read_text(encoding="utf-8")
        workflow = yaml.safe_load(text)
        payload = json.loads(Path(args.event_file).read_text()) if args.event_file else None
        log = Path(args.log).read_bytes() if args.log else None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        parser.error(str(exc))
    if not isinstance(workflow, dict):
        parser.error(f"{source} is not a workflow")
    triggers = _triggers(workflow)
    event = args.event or (EXAMPLES[args.example] if args.example else
                           "pull_request" if "pull_request" in triggers else
                           (triggers or ["push"])[0])
    mine = _your_source(args)
    pull = None
    if mine is not None:
        try:
            pull = find_pull(mine, args.base, args.head)
        except WorldError as exc:
            parser.error(str(exc))
    elif args.repo or args.base or args.head or args.log:
        parser.error("--repo, --base, --head and --log are for your repository, not --sample")
    base = Path(args.keep).absolute() if args.keep else Path(tempfile.mkdtemp(prefix="try-"))
    base.mkdir(parents=True, exist_ok=True)
    if any(base.iterdir()):
        parser.error(f"{base} is not empty")
    agent = (f"the real CLI ({args.cli_path})" if args.cli_path else "the stand-in agent")
    if pull is None:
        print(f"World: the sample repository ({REPOSITORY}, a pull request {HEAD_REF} -> "
              f"main that renames a flag), {agent}.")
    else:
        print(f"World: yours ({pull.source}, {pull.repository}: a pull request {pull.head_ref} "
              f"-> {pull.base_ref}, {len(pull.files)} file(s) changed), {agent}.")
    for finding in check(text, mine):  # as `cursor-agent-action lint` says it
        print(f"warning: {source}:{finding.line}: {finding.message}")
    print(f"Running {source} on {event} under act, offline, in {base} ...")
    if pull is None:  # the sample's failed run: its test of the renamed flag
        log, failure = FAILED_LOG, Failure("Run pytest", FAILED_LOG.decode().split(" ", 1)[1])
    elif log is None:
        failure = Failure("Run the tests", "Error: no --log given (the stand-in's made-up "
                          "failure)")
        log = f"##[group]{failure.step}\n{failure.line}\n##[error]Process completed.\n".encode()
    else:
        failure = read_failure(log.decode("utf-8", "replace"))
    user_existed = user_exists(TEST_AGENT_USER)  # the box makes it for a contained run
    try:
        world_of = (build_world(base) if pull is None else
                    build_your_world(base, pull, source.name, text, api_key=api_key))
        with world_of as world:
            if pull is None:
                (world.repo / ".github" / "workflows" / source.name).write_text(
                    text, encoding="utf-8")
                answer, writes = ANSWERS[_kind(workflow, event)]
            else:
                answer, writes = answers(pull, world.repo, failure)[_kind(workflow, event)]
            if args.cli_path:
                serve_cli(world.downloads, Path(args.cli_path))
            else:
                kind = _kind(workflow, event)  # a review answers about its own shard's diff
                serve_standin_cli(world.downloads, world.base, {
                    "answer": args.answer or answer, "writes": writes,
                    "review_scope": kind == "code-review" and not args.answer,
                    "record": "record.jsonl"})
            for uses in world.unserved_actions(source.name):
                print(f"warning: {uses} is not served offline (act would fail to fetch it): "
                      "use it through a stand-in of tests/support/actions/, or from this "
                      "checkout")
            made = _payload(world, event, workflow, pull, log=log, failure=failure,
                            pr_files=args.pr_files)
            run = world.run(source.name, event, made if payload is None else payload)
            print("\n".join(report(run, world, workflow)))
    except (WorldError, CliPackageError) as exc:
        parser.error(str(exc))
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        if not user_existed and (problem := remove_user(TEST_AGENT_USER)):
            print(f"warning: the OS user {TEST_AGENT_USER} this run made is left: {problem}")
    if args.keep:
        print(f"\nThe world is kept in {base} (act's raw log: act-*/act.log)")
    ran = legs(run)
    failed = [label for job, label, records in ran
              if records.job_result(job) not in ("success", None)]
    return 1 if run.timed_out or failed or (not ran and run.returncode != 0) else 0


if __name__ == "__main__":
    sys.exit(main())
