"""The stream engine: bytes -> events -> run record -> live log, job summary, step outputs.

``run`` feeds the CLI's stdout to a :class:`StreamProcessor` as it arrives; ``summarize`` and
``load_record`` push a saved transcript through the same code.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import orjson

from cursor_agent_action.errors import SetupError, UsageError
from cursor_agent_action.markdown import cut_utf8, utf8_len
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.aggregate import Aggregator, RunRecord
from cursor_agent_action.stream.events import (
    ASSISTANT_PREFIX,
    MODEL_CALL_KEY,
    OBJECT_END,
    THINKING_PREFIX,
    TIMESTAMP_KEY,
    parse_line,
    take_line,
)
from cursor_agent_action.stream.framing import CHUNK_SIZE, Line, LineSplitter
from cursor_agent_action.stream.livelog import LogRenderer
from cursor_agent_action.stream.summary import render_summary

RELEASE_LINE_BYTES = 1024 * 1024
WRITE_PIECE_CHARS = 1024 * 1024
RESULT_OUTPUT_LIMIT = 64 * 1024
"""Bytes of ``result``/``final-message`` kept in the step outputs (GitHub allows 1 MB per job:
https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/passing-information-between-jobs)."""


class StreamProcessor:
    """Incremental processor for a live stream; ``runner=None`` processes silently.

    Secrets are redacted as text enters the record: with ``runner.redact``, or ``redact`` when
    there is no runner.
    """

    def __init__(
        self,
        runner: Runner | None,
        *,
        verbose: bool = False,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.runner = runner
        self._renderer = LogRenderer(runner, verbose=verbose) if runner else None
        self._aggregator = Aggregator(self._renderer, redact=runner.redact if runner else redact)
        self._splitter = LineSplitter()
        self._line_no = 0
        self._record: RunRecord | None = None

    def feed(self, chunk: bytes) -> None:
        """Process any bytes; complete lines are rendered at once, then the log is flushed."""
        self._lines(self._splitter.feed(chunk))
        if self.runner:
            self.runner.flush()

    def _lines(self, lines: list[Line]) -> None:
        # The hot loop. Thinking lines (most of a stream) are only counted and assistant token
        # deltas kept raw (decoded only if their whole repeat never comes), with no call per
        # line (events.is_thinking is inlined): the record is the same as parse_line + apply
        # would build.
        aggregator = self._aggregator
        apply = aggregator.apply
        add_raw_delta = aggregator.add_raw_delta
        line_no = self._line_no
        slow = 0
        for line in lines:  # not enumerate: its reused result tuple would keep a long line alive
            line_no += 1
            if line.startswith(THINKING_PREFIX) and line.endswith(OBJECT_END):
                continue
            # A token delta: timestamp, no model_call_id. rfind, not `in`: bytes.__contains__
            # first tries its argument as an int, which costs more than the search; both keys
            # are near the end of the line.
            if (
                line.startswith(ASSISTANT_PREFIX)
                and line.endswith(OBJECT_END)
                and line.rfind(TIMESTAMP_KEY) >= 0
                and line.rfind(MODEL_CALL_KEY) < 0
            ):
                add_raw_delta(line)
                continue
            slow += 1
            if len(line) > RELEASE_LINE_BYTES and not line.isspace():  # freed before rendering
                index = _index(lines, line)
                del line  # the list's reference goes in take_line
                apply(take_line(lines, index), line_no)
            elif line and not line.isspace():
                apply(parse_line(line), line_no)
        self._line_no = line_no
        aggregator.count_fast_lines(len(lines) - slow)

    @property
    def finished(self) -> bool:
        """A terminal ``result`` event was seen: the run is over even if the CLI lingers."""
        return self._aggregator.finished

    def close(self) -> RunRecord:
        """Process the last partial line and compute the conclusion (idempotent)."""
        if self._record is None:
            self._lines(self._splitter.close())
            self._record = self._aggregator.finish()
            if self._renderer:
                self._renderer.close(self._record)
            if self.runner:
                self.runner.flush()
        return self._record


def _index(lines: list[Line], line: Line) -> int:
    """Where ``line`` itself (not an equal line) is in ``lines``."""
    return next(index for index, held in enumerate(lines) if held is line)


@contextlib.contextmanager
def open_transcript(path: Path) -> Iterator[BinaryIO]:
    """Open a saved transcript (``-`` is stdin), turning OS errors into usage errors."""
    if str(path) == "-":
        yield sys.stdin.buffer
        return
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise UsageError(
            f"transcript {path} does not exist.",
            "pass the path of a file saved from 'cursor-agent --output-format stream-json', "
            "or - to read standard input.",
        ) from None
    except IsADirectoryError:
        raise UsageError(f"transcript {path} is a directory.", "pass a file.") from None
    except OSError as exc:
        raise UsageError(
            f"transcript {path} cannot be read: {exc.strerror or exc}.",
            "check the path and its permissions.",
        ) from None
    with handle:
        yield handle


def process_stream(
    source: BinaryIO,
    runner: Runner | None,
    *,
    verbose: bool = False,
    redact: Callable[[str], str] | None = None,
) -> RunRecord:
    """Read ``source`` to its end through a :class:`StreamProcessor`.

    A read error ends the stream early; everything read before it is kept and the error
    becomes a note on the record.
    """
    processor = StreamProcessor(runner, verbose=verbose, redact=redact)
    read = getattr(source, "read1", source.read)
    error = ""
    try:
        while chunk := read(CHUNK_SIZE):
            processor.feed(chunk)
    except OSError as exc:
        error = f"Reading the transcript failed ({exc.strerror or exc}); the report covers "
        error += "only what was read before."
    record = processor.close()
    if error:
        record.notes.append(error)
    return record


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


def record_outputs(record: RunRecord, result_file: str) -> dict[str, str]:
    """The step outputs of a record (values not yet redacted: Runner.set_outputs does it)."""
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
        "failed-tool-calls": str(len(record.failed_tool_calls)),
        "permission-denials": str(len(record.permission_denials)),
        "files-changed": orjson.dumps(record.files_changed).decode(),
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
            stderr=redact(record.stderr),
            notes=[redact(note) for note in record.notes],
        )
    result_file = ""
    try:
        result_file = str(_write_result_file(record.result_text, result_dir))
    except OSError as exc:
        record.notes.append(
            f"The result file could not be written in {result_dir} ({exc.strerror or exc}); "
            "the result output still holds the (capped) text."
        )
    outputs_error: OSError | None = None
    try:
        runner.set_outputs({**record_outputs(record, result_file), **(extra_outputs or {})})
    except OSError as exc:  # still write the summary and the annotation below
        outputs_error = exc
    try:
        runner.append_summary(render_summary(record, budget_bytes=runner.summary_budget()))
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
