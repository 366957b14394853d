"""``ci-context``: the failed jobs and steps of a workflow run, as a prompt-ready Markdown file.

Job logs come from ``GET /repos/{repo}/actions/jobs/{id}/logs``, which redirects to a signed
log-storage URL; httpx follows it and drops our Authorization header on the way (another
origin). The log is streamed: only a bounded tail of each failing step is kept in memory.
A step's lines are found by the step's start/end time, since every log line starts with a
timestamp. https://docs.github.com/en/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.gh.api import Context, GitHub, add_token_option, network_error, read_token
from cursor_agent_action.gh.testlog import FailureFinder
from cursor_agent_action.markdown import code_cell, fence, inline, utf8_len
from cursor_agent_action.options import add_number, add_option
from cursor_agent_action.runner_io import Runner

DEFAULT_MAX_BYTES = 60_000
_MIN_SECTION_BYTES = 2_000
_MAX_COMMAND_LINES = 30
_MAX_ERROR_LINES = 20
_FAILED = frozenset({"failure", "timed_out", "startup_failure"})
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_STAMP = re.compile(r"^\ufeff?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?Z ?")
_STAMP_FORMAT = "%Y-%m-%dT%H:%M:%S"


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--run-id", default="",
               help="workflow run to examine",
               default_help="workflow_run.id of the triggering event (GITHUB_EVENT_PATH)")
    add_option(parser, "--context-file", default="",
               help="Markdown file to write",
               default_help="$RUNNER_TEMP/cursor-agent-action/ci-context.md")
    add_number(parser, "--max-bytes", default=DEFAULT_MAX_BYTES, integer=True,
               minimum=_MIN_SECTION_BYTES, help="budget for all log excerpts together, in bytes")
    add_token_option(parser)


def clean(line: str) -> tuple[str, str]:
    """(timestamp to the second or "", text without timestamp, ANSI codes and CR)."""
    match = _STAMP.match(line)
    stamp = match.group(1) if match else ""
    text = line[match.end():] if match else line.lstrip("\ufeff")
    return stamp, _ANSI.sub("", text).rstrip("\r\n").replace("\r", "")


class Tail:
    """The last lines of a text that fit in ``budget`` bytes, plus how many were dropped."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.lines: collections.deque[str] = collections.deque()
        self.size = 0
        self.dropped = 0

    def add(self, line: str) -> None:
        size = utf8_len(line) + 1
        if size > self.budget:  # one enormous line: keep its end
            line = line.encode("utf-8")[-(self.budget - 1):].decode("utf-8", "ignore")
            size = utf8_len(line) + 1
        self.lines.append(line)
        self.size += size
        while self.size > self.budget:
            self.size -= utf8_len(self.lines.popleft()) + 1
            self.dropped += 1


@dataclass
class Section:
    """What we keep of one failing step (or of a whole job when no step window matched)."""

    title: str  # Markdown
    start: str  # "" = no window: the whole log
    end: str
    tail: Tail
    command: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # The tests or commands the runner's own output names as failed (a plain test log too).
    failing: FailureFinder = field(default_factory=FailureFinder)
    _script: list[str] | None = None  # inside the "Run" group: its lines so far

    def feed(self, text: str) -> None:
        # A run step's log opens with "##[group]Run <first line>", then the whole script,
        # then "shell: ..." and its env, then "##[endgroup]". The script replaces the header's
        # first line only once that end is seen: a group that never closes (a cancelled step)
        # is followed by the step's output, which must not pass for its command.
        if text.startswith("##[group]Run ") and not self.command:
            self.command.append(text[len("##[group]Run "):])
            self._script = []
        elif self._script is not None:
            if text.startswith(("##[endgroup]", "shell: ")):
                self.command = self._script or self.command
                self._script = None
            elif text.startswith("##["):
                self._script = None
            elif len(self._script) < _MAX_COMMAND_LINES:
                self._script.append(text)
        if text.startswith("##[error]") and len(self.errors) < _MAX_ERROR_LINES:
            self.errors.append(text[len("##[error]"):])
        self.failing.feed(text)
        self.tail.add(text)


def scan(lines: Iterable[str], sections: list[Section], whole: Section) -> None:
    """Route each cleaned log line to the sections whose time window holds it."""
    stamp = ""
    for raw in lines:
        line_stamp, text = clean(raw)
        stamp = line_stamp or stamp
        whole.feed(text)
        for section in sections:
            if stamp and section.start <= stamp <= section.end:
                section.feed(text)


def _utc(value: datetime | None) -> str:
    if value is None:
        return ""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime(_STAMP_FORMAT)


