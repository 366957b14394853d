"""The run's one report to the runner: result file, step outputs, job summary, annotation.

Everything here renders a finished :class:`~.record.RunReport`; nothing reads the stream or
changes the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import orjson

from cursor_agent_action.errors import SetupError
from cursor_agent_action.markdown import cut_utf8, utf8_len
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.record import CallGroups, Conclusion, LeftOut, RunReport
from cursor_agent_action.stream.render import wallsection
from cursor_agent_action.stream.render.summary import render_summary

WRITE_PIECE_CHARS = 1024 * 1024
FILES_OUTPUT_LIMIT = 256 * 1024
"""Bytes of ``files-changed`` JSON; with ``result`` and ``final-message`` (64 KiB each) the
outputs stay well under GitHub's 1 MiB per job."""
RESULT_OUTPUT_LIMIT = 64 * 1024
"""Bytes of ``result``/``final-message`` kept in the step outputs (GitHub allows 1 MB per job:
https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/passing-information-between-jobs)."""


def cap_text(text: str, limit: int = RESULT_OUTPUT_LIMIT, *, where: str = "result-file") -> str:
    """``text`` cut to ``limit`` UTF-8 bytes with a visible marker saying where the rest is."""
    total = utf8_len(text)
    if total <= limit:
        return text
    marker = (
        f"\n\n[… truncated by cursor-agent-action: {total:,} bytes in total, the first "
        f"{{kept:,}} shown; the whole text is in the file named by the {where} output]"
    )
    head = cut_utf8(text, limit - utf8_len(marker.format(kept=limit)))
    return head + marker.format(kept=utf8_len(head))


def _int_output(value: int | None) -> str:
    return "" if value is None else str(value)


def _write_result_file(text: str, result_dir: Path) -> Path:
    result_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="result-", suffix=".md", dir=result_dir)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
        for start in range(0, len(text), WRITE_PIECE_CHARS):  # never the whole text encoded
            handle.write(text[start : start + WRITE_PIECE_CHARS])
    return Path(name)


def files_output(paths: list[str], limit: int = FILES_OUTPUT_LIMIT) -> tuple[str, bool]:
    """``files-changed`` as JSON within ``limit`` bytes (whole entries), and whether it was
    cut; the full list is in ``files-changed-file``."""
    whole = orjson.dumps(paths)
    if len(whole) <= limit:
        return whole.decode(), False
    kept: list[str] = []
    size = 2
    for path in paths:
        size += len(orjson.dumps(path)) + 1
        if size > limit:
            break
        kept.append(path)
    return orjson.dumps(kept).decode(), True


def write_state_file(directory: Path, prefix: str, suffix: str, data: bytes) -> str:
    """A new file (mode 0600) holding ``data`` in the run's state directory; its path."""
    fd, name = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=directory)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return name


def _write_files_list(paths: list[str], result_dir: Path) -> str:
    return write_state_file(result_dir, "files-changed-", ".json", orjson.dumps(paths))


def record_outputs(
    run: RunReport, result_file: str, groups: CallGroups | None = None
) -> dict[str, str]:
    """The step outputs of a report (values not yet redacted: Runner.set_outputs does it)."""
    files, cut = files_output(list(run.files_changed))
    stream = run.stream
    groups = stream.grouped() if groups is None else groups
    return {
        "conclusion": run.conclusion.value,
        "result": cap_text(stream.result_text),
        "result-file": result_file,
        "final-message": cap_text(stream.final_message),
        "session-id": stream.session_id,
        "request-id": stream.request_id,
        "model": stream.model,
        "duration-ms": _int_output(stream.duration_ms),
        "input-tokens": _int_output(stream.input_tokens),
        "output-tokens": _int_output(stream.output_tokens),
        "cache-read-tokens": _int_output(stream.cache_read_tokens),
        "cache-write-tokens": _int_output(stream.cache_write_tokens),
        "tool-calls": str(len(stream.tool_calls)),
        "failed-tool-calls": str(len(groups.failed)),
        "permission-denials": str(len(groups.denied)),
        "hook-denials": str(len(groups.hook_denied)),
        "network-denials": wallsection.denials(run.network),
        **({"api-key-in-box": run.api_key_in_box} if run.api_key_in_box else {}),
        "files-changed": files,
        "files-changed-truncated": "true" if cut else "false",
        "left-out": left_out_output(run),
    }


