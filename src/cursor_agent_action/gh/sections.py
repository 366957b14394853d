"""One comment from the answers of agent jobs fanned out over the matrix, one section each.

``ci-context`` with ``max-jobs`` writes ``jobs.json`` (the failed jobs, numbered, and the ones
over the bound); each triage job of the matrix leaves its transcript in a folder whose name
ends in ``job-N`` (``download-artifact`` with a ``pattern`` puts each artifact in a folder of
its name). The comment then has one section per failed job: its name (ours, escaped) and link,
and the compact summary of that job's run (agent text fenced, inert). A job whose folder is
missing, is a link, is claimed twice or holds no readable transcript gets a section saying it
has no answer; a job over ``max-jobs`` is listed as not triaged. Nothing is dropped without a
line saying so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action.errors import ActionError, UsageError
from cursor_agent_action.gh.bodies import compose_body
from cursor_agent_action.markdown import code_cell, inline
from cursor_agent_action.options import read_input_file
from cursor_agent_action.redact import Redactor

TRANSCRIPT = "transcript.jsonl"
_FOLDER = re.compile(r"(?:^|[-_.])job-([1-9][0-9]{0,2})$")


@dataclass(frozen=True)
class Job:
    number: int
    name: str
    conclusion: str
    url: str


def _jobs(jobs_file: str) -> tuple[list[Job], list[Job]]:
    text = read_input_file(jobs_file, "jobs-file", "JSON")
    try:
        data = json.loads(text)
        jobs = [Job(int(j["job"]), str(j["name"]), str(j["conclusion"]), str(j["url"]))
                for j in data["jobs"]]
        left = [Job(0, str(j["name"]), str(j["conclusion"]), str(j["url"]))
                for j in data["not_triaged"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"jobs-file {jobs_file} is not ci-context's jobs.json ({exc}).",
                         "Pass ci-context's jobs-file output, downloaded in this job.") from None
    if [j.number for j in jobs] != list(range(1, len(jobs) + 1)):
        raise UsageError(f"jobs-file {jobs_file} does not number its jobs 1, 2, ...",
                         "Pass ci-context's jobs-file output unchanged.")
    return jobs, left


def _folders(directory: str, count: int) -> dict[int, list[Path]]:
    root = Path(directory)
    found: dict[int, list[Path]] = {}
    if not root.is_dir():
        return found
    for path in sorted(root.iterdir()):
        match = _FOLDER.search(path.name)
        if match and path.is_dir() and not path.is_symlink() and int(match.group(1)) <= count:
            found.setdefault(int(match.group(1)), []).append(path)
    return found


def compose(jobs_file: str, transcripts_dir: str, *, max_chars: int,
            links: Mapping[str, str], redact: Redactor) -> tuple[str, list[int]]:
    """(the comment's Markdown, the jobs without an answer)."""
    jobs, left = _jobs(jobs_file)
    folders = _folders(transcripts_dir, len(jobs))
    share = max(2000, (max_chars - 3000) // max(1, len(jobs)))
    out = [f"### CI triage: {len(jobs)} failed job(s), one agent each"]
    missing = []
    for job in jobs:
        head = (f"#### Job {job.number}: {code_cell(redact(job.name), 200, in_table=False)} "
                f"({inline(job.conclusion, 40)})" + (f" · [log]({job.url})"
                                                      if job.url.startswith("https://") else ""))
        places = folders.get(job.number, [])
        text = ""
        if len(places) == 1 and (places[0] / TRANSCRIPT).is_file() \
                and not (places[0] / TRANSCRIPT).is_symlink():
            try:
                text = compose_body(transcript=str(places[0] / TRANSCRIPT), final_message="",
                                    body="", body_file="", links={}, max_chars=share,
                                    redact=redact)
            except ActionError:
                text = ""
        if not text:
            missing.append(job.number)
            why = ("two folders claim it: neither is taken" if len(places) > 1 else
                   "its triage job failed, timed out, was cancelled or left no transcript")
            text = f"*No answer: {why}.*"
        out += [head, text.strip()]
    if left:
        out.append(f"#### Not triaged ({len(left)} more failed job(s), over max-jobs)")
        out += [f"- {code_cell(redact(j.name), 200, in_table=False)} ({inline(j.conclusion, 40)})"
                + (f" · [log]({j.url})" if j.url.startswith("https://") else "") for j in left]
    out += [f"[{name}]({url})" for name, url in links.items() if url]
    return redact.net("\n\n".join(out)), missing
