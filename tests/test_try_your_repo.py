"""scripts/try_example.py in a user's own repository (docs/local-testing.md, "Your own
repository"): a small real repository with a feature branch, built here; the documented
command runs as written in it, and the stand-in answers about that repository's diff."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cursor_agent_action.standin import copy_package
from tests.support.act import ROOT, ActRun
from tests.support.standin import SYSTEM_PYTHON
from tests.support.users import TEST_AGENT_USER, user_exists

pytestmark = pytest.mark.act

APP_BEFORE = "def greet(name):\n    return 'hello ' + name\n"
APP_AFTER = "def greet(name, punctuation='!'):\n    return 'hello ' + name + punctuation\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=Dev", "-c",
                           "user.email=dev@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _project(tmp_path: Path, workflow: str = "code-review.yml", text: str = "") -> Path:
    """A user's repository: main with a README, a guide and app.py, the example workflow
    committed; a feature branch (checked out) that changes app.py and adds a line to it."""
    repo = tmp_path / "greeter"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "README.md").write_text("# greeter\n\nSays hello.\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").write_text("# Guide\n")
    (repo / "greeter").mkdir()
    (repo / "greeter" / "app.py").write_text(APP_BEFORE)
    (repo / ".github" / "workflows" / workflow).write_text(
        text or (ROOT / "examples" / workflow).read_text())
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "greeter")
    _git(repo, "checkout", "-qb", "feature/punctuation")
    (repo / "greeter" / "app.py").write_text(APP_AFTER)
    _git(repo, "commit", "-qam", "Punctuation")
    return repo


def _documented() -> str:
    page = (ROOT / "docs" / "local-testing.md").read_text()
    section = page.split("## Your own repository")[1].split("\n## ")[0]
    [line] = [x for x in re.findall(r"```sh\n(.*?)```", section, re.S)[0].splitlines()
              if "$CAA/scripts/try_example.py" in x]
    return str(line)


def _try(repo: Path, *args: str, command: str = "",
         env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CAA": str(ROOT), **(env_extra or {})}
    env.pop("CURSOR_API_KEY", None)
    if command:
        argv = ["bash", "-c", command + "".join(f" '{a}'" for a in args)]
        if not (ROOT / ".venv" / "bin" / "python").exists():  # this suite's own interpreter
            argv = ["bash", "-c", command.replace('"$CAA/.venv/bin/python"', sys.executable)
                    + "".join(f" '{a}'" for a in args)]
    else:
        argv = [sys.executable, str(ROOT / "scripts" / "try_example.py"), *args]
    return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True,
                          timeout=400, check=False)


def _try_example_module() -> Any:
    """scripts/try_example.py as a module (its report functions, without running it)."""
    script = ROOT / "scripts" / "try_example.py"
    spec = importlib.util.spec_from_file_location("try_example", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_command_reviews_your_own_changed_lines(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    head_before = _git(repo, "rev-parse", "HEAD")
    done = _try(repo, command=_documented())
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-2000:]
    assert out.splitlines()[0].startswith(f"World: yours ({repo}, you/greeter: a pull request "
                                          "feature/punctuation -> main, 1 file(s) changed)")
    assert "== job review: success" in out
    posted = out.split("== what the jobs posted to the GitHub API")[1]
    assert "-- POST /repos/you/greeter/pulls/1/reviews" in posted
    # The findings sit on lines the pull request adds to the user's file (1 and 2 of app.py).
    comment = posted.split("-- its 1 line comment(s):\n")[1]
    assert comment.startswith("[greeter/app.py:1] ")
    assert "added line (`def greet(name, punctuation='!'):`)" in comment
    assert "octo-org" not in out
    assert "RETRIES" not in out
    assert _git(repo, "rev-parse", "HEAD") == head_before  # the user's repository untouched
    assert _git(repo, "status", "--porcelain") == ""


def test_a_docs_update_edits_your_markdown_and_a_triage_names_your_failing_step(
    tmp_path: Path
) -> None:
    repo = _project(tmp_path, "docs-update.yml")
    done = _try(repo, "--workflow", ".github/workflows/docs-update.yml")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Updated README.md: it now lists the 1 file(s) feature/punctuation changes" in (
        done.stdout)
    assert "| `README.md` |" in done.stdout  # the summary's files changed
    log = tmp_path / "job.log"
    log.write_text("2026-11-28T01:00:00.0000000Z ##[group]Run make check\n"
                   "2026-11-28T01:00:01.0000000Z greeter/app.py:2: error: too many arguments\n"
                   "2026-11-28T01:00:01.5000000Z ##[error]Process completed with exit code 2.\n")
    triage = (ROOT / "examples" / "ci-triage.yml")
    done = _try(repo, "--workflow", str(triage), "--log", str(log), "--keep",
                str(tmp_path / "kept"))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "the step `Run make check` failed with `greeter/app.py:2: error: too many" in (
        done.stdout)
    assert '"failing-step": "Run make check"' in done.stdout or "Run make check" in (
        done.stdout.split("== what the jobs posted to the GitHub API")[1])


def test_a_misspelled_input_is_named_with_the_right_one(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "docs-update.yml").read_text().replace(
        "permissions: docs", "permision: docs")
    assert "permision: docs" in text
    repo = _project(tmp_path, "docs-update.yml", text)
    done = _try(repo, "--workflow", ".github/workflows/docs-update.yml")
    line = next(n for n, x in enumerate(text.splitlines(), 1) if "permision:" in x)
    assert (f"warning: .github/workflows/docs-update.yml:{line}: `permision` is not an input of "
            "cursor-agent-action/cursor-agent-action: did you mean `permissions`?") in done.stdout


def test_a_failed_job_prints_what_act_said(tmp_path: Path) -> None:
    """Your own payload naming a commit the repository does not have: the job fails, and the
    output carries git's own words, not only "(no job summary)"."""
    # docs-update's first job checks the commit out (code-review's first sets its status).
    repo = _project(tmp_path, "docs-update.yml")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 1, "pull_request": {
        "number": 1, "draft": False,
        "head": {"ref": "x", "sha": "e" * 40, "repo": {"full_name": "you/greeter"}},
        "base": {"ref": "main", "sha": "f" * 40, "repo": {"full_name": "you/greeter"}}}}))
    done = _try(repo, "--workflow", ".github/workflows/docs-update.yml", "--event-file",
                str(event))
    assert done.returncode == 1, done.stdout[-3000:]
    assert "== job agent: failure" in done.stdout
    assert "act and the job's steps said:" in done.stdout
    # Before, act's own words were only in act.log (under --keep); the jobs' order varies.
    assert "fatal: reference is not a tree: " + "e" * 40 in done.stdout


