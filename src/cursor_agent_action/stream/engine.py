"""The stream engine: bytes -> lines -> events -> the stream's result, with the live log beside
it.

Data flows one way. Each event goes to the :class:`~.aggregate.Aggregator` (which builds the
stream's result) and then, with whatever it just finished, to the live log; the aggregator
never calls a renderer. ``run`` feeds the CLI's stdout to a :class:`StreamProcessor` as it
arrives and makes the run's report of its result; ``summarize`` and :func:`load_report` push a
saved transcript through the same code. The job summary and the step outputs are rendered from
the one finished report (:mod:`.report`).

Imports: ``stream``, ``stream.render`` and the shared top-level modules.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from cursor_agent_action.errors import UsageError
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.aggregate import Aggregator
from cursor_agent_action.stream.events import (
    ASSISTANT_PREFIX,
    MODEL_CALL_KEY,
    OBJECT_END,
    THINKING_PREFIX,
    TIMESTAMP_KEY,
    AssistantEvent,
    ThinkingEvent,
    parse_json_line,
    take_line,
)
from cursor_agent_action.stream.framing import CHUNK_SIZE, Line, LineSplitter
from cursor_agent_action.stream.record import RunReport, StreamResult
from cursor_agent_action.stream.render.livelog import LogRenderer
from cursor_agent_action.stream.toolcalls import ToolCallEvent

RELEASE_LINE_BYTES = 1024 * 1024
WRITE_PIECE_CHARS = 1024 * 1024
RESULT_OUTPUT_LIMIT = 64 * 1024
"""Bytes of ``result``/``final-message`` kept in the step outputs (GitHub allows 1 MB per job:
https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/passing-information-between-jobs)."""


class StreamProcessor:
    """Incremental processor for a live stream; ``runner=None`` processes silently.

    Secrets are redacted as text enters the record: with ``Runner.redact``, or ``redact`` when
    there is no runner.
    """

    def __init__(
        self,
        runner: Runner | None,
        *,
        verbose: bool = False,
        redact: Callable[[str], str] | None = None,
        max_tool_calls: int | None = None,
    ) -> None:
        self.runner = runner
        self.max_tool_calls = max_tool_calls
        self._renderer = LogRenderer(runner, verbose=verbose) if runner else None
        self._aggregator = Aggregator(
            news=runner is not None, redact=runner.redact if runner else redact
        )
        self._splitter = LineSplitter()
        self._line_no = 0
        self._result: StreamResult | None = None

    def feed(self, chunk: bytes) -> None:
        """Process any bytes; complete lines are rendered at once, then the log is flushed."""
        self._lines(self._splitter.feed(chunk))
        if self.runner:
            self.runner.flush()

    def _lines(self, lines: list[Line]) -> None:
        # The hot loop. Thinking lines (most of a stream) are only counted and assistant token
        # deltas kept raw (decoded only if their whole repeat never comes), with no call per
        # line (events.is_thinking is inlined): the record is the same as parse_line + apply
        # would build. Tool calls and whole segments (most decoded lines) go straight to their
        # own entry points; the rest through apply.
        aggregator = self._aggregator
        tool_call = aggregator.tool_call
        assistant = aggregator.assistant
        renderer = self._renderer
        news = aggregator.news  # a list exactly when there is a renderer
        line_no = self._line_no
        counted = 0  # lines the aggregator is not given through apply
        for line in lines:  # not enumerate: its reused result tuple would keep a long line alive
            line_no += 1
            if line.startswith(THINKING_PREFIX) and line.endswith(OBJECT_END):
                counted += 1
                continue
            # A token delta: timestamp, no model_call_id. rfind, not `in`: bytes.__contains__
            # first tries its argument as an int, which costs more than the search; both keys
            # are near the end of the line.
            if (
                line.startswith(ASSISTANT_PREFIX)
                and line.endswith(OBJECT_END)
                and line.rfind(MODEL_CALL_KEY) < 0
                and line.rfind(TIMESTAMP_KEY) >= 0
            ):
                counted += 1
                aggregator.add_raw_delta(line)
                continue
            if len(line) > RELEASE_LINE_BYTES and not line.isspace():  # freed before rendering
                index = _index(lines, line)
                del line  # the list's reference goes in take_line
                event = take_line(lines, index)
            elif line and not line.isspace():
                event = parse_json_line(line)  # thinking lines were handled above
            else:
                continue
            kind = type(event)
            if kind is ToolCallEvent:
                counted += 1
                call = tool_call(event)  # type: ignore[arg-type]
                if renderer is not None:
                    if news:  # a segment the call ended (rebuilt from deltas) comes first
                        renderer.show(news)
                        news.clear()
                    if call is not None:
                        renderer.tool_call(call, event)  # type: ignore[arg-type]
            elif kind is AssistantEvent:
                counted += 1
                text = assistant(event)  # type: ignore[arg-type]
                if text is not None and renderer is not None:
                    renderer.segment(text)
            else:
                aggregator.apply(event)
                if renderer is not None:
                    if news:  # the record's news first, then the event itself
                        renderer.show(news)
                        news.clear()
                    if kind is not ThinkingEvent:
                        renderer.event(event, line_no)
        self._line_no = line_no
        aggregator.count_fast_lines(counted)

    @property
    def finished(self) -> bool:
        """A terminal ``result`` event was seen: the run is over even if the CLI lingers."""
        return self._aggregator.finished

    @property
    def over_budget(self) -> bool:
        """More tool calls started than ``max_tool_calls`` allows (the run must stop)."""
        limit = self.max_tool_calls
        return limit is not None and self._aggregator.calls_started > limit

    def close(self) -> StreamResult:
        """Process the last partial line; the stream's result (idempotent)."""
        if self._result is None:
            self._lines(self._splitter.close())
            self._result = self._aggregator.finish()
            if self._renderer:
                if self._aggregator.news:
                    self._renderer.show(self._aggregator.news)
                    self._aggregator.news.clear()
                self._renderer.close(self._result)
            if self.runner:
                self.runner.flush()
        return self._result


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
    transcript_file: str = "",
) -> RunReport:
    """The report of ``source`` read to its end through a :class:`StreamProcessor` (a saved
    transcript, where the stream is all there is).

    A read error ends the stream early; everything read before it is kept and the error
    becomes a note of the report.
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
    notes = (error,) if error else ()
    return RunReport.of_stream(processor.close(), transcript_file=transcript_file, notes=notes)


def load_report(path: Path, *, redact: Callable[[str], str] | None = None) -> RunReport:
    """Parse a saved transcript silently (no log) into its report; pass ``Runner.redact`` as
    ``redact`` so secrets are removed before any text is cut for display."""
    with open_transcript(path) as source:
        return process_stream(source, None, redact=redact, transcript_file=str(path))