def left_out_output(run: RunReport, limit: int = FILES_OUTPUT_LIMIT) -> str:
    """``left-out``: what the agent made that did not come back, as a JSON array of
    ``{"path", "reason"}`` within ``limit`` bytes (whole entries; the summary has the count)."""
    kept: list[dict[str, str]] = []
    size = 2
    for entry in run.left_out:
        item = {"path": entry.path, "reason": entry.reason}
        size += len(orjson.dumps(item)) + 1
        if size > limit:
            break
        kept.append(item)
    return orjson.dumps(kept).decode()


def left_out_warning(run: RunReport) -> str:
    """The run's annotation when anything it made was left out ("" when nothing was)."""
    if not run.left_out_count:
        return ""
    first = run.left_out[0] if run.left_out else None
    example = f": {first.path[:200]} ({first.reason})" if first else ""
    return (f"{run.left_out_count:,} path(s) the agent made did not come back (not in the "
            f"patch, nor in files-changed){example}. The job summary and the left-out output "
            "name each with its reason.")


def redacted(run: RunReport, redact: Callable[[str], str]) -> RunReport:
    """A copy of ``run`` with the text ``run`` added (and anything processed without this
    runner's secrets) redacted, as text, before anything renders it; paths too (git's, and
    the tools'): sorted again, as a redacted name sorts elsewhere."""
    failures = tuple(dataclasses.replace(failure, message=redact(failure.message))
                     for failure in run.failures)
    said = run.stream
    stream = dataclasses.replace(said, result_text=redact(said.result_text),
                                 final_message=redact(said.final_message),
                                 model=redact(said.model), session_id=redact(said.session_id),
                                 request_id=redact(said.request_id), cwd=redact(said.cwd),
                                 failure=redact(said.failure))
    return dataclasses.replace(
        run,
        stream=stream,
        failures=failures,
        files_changed=tuple(sorted(redact(path) for path in run.files_changed)),
        structured_output=redact(run.structured_output),
        prompt=redact(run.prompt),
        stderr=redact(run.stderr),
        notes=tuple(redact(note) for note in run.notes),
        left_out=tuple(LeftOut(redact(entry.path), redact(entry.reason))
                       for entry in run.left_out),
        network=run.network.redacted(redact) if run.network else None,
    )


def report(
    run: RunReport,
    runner: Runner,
    *,
    result_dir: Path,
    extra_outputs: Mapping[str, str] | None = None,
) -> None:
    """Write the result file, every step output, the job summary and, on failure, ::error::;
    what could not be written is said in the summary's notes."""
    if runner.redact:
        run = redacted(run, runner.redact)
    notes: list[str] = []
    result_file = ""
    try:
        result_file = str(_write_result_file(run.stream.result_text, result_dir))
    except OSError as exc:
        notes.append(
            f"The result file could not be written in {result_dir} ({exc.strerror or exc}); "
            "the result output still holds the (capped) text."
        )
    files_file = ""
    try:
        files_file = _write_files_list(list(run.files_changed), result_dir)
    except OSError as exc:
        notes.append(
            f"The files-changed file could not be written in {result_dir} "
            f"({exc.strerror or exc})."
        )
    if notes:
        run = dataclasses.replace(run, notes=(*run.notes, *notes))
    outputs_error: OSError | None = None
    groups = run.stream.grouped()  # one pass over the calls for the outputs and the summary
    outputs = record_outputs(run, result_file, groups)
    try:
        runner.set_outputs({**outputs, "files-changed-file": files_file, **(extra_outputs or {})})
    except OSError as exc:  # still write the summary and the annotation below
        outputs_error = exc
    try:
        budget = runner.summary_budget()
        runner.append_summary(render_summary(run, budget_bytes=budget, groups=groups))
    except OSError as exc:
        runner.warning(
            f"The job summary could not be written to {runner.summary_path} "
            f"({exc.strerror or exc}); the log above has the whole report.",
            title="job summary not written",
        )
    if warning := left_out_warning(run):
        runner.warning(one_line(warning, 1000), title="left out of the patch")
    if run.conclusion is not Conclusion.SUCCESS:
        reason = run.failure_reason or f"the run ended with conclusion {run.conclusion}"
        runner.error(one_line(reason, 1000), title=f"cursor-agent: {run.conclusion}")
    with contextlib.suppress(OSError, ValueError):
        runner.flush()
    if outputs_error is not None:
        raise SetupError(
            f"the step outputs could not be written to {runner.output_path} "
            f"({outputs_error.strerror or outputs_error}).",
            "check that GITHUB_OUTPUT (or --output-file) names a writable file.",
        )