@dataclass
class JobReport:
    id: int
    name: str
    conclusion: str
    url: str
    failed_steps: list[str]
    sections: list[Section]
    log_problem: str = ""

    def failing_tests(self) -> list[str]:
        """The tests (or commands) the kept sections' runner output names as failed."""
        names = (f.name for s in self.sections for f in s.failing.failures)
        return list(dict.fromkeys(names))


def command(args: argparse.Namespace, runner: Runner) -> int:
    ctx = Context.from_env()
    run_id = _run_id(args.run_id, ctx)
    max_bytes: int = args.max_bytes
    output = Path(args.context_file or Path(os.environ.get("RUNNER_TEMP") or ".")
                  / "cursor-agent-action" / "ci-context.md")
    token = read_token(args.token_env, ctx, runner)
    gh = GitHub(ctx, token, log=runner.log)
    run = gh.repo.get_workflow_run(run_id)
    info = gh.call(f"reading workflow run {run_id}", lambda: run.raw_data,
                   permission="actions: read")
    jobs = gh.call(f"listing the jobs of run {run_id}",
                   lambda: [job for job in run.jobs("latest") if job.conclusion in _FAILED],
                   permission="actions: read")
    pr_number = _pr_number(gh, info)
    # The budget is shared evenly by the sections: each failed step, or the job's end.
    sections = sum(max(1, sum(s.conclusion in _FAILED for s in job.steps)) for job in jobs)
    budget = max(_MIN_SECTION_BYTES, max_bytes // max(1, sections))
    reports = []
    with gh.http() as http:
        for job in jobs:
            reports.append(_job_report(gh, http, job, budget, runner))
    # The file becomes the agent's prompt: a log may echo this job's own token or another secret.
    # Each text is redacted before it is escaped or fenced; the Markdown only goes through the
    # one-for-one net, which cannot move a fence.
    markdown = runner.redact.net(render(info, reports, pr_number, redact=runner.redact))
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(markdown, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write the context file {output}: {exc.strerror}.",
                         "Set context-file to a writable path, e.g. under $RUNNER_TEMP.") from exc
    failed = [{"id": r.id, "name": r.name, "conclusion": r.conclusion, "url": r.url,
               "failed_steps": r.failed_steps, "failing_tests": r.failing_tests()}
              for r in reports]
    runner.set_outputs({
        "context-file": str(output), "failed-jobs": json.dumps(failed),
        "head-sha": str(info.get("head_sha") or ""),
        "pr-number": str(pr_number) if pr_number else "",
    })
    runner.log(f"ci-context: {len(reports)} failed job(s) of run {run_id}; wrote {output} "
               f"({len(markdown.encode('utf-8'))} bytes)")
    if reports and all(r.log_problem for r in reports):
        raise GitHubError(
            f"no log of the failed jobs of run {run_id} could be downloaded "
            f"({reports[0].log_problem}); {output} lists the jobs and steps only.",
            "Logs expire after the repository's retention period (default 90 days): re-run "
            "the failed jobs to get fresh logs. A 404 can also mean the token lacks "
            "`permissions: actions: read`.",
        )
    return 0


def _job_report(gh: GitHub, http: httpx.Client, job: Any, budget: int,
                runner: Runner) -> JobReport:
    failed_steps = [s for s in job.steps if s.conclusion in _FAILED]
    sections = [Section(f"Step {s.number}: {code_cell(runner.redact(s.name), in_table=False)} "
                        f"({inline(s.conclusion)})", _utc(s.started_at),
                        _utc(s.completed_at) or "9999", Tail(budget)) for s in failed_steps]
    whole = Section(f"End of the job log ({inline(job.conclusion)})", "", "", Tail(budget))
    report = JobReport(job.id, job.name, job.conclusion, job.html_url,
                       [s.name for s in failed_steps], sections)
    url = f"{gh.ctx.api_url}/repos/{gh.ctx.repository}/actions/jobs/{job.id}/logs"
    try:
        scan(_log_lines(gh, http, url, f"downloading the log of job {job.name!r}"),
             sections, whole)
    except LogUnavailable as exc:
        report.log_problem = str(exc)
        runner.warning(f"log of job {job.name!r} unavailable: {exc}", title="ci-context")
        return report
    # Steps whose window caught nothing (no timestamps, or a job-level failure): the job's end.
    report.sections = [s for s in sections if s.tail.lines] or [whole]
    return report


class LogUnavailable(Exception):
    pass


def _log_lines(gh: GitHub, http: httpx.Client, url: str, doing: str) -> Iterator[str]:
    response = gh.fetch(http, doing, url, permission="actions: read", passes=(404, 410),
                        stream=True)
    if response.status_code in (404, 410):
        response.close()
        if response.status_code == 410:
            raise LogUnavailable("GitHub answered 410 Gone: the log has expired")
        raise LogUnavailable("GitHub answered 404: the log has expired or was deleted, or the "
                             "token lacks actions: read")
    try:
        yield from response.iter_lines()
    except httpx.HTTPError as exc:
        raise network_error(doing, url, exc) from None
    finally:
        response.close()


def _run_id(raw: str, ctx: Context) -> int:
    value = raw.strip()
    if not value:
        run = ctx.event.get("workflow_run")
        if isinstance(run, dict) and isinstance(run.get("id"), int):
            return int(run["id"])
        raise UsageError(
            f"no workflow run to examine: run-id is empty and the {ctx.event_name or 'current'} "
            "event has no workflow_run.",
            "Trigger the workflow with `on: workflow_run` or pass run-id.",
        )
    if not value.isdigit() or int(value) <= 0:
        raise UsageError(f"run-id must be a workflow run id (digits), got {raw!r}.",
                         "Pass e.g. ${{ github.event.workflow_run.id }}.")
    return int(value)


def _pr_number(gh: GitHub, run: dict[str, Any]) -> int | None:
    """The run's pull request. GitHub leaves ``pull_requests`` empty for runs from forks, so
    then look for an open pull request from the run's head branch."""
    for pull in run.get("pull_requests") or []:
        if isinstance(pull, dict) and isinstance(pull.get("number"), int):
            return int(pull["number"])
    head_repo = (run.get("head_repository") or {}).get("full_name") or gh.ctx.repository
    branch = run.get("head_branch")
    if not branch:
        return None
    head = f"{str(head_repo).split('/')[0]}:{branch}"
    sha = run.get("head_sha")
    pulls = gh.call("looking up the run's pull request",
                    lambda: list(gh.repo.get_pulls(state="open", head=head)),
                    permission="pull-requests: read")
    matching = [p for p in pulls if p.head.sha == sha] or pulls
    return matching[0].number if matching else None


def render(run: dict[str, Any], reports: list[JobReport], pr_number: int | None, *,
           redact: Callable[[str], str] = str) -> str:
    """The context file. Names (workflow, branch, job, step) may hold anything, even newlines
    and backticks: they go into code spans or escaped prose, never raw into a heading; each
    text is put through ``redact`` first, as text."""
    sha = str(run.get("head_sha") or "")
    branch = redact(str(run.get("head_branch") or ""))
    where = f" on {code_cell(branch, in_table=False)}" if branch else ""
    pr = f" (pull request #{pr_number})" if pr_number else ""
    out = [
        "# CI failure context\n",
        f"Workflow **{inline(redact(str(run.get('name', '?'))))}**, "
        f"[run {run.get('id')}]({run.get('html_url', '')}){where} at "
        f"{code_cell(sha[:12], in_table=False)}{pr}: "
        f"{inline(str(run.get('conclusion') or run.get('status')))}.\n",
    ]
    if not reports:
        out.append("No job of this run failed.\n")
    for report in reports:
        out.append(f"## Job {code_cell(redact(report.name), in_table=False)}: "
                   f"{inline(report.conclusion)}\n")
        steps = ", ".join(code_cell(redact(s), in_table=False) for s in report.failed_steps)
        out.append(f"[Job log]({report.url})" + (f". Failed steps: {steps}.\n" if steps
                                                 else "\n"))
        if report.log_problem:
            out.append(f"The log is not available: {report.log_problem}.\n")
            continue
        for section in report.sections:
            out.append(f"### {section.title}\n")
            if section.command:
                out.append("Command:\n\n" + fence(redact("\n".join(section.command)), "sh"))
            if section.errors:
                out.append("Errors:\n\n" + fence(redact("\n".join(section.errors)), "text"))
            if failing := section.failing.failures:
                more = (f"\n- and {section.failing.more} more\n" if section.failing.more
                        else "\n")
                out.append("Failed, as the test runner's output names them:\n\n" + "\n".join(
                    f"- {code_cell(redact(f.name), in_table=False)} ({inline(f.runner)})"
                    for f in failing) + more)
            tail = section.tail
            kept = f"last {len(tail.lines)} lines" if tail.dropped else "all lines"
            out.append(f"Log ({kept}):\n\n" + fence(redact("\n".join(tail.lines)), "text"))
    return "\n".join(out)