def test_your_repository_errors_are_one_line_each(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    _git(repo, "checkout", "-q", "main")
    same = _try(repo, "--workflow", ".github/workflows/code-review.yml")
    assert same.returncode == 2
    assert "'main' and 'main' are the same commit: there is no pull request to try." in (
        same.stderr)
    missing = _try(repo, "--workflow", ".github/workflows/code-review.yml", "--head", "nope")
    assert "head 'nope' is not a branch, tag or commit of" in missing.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = _try(plain, "--workflow", str(ROOT / "examples" / "code-review.yml"), "--repo",
                   str(plain))
    assert "is not in a git repository: run this in your repository" in outside.stderr
    key = _try(repo, "--workflow", ".github/workflows/code-review.yml", "--cli-path",
               sys.executable, "--head", "feature/punctuation")
    assert "--cli-path runs the real agent: set CURSOR_API_KEY to your key" in key.stderr


def test_cli_path_runs_that_cli_with_your_key(tmp_path: Path) -> None:
    """--cli-path: the CLI installed from its own directory (a launcher and what it runs, as
    the vendor's package is), given the user's CURSOR_API_KEY, instead of the stand-in. Here
    that CLI is a self-contained copy of the stand-in answering something of its own."""
    repo = _project(tmp_path)
    cli = tmp_path / "my-cli" / "versions" / "1"
    copy_package(cli / "pkg")
    (cli / "scenario.json").write_text(json.dumps({"answer": "Answered by the CLI you gave."}))
    launcher = cli / "cursor-agent"
    loader = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
              "from cursor_agent_action.standin import main; sys.exit(main())")
    launcher.write_text(f'#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")\n'
                        f'exec {SYSTEM_PYTHON} -I -B -c "{loader}" "$here/pkg" '
                        '--scenario "$here/scenario.json" "$@"\n')
    launcher.chmod(0o755)
    for path in [cli, *cli.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o755 if path.is_dir() else path.stat().st_mode | 0o644)
    link = tmp_path / "bin" / "cursor-agent"
    link.parent.mkdir()
    link.symlink_to(launcher)  # as ~/.local/bin/cursor-agent is
    env = {**os.environ, "CURSOR_API_KEY": "crsr-yours-0123456789"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "try_example.py"), "--workflow",
         str(ROOT / "examples" / "docs-update.yml"), "--cli-path", str(link)],
        cwd=repo, env=env, capture_output=True, text=True, timeout=400, check=False)
    assert done.stdout.splitlines()[0].endswith(f"the real CLI ({link}).")
    assert "Answered by the CLI you gave." in done.stdout, done.stdout[-3000:]
    assert "crsr-yours-0123456789" not in done.stdout


