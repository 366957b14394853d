"""The finished run record to the runner: result file, step outputs, job summary, annotation.

Everything here renders a finished :class:`~.aggregate.RunRecord`; nothing reads the stream.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import orjson

from cursor_agent_action.errors import SetupError
from cursor_agent_action.markdown import cut_utf8, utf8_len
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream import network
from cursor_agent_action.stream.record import CallGroups, RunRecord
from cursor_agent_action.stream.summary import render_summary

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


def record_outputs(record: RunRecord, result_file: str,
                   groups: CallGroups | None = None) -> dict[str, str]:  # fmt: skip
    """The step outputs of a record (values not yet redacted: Runner.set_outputs does it)."""
    files, cut = files_output(record.files_changed)
    groups = record.grouped() if groups is None else groups
    return {
        "conclusion": record.conclusion,
        "result": cap_text(record.result_text),
        "result-file": result_file,
        "final-message": cap_text(record.final_message),
        "session-id": record.session_id,
        "request-id": record.request_id,
        "model": record.model,
        "duration-ms": _int_output(record.duration_ms),
        "input-tokens": _int_output(record.input_tokens),
        "output-tokens": _int_output(record.output_tokens),
        "cache-read-tokens": _int_output(record.cache_read_tokens),
        "cache-write-tokens": _int_output(record.cache_write_tokens),
        "tool-calls": str(len(record.tool_calls)),
        "failed-tool-calls": str(len(groups.failed)),
        "permission-denials": str(len(groups.denied)),
        "hook-denials": str(len(groups.hook_denied)),
        "network-denials": network.denials(record.network),
        "files-changed": files,
        "files-changed-truncated": "true" if cut else "false",
    }


def report(
    record: RunRecord,
    runner: Runner,
    *,
    result_dir: Path,
    extra_outputs: Mapping[str, str] | None = None,
) -> None:
    """Write the result file, every step output, the job summary and, on failure, ::error::."""
    redact = runner.redact
    if redact:  # text `run` added, and anything processed without this runner's secrets
        record = dataclasses.replace(
            record,
            # Paths too (git's, and the tools'): sorted again, as a redacted name sorts elsewhere.
            files_changed=sorted(redact(path) for path in record.files_changed),
            failure_reason=redact(record.failure_reason),
            result_text=redact(record.result_text),
            final_message=redact(record.final_message),
            structured_output=redact(record.structured_output),
            prompt=redact(record.prompt),
            stderr=redact(record.stderr),
            notes=[redact(note) for note in record.notes],
            network=record.network.redacted(redact) if record.network else None,
        )
    result_file = ""
    try:
        result_file = str(_write_result_file(record.result_text, result_dir))
    except OSError as exc:
        record.notes.append(
            f"The result file could not be written in {result_dir} ({exc.strerror or exc}); "
            "the result output still holds the (capped) text."
        )
    files_file = ""
    try:
        files_file = _write_files_list(record.files_changed, result_dir)
    except OSError as exc:
        record.notes.append(f"The files-changed file could not be written in {result_dir} "
                            f"({exc.strerror or exc}).")
    outputs_error: OSError | None = None
    groups = record.grouped()  # one pass over the calls for the outputs and the summary
    try:
        runner.set_outputs({**record_outputs(record, result_file, groups),
                            "files-changed-file": files_file, **(extra_outputs or {})})
    except OSError as exc:  # still write the summary and the annotation below
        outputs_error = exc
    try:
        runner.append_summary(render_summary(record, budget_bytes=runner.summary_budget(),
                                             groups=groups))  # fmt: skip
    except OSError as exc:
        runner.warning(
            f"The job summary could not be written to {runner.summary_path} "
            f"({exc.strerror or exc}); the log above has the whole report.",
            title="job summary not written",
        )
    if record.conclusion != "success":
        reason = record.failure_reason or f"the run ended with conclusion {record.conclusion}"
        runner.error(one_line(reason, 1000), title=f"cursor-agent: {record.conclusion}")
    with contextlib.suppress(OSError, ValueError):
        runner.flush()
    if outputs_error is not None:
        raise SetupError(
            f"the step outputs could not be written to {runner.output_path} "
            f"({outputs_error.strerror or outputs_error}).",
            "check that GITHUB_OUTPUT (or --output-file) names a writable file.",
        )
