"""``cursor-agent-action demo``: the whole ``run`` pipeline on a bundled sample, offline.

A bundled stand-in CLI replays a bundled, realistic transcript (a docs update with a denied
``git`` call) in a temporary git workspace, with the real policy file, process control, live
log, git cross-check, job summary and step outputs. The summary, outputs, transcript and the
agent's diff are written to ``./cursor-agent-action-demo/`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from importlib import resources
from pathlib import Path

from cursor_agent_action.agent.contain.cancel import stop_on_signals
from cursor_agent_action.agent.guards.permissions import build_policy
from cursor_agent_action.agent.launch.run_options import RunOptions
from cursor_agent_action.agent.run import execute
from cursor_agent_action.gh.publish.gitops import git
from cursor_agent_action.runner_io import Runner, readable_outputs
from cursor_agent_action.standin import write_wrapper
from cursor_agent_action.stream.record import Conclusion

DEFAULT_OUT = "cursor-agent-action-demo"
PROMPT = (
    "Update the documentation so that it matches hello.py: document every command line option "
    "in docs/usage.md, fix typos, and keep the README's usage line accurate. Only edit Markdown "
    "files."
)
NO_BOX = (
    "No box (isolation: none): the demo replays a recorded session, so nothing untrusted runs, "
    "and it creates no OS user on your machine. A real run (isolation: auto) contains the agent "
    "where the runner allows it (docs/security.md, 'What holds on each runner')."
)
_GIT_IDENTITY = ["-c", "user.name=demo", "-c", "user.email=demo@example.com",
                 "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default=DEFAULT_OUT,
                        help=f"directory for the summary, outputs, transcript and diff "
                        f"(default: ./{DEFAULT_OUT}); --summary-file/--output-file move "
                        "those two elsewhere")


def _git(workspace: Path, *args: str) -> str:
    done = git([*_GIT_IDENTITY, *args], workspace, doing=f"git {args[0]} in the demo workspace")
    return done.stdout


def command(args: argparse.Namespace, runner: Runner) -> int:
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    summary, outputs = out / "summary.md", out / "outputs.txt"
    diff, state = out / "changes.diff", out / "state"
    # A rerun replaces its own files; files named with --summary-file/--output-file are
    # appended to, as in every command.
    for stale in (summary, outputs, readable_outputs(outputs), diff):
        stale.unlink(missing_ok=True)
    shutil.rmtree(state, ignore_errors=True)
    summary = Path(args.summary_file).absolute() if args.summary_file else summary
    outputs = Path(args.output_file).absolute() if args.output_file else outputs
    # Never the step's own GITHUB_OUTPUT / GITHUB_STEP_SUMMARY: the demo keeps its files.
    runner.output_path, runner.summary_path = outputs, summary
    data = resources.files("cursor_agent_action") / "data"
    with tempfile.TemporaryDirectory(prefix="cursor-agent-action-demo-") as tmp:
        root = Path(tmp)
        workspace = root / "hello-cli"
        with resources.as_file(data / "demo-workspace") as seed:
            # pip byte-compiles hello.py when it installs the wheel: leave that out.
            shutil.copytree(seed, workspace, ignore=shutil.ignore_patterns("__pycache__"))
        _git(workspace, "init", "-q")
        _git(workspace, "add", "-A")
        _git(workspace, "commit", "-qm", "hello-cli")
        with resources.as_file(data / "demo-transcript.jsonl") as transcript:
            scenario = root / "scenario.json"
            scenario.write_text(json.dumps({"transcript": str(transcript), "drip_ms": 40,
                                            "apply_tool_writes": True}))
            options = RunOptions(
                prompt=PROMPT,
                agent_bin=write_wrapper(root / "cursor-agent", scenario),
                workspace=workspace,
                state_dir=state,
                transcript=out / "transcript.jsonl",
                policy=build_policy("docs"),
                timeout_minutes=5,
                max_retries=0,
                isolation="none",  # NO_BOX says why
            )
            # The stand-in needs no key; a placeholder keeps the "no API key" warning away.
            environ = {**os.environ, "CURSOR_API_KEY": "demo-placeholder-not-a-key"}
            runner.log("Replaying a recorded cursor-agent session (no account, no network): "
                       "the durations below are the recording's, not this replay's.")
            runner.log(NO_BOX)
            started = time.monotonic()
            with stop_on_signals() as stop:
                run = execute(options, runner, environ, stop)
            took = time.monotonic() - started
        _git(workspace, "add", "-A")
        diff.write_text(_git(workspace, "diff", "--cached"), encoding="utf-8")
    runner.log("")
    duration_ms = run.stream.duration_ms
    recorded = f" (recorded: {duration_ms / 1000:.1f} s)" if duration_ms else ""
    with summary.open("a", encoding="utf-8") as handle:
        handle.write(f"\n### About this demo\n\n- {NO_BOX}\n- The durations above are the "
                     f"recording's{recorded.replace(' (recorded:', ':').rstrip(')')}; this "
                     f"replay took {took:.1f} s.\n")
    runner.log(f"Demo finished: conclusion {run.conclusion}; the replay took {took:.1f} s"
               f"{recorded}. Files written:")
    readable = [(readable_outputs(outputs), "the same, one name=value a line")]
    for path, what in ((summary, "the job summary, Markdown"),
                       (outputs, "step outputs, in the runner's format"),
                       *(readable if runner.lists_outputs else []),
                       (out / "transcript.jsonl", "the agent's raw stream-json output"),
                       (diff, "the agent's changes")):
        runner.log(f"  {path}  ({what})")
    return 0 if run.conclusion is Conclusion.SUCCESS else 1