def test_a_base_that_is_only_origins_branch_is_found(tmp_path: Path) -> None:
    """The usual clone: main only as origin/main (origin/HEAD), which has moved on since the
    feature branch left it; no local main."""
    upstream = _project(tmp_path)
    _git(upstream, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    _git(clone, "checkout", "-qb", "feature/docs")
    (clone / "README.md").write_text("# greeter\n\nSays hello, politely.\n")
    _git(clone, "commit", "-qam", "Politely")
    _git(clone, "branch", "-D", "main")
    (upstream / "greeter" / "later.py").write_text("LATER = 1\n")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "later")
    _git(clone, "fetch", "-q")
    done = _try(clone, "--workflow", str(ROOT / "examples" / "code-review.yml"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "a pull request feature/docs -> main, 1 file(s) changed" in done.stdout
    assert "[README.md:3] " in done.stdout


def test_a_failed_steps_error_line_is_shown_whatever_act_logged_after_it(
    tmp_path: Path,
) -> None:
    """Under load act may log a step's output after the step's result, and more lines may
    follow git's "fatal:" line: the failed step's error line is still in what is shown."""
    try_example = _try_example_module()
    step = {"jobID": "agent", "stepID": ["1"]}
    records: list[dict[str, Any]] = [
        {**step, "raw_output": True, "msg": "Copying the repository"},
        {**step, "stepResult": "failure", "msg": "Failure - Main checkout"},
        {**step, "raw_output": True, "msg": "fatal: reference is not a tree: " + "e" * 40},
        *({**step, "raw_output": True, "msg": f"hint: line {n}"} for n in range(8)),
    ]
    run = ActRun(1, False, 1.0, "", tmp_path, records)
    shown = try_example.job_errors(run, "agent")
    assert "  fatal: reference is not a tree: " + "e" * 40 in shown
    assert shown[0] == "Failure - Main checkout"


PYTEST_LOG = """============================= test session starts ==============================
collected 2 items

tests/test_app.py F.                                                     [100%]

=================================== FAILURES ===================================
>       assert greet("x") == "hello x"
E       AssertionError: assert 'hello x!' == 'hello x'

tests/test_app.py:4: AssertionError
=========================== short test summary info ============================
FAILED tests/test_app.py::test_greet - AssertionError: assert 'hello x!' == 'hello x'
========================= 1 failed, 1 passed in 0.02s ==========================
"""


def test_ci_triage_runs_offline_on_a_repository_without_workflows(tmp_path: Path) -> None:
    """The newcomer's finding: ci-triage on a repository with no workflow of its own failed
    to fetch actions/upload-artifact (the action's own step uses it) and said nothing of why;
    a plain pytest log gave `failing-step: "(the log names no step)"`. Now every action is
    served offline, the test is named, and the OS user the run made is gone afterwards."""
    repo = _project(tmp_path)
    _git(repo, "rm", "-rq", ".github")
    _git(repo, "commit", "-qm", "no workflows")
    log = tmp_path / "pytest-fail.log"
    log.write_text(PYTEST_LOG)
    user = f"{TEST_AGENT_USER[:24]}-try"
    assert not user_exists(user)
    done = _try(repo, "--workflow", str(ROOT / "examples" / "ci-triage.yml"), "--log", str(log),
                env_extra={"CAA_TEST_AGENT_USER": user, "PYTEST_XDIST_WORKER": ""})
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-2000:]
    assert "failed to fetch" not in out
    assert "is not served offline" not in out
    assert "== job triage (job: 1): success" in out  # one leg of the fan-out per failed job
    assert "== job report: success" in out
    assert '"failing-step": "pytest: tests/test_app.py::test_greet"' in out
    posted = out.split("== what the jobs posted to the GitHub API")[1]
    assert "pytest: tests/test_app.py::test_greet" in posted
    assert not user_exists(user), "try_example left the OS user its run made"


def test_a_failed_job_with_a_summary_still_prints_what_act_said(tmp_path: Path) -> None:
    """The agent's step wrote its summary (success), then a later step failed (act could not
    fetch an action): the failing step's own error line is printed under the summary."""
    try_example = _try_example_module()
    job = {"jobID": "triage", "matrix": {}}
    fetch = ('failed to fetch "https://github.com/actions/upload-artifact" version "ea16": '
             "dial tcp: lookup github.com: no such host")
    records: list[dict[str, Any]] = [
        {**job, "stepID": ["agent"], "command": "summary",
         "content": "## ✅ Cursor agent: success\n"},
        {**job, "stepID": ["agent"], "level": "error", "msg": fetch},
        {**job, "stepID": ["agent"], "stepResult": "failure", "msg": "Failure - Main Triage"},
        {**job, "jobResult": "failure", "msg": "Job failed"},
    ]
    run = ActRun(1, False, 1.0, "", tmp_path, records)

    world = SimpleNamespace(github=SimpleNamespace(requests=[]))  # what report() reads
    lines = try_example.report(run, world, {"jobs": {"triage": {}}})
    text = "\n".join(lines)
    assert "== job triage: failure" in text
    assert "Cursor agent: success" in text
    assert "-- job triage failed: act and the job's steps said:" in text
    assert fetch[:120] in text


@pytest.mark.parametrize("example", ["docs-update", "code-review", "comment-command", "ci-fix",
                                     "monorepo-matrix"])
def test_each_example_runs_offline_on_a_repository_without_workflows(
    tmp_path: Path, example: str
) -> None:
    """A fresh clone runs every example on a repository with no workflow of its own, offline
    (ci-triage: the test above): no job fails, nothing is fetched, no raw expression is
    posted. The monorepo example on a repository without packages/ reviews nothing."""
    repo = _project(tmp_path)
    _git(repo, "rm", "-rq", ".github")
    _git(repo, "commit", "-qm", "no workflows")
    done = _try(repo, example)
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-2000:]
    assert "failed to fetch" not in out
    assert "is not served offline" not in out
    assert "unexpanded" not in out
    posted = out.split("== what the jobs posted to the GitHub API")[1]
    assert "${{" not in posted
    if example == "monorepo-matrix":
        assert "No packages/ directory in this repository: no package to review." in out


def test_a_posted_text_with_an_unexpanded_expression_is_flagged(tmp_path: Path) -> None:
    """Your own workflow that reads a skipped job's output as `!= ''`: under act the raw
    expression reaches the comment, and the script says why instead of showing it as what
    GitHub would post."""
    try_example = _try_example_module()
    request = SimpleNamespace(method="POST", path="/repos/you/x/issues/1/comments",
                              body={"body": "fix: ${{ steps.publish.outputs.pr-url }}"})
    world = SimpleNamespace(github=SimpleNamespace(requests=[request]))
    run = ActRun(0, False, 1.0, "", tmp_path, [])
    text = "\n".join(try_example.report(run, world, {"jobs": {}}))
    assert "warning: a text above holds an unexpanded `${{ ... }}`" in text
    assert "needs.<job>.result == 'success'" in text
