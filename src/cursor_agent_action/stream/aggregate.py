"""Events to the stream's result (:mod:`.record`): what happened in the run, independent of how
it is shown.

:class:`Aggregator` folds events in and :meth:`~Aggregator.finish` makes the read-only
:class:`~.record.StreamResult` of them. It renders nothing and calls no renderer: with
``news=True`` it keeps what just became final (each finished assistant segment and tool call)
in :attr:`Aggregator.news`, which the engine hands on to the live log.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from cursor_agent_action.markdown import shorten
from cursor_agent_action.redact import Redactor
from cursor_agent_action.stream.events import (
    AssistantEvent,
    Event,
    InitEvent,
    InteractionEvent,
    MalformedLine,
    ResultEvent,
    SystemEvent,
    ThinkingEvent,
    delta_text,
)
from cursor_agent_action.stream.framing import Line
from cursor_agent_action.stream.notices import (
    NOTICES_KEPT,
    Interaction,
    Notice,
    add_request,
    add_response,
)
from cursor_agent_action.stream.paths import workspace_relative
from cursor_agent_action.stream.record import ROWS_SHOWN, StreamResult, ToolCallRecord
from cursor_agent_action.stream.toolcalls import ToolCallEvent, hook_message, refusal

TARGET_LIMIT = 1000
DETAIL_LIMIT = 4000
WHOLE_SEGMENT_LEN = 4096
"""Assistant text this short is redacted whole where it is written (log flush, report, bodies),
never cut before; longer text is redacted here, before anything can cut it."""
SEGMENTS_KEPT_CHARS = 4 * 1024 * 1024
"""Assistant text kept for a run that ends without a result event (whose ``result`` is then
the text itself); earlier text is left out with a note, the transcript has all of it."""
_SETTLED_IDS_KEPT = 1024
_TARGETS_CACHED = 4096
_WRITE_KINDS = frozenset({"write", "edit", "delete"})


News = list[str | tuple[ToolCallRecord, ToolCallEvent]]
"""Finished segments (their text) and completed tool calls, in stream order, that the engine
has not been handed as return values (segments rebuilt from deltas, events given to
:meth:`Aggregator.apply`)."""


class Aggregator:
    """Folds events in; :meth:`finish` makes the stream's read-only result of them."""

    def __init__(self, *, news: bool = False, redact: Callable[[str], str] | None = None) -> None:
        # What the init and result events said (once or twice a run: replaced, not changed);
        # the counts and lists that grow with the stream are kept beside it.
        self._said = StreamResult(failure="")
        self._succeeded = False  # the result event said success
        self._malformed = 0
        self._interactions: list[Interaction] = []
        self._interactions_left_out = 0
        self._notices: list[Notice] = []
        self._notices_left_out = 0
        # What the live log has not been given yet; None when nobody reads it.
        self.news: News | None = [] if news else None
        # Secrets are removed as text enters the record, before anything cuts it: a cut
        # through a secret would leave a piece no later redaction recognises.
        self._redact = redact if redact is not None else _unchanged
        self.events = 0  # JSON events (not malformed lines)
        self.lines = 0  # non-blank lines
        self._calls: list[ToolCallRecord] = []  # in the order they started
        self._open: dict[str, int] = {}  # call id -> its index (details kept below ROWS_SHOWN)
        # The ids of the most recently settled calls (the last 1,024 to 2,048), to recognise a
        # repeated completion (the CLI has sent one right after the first); bounded, as every
        # id would cost ~10 MB. Two generations of a set: one add per call, where dropping the
        # oldest id of an ordered map (next(iter(dict)) walks past every key deleted before
        # it; OrderedDict.popitem) was the slowest line of the engine.
        self._settled_now: set[str] = set()
        self._settled_before: set[str] = set()
        self._segments: list[str] = []
        self._segment_chars = 0  # in _segments
        self._dropped_chars = 0  # left out of _segments (SEGMENTS_KEPT_CHARS)
        self._deltas: list[str | Line] = []  # text, or a raw line from the fast path
        self._files: set[str] = set()
        # Targets as the record shows them (relative to the workspace, redacted, cut), by the
        # target as sent: agents name the same files and commands again and again. Paths are
        # cached only once the workspace is known (the first init sets it, for good); both
        # are emptied when the redactor learns a secret.
        self._shown_paths: dict[str, str] = {}
        self._shown_targets: dict[str, str] = {}
        # A Redactor tells by its version when it learnt a secret (a plain function never does).
        self._redactor = redact if isinstance(redact, Redactor) else None
        self._shown_version = 0
        self._anonymous = 0
        self._result_error = ""
        self._flushed = ""  # a segment rebuilt from deltas whose whole repeat may still come

    # -- events ---------------------------------------------------------------------------

    def add_raw_delta(self, line: Line) -> None:
        """A token-delta line the caller recognised by its keys; decoded only if its
        whole-segment repeat never arrives (see ``_end_segment``)."""
        self._deltas.append(line)

    def count_fast_lines(self, lines: int) -> None:
        """Lines the caller handed over without :meth:`apply` (thinking and raw deltas on its
        fast path, the events it gave :meth:`tool_call` and :meth:`assistant`): all events."""
        self.events += lines
        self.lines += lines

    def apply(self, event: Event) -> None:
        """Fold any event in (the engine calls :meth:`tool_call` and :meth:`assistant`
        directly, for the two kinds that make up most decoded lines)."""
        kind = type(event)
        self.lines += 1
        if kind is ToolCallEvent:
            self.events += 1
            call = self.tool_call(event)  # type: ignore[arg-type]
            if call is not None and self.news is not None:
                self.news.append((call, event))  # type: ignore[arg-type]
        elif kind is AssistantEvent:
            self.events += 1
            text = self.assistant(event)  # type: ignore[arg-type]
            if text is not None and self.news is not None:
                self.news.append(text)
        elif kind is MalformedLine:
            self._malformed += 1
        else:
            self.events += 1
            if kind is not ThinkingEvent:
                self._other(event)

    def assistant(self, event: AssistantEvent) -> str | None:
        """An assistant event: a token delta or a whole segment. Returns the segment's text
        when it is a new finished segment (for the live log), else None (not counted: see
        :meth:`count_fast_lines`)."""
        # With --stream-partial-output a segment arrives as deltas (timestamp_ms only) and
        # then once more whole (with model_call_id, or with neither field for the last one):
        # the whole repeat replaces the deltas, so the text is never doubled.
        if event.is_delta:
            self._deltas.append(event.text)
            return None
        if self._deltas:
            self._deltas.clear()
        text = event.text
        if text == self._flushed:  # the repeat came after a tool call had flushed it
            self._flushed = ""
            return None
        return self._add_segment(text)

    def _end_segment(self) -> None:
        """Deltas never repeated whole (cut-off stream) still count as a segment."""
        deltas = self._deltas
        if deltas:
            for index in range(len(deltas)):  # in place: each raw line freed once decoded
                if not isinstance(deltas[index], str):
                    deltas[index] = delta_text(deltas, index)
            text = "".join(deltas)  # type: ignore[arg-type]
            deltas.clear()
            kept = self._add_segment(text)  # redacted first when long
            if kept is not None and self.news is not None:
                self.news.append(kept)
            self._flushed = text

    def _add_segment(self, text: str) -> str | None:
        """Keep a finished segment; returns it as kept (None for no text)."""
        self._flushed = ""
        if not text:
            return None
        if len(text) > WHOLE_SEGMENT_LEN:
            text = self._redact(text)
        self._segments.append(text)
        self._segment_chars += len(text)
        if self._segment_chars > SEGMENTS_KEPT_CHARS:
            self._forget_segments()
        return text

    def _forget_segments(self) -> None:
        """Drop the oldest segments (never the last) until the rest fits the cap."""
        segments = self._segments
        # Down to half the cap, so this runs once per ~2 MiB of text, not once per segment:
        # the fewest oldest segments whose length brings the rest under it. Summed from the
        # oldest on and only as far as needed: those are the strings freed next, while a sum
        # over all of them (accumulate) would read every old segment of the cap from memory.
        excess = self._segment_chars - SEGMENTS_KEPT_CHARS // 2
        if excess <= 0:
            return
        dropped = drop = 0
        last = len(segments) - 1
        while dropped < excess and drop < last:
            dropped += len(segments[drop])
            drop += 1
        self._segment_chars -= dropped
        self._dropped_chars += dropped
        del segments[:drop]

    def tool_call(self, event: ToolCallEvent) -> ToolCallRecord | None:
        """A tool call started, completed (or a newer subtype). Returns the call when it just
        completed (for the live log), else None (not counted: see :meth:`count_fast_lines`).

        Here is the call's life in the record: opened by its first event, completed (what the
        completion says is :meth:`_completed`'s), and past :data:`ROWS_SHOWN` a success
        settled into its kind's shared entry, its id kept a while to know a repeat."""
        if self._deltas:
            self._end_segment()
        call_id = event.call_id or self._anonymous_id()
        index = self._open.get(call_id)
        if index is not None:
            call = self._calls[index]
            if not call.target and event.target:
                call.target = self._cut(event.target, TARGET_LIMIT)
        elif call_id in self._settled_now or call_id in self._settled_before:
            return None  # a repeated event of a call that succeeded and is listed nowhere
        else:  # a new call (inlined: once per tool call)
            target = event.target
            if target:
                target = self._shown_target(target, target == event.args.get("path"))
            call = ToolCallRecord(call_id, event.kind, target, "pending")
            index = len(self._calls)
            self._calls.append(call)
            self._open[call_id] = index
        subtype = event.subtype
        if subtype == "started":
            call.started_at_ms = event.timestamp_ms
            return None
        outcome = event.outcome
        if subtype != "completed" or outcome is None:
            return None
        self._completed(call, event, outcome)
        if outcome == "success" and index >= ROWS_SHOWN:  # its details are never shown again
            del self._open[call_id]
            settled = self._settled_now
            settled.add(call_id)
            if len(settled) >= _SETTLED_IDS_KEPT:
                self._settled_before, self._settled_now = settled, set()
            self._calls[index] = _settled(call.kind)
        return call

    def _anonymous_id(self) -> str:
        """An id for a call the CLI sent without one (each such event is its own call)."""
        self._anonymous += 1
        return f"(no id #{self._anonymous})"

    def _completed(self, call: ToolCallRecord, event: ToolCallEvent, outcome: str) -> None:
        """What a completion says: the call's outcome, the refusal and detail of one that did
        not succeed, a command's exit code, how long it took, the files a write wrote."""
        call.outcome = outcome
        kind = call.kind
        if outcome != "success":
            detail = event.detail
            call.refused_by = refusal(outcome, detail)
            if call.refused_by == "hook":  # the hook's own words, without the CLI's notes
                detail = hook_message(detail)
            call.detail = self._cut(detail, DETAIL_LIMIT)
        elif kind in _WRITE_KINDS:
            for path in event.paths:
                self._files.add(workspace_relative(path, self._said.cwd))
        if kind == "shell":
            call.exit_code = event.exit_code
        started, completed = event.started_at_ms, event.completed_at_ms
        if started is not None and completed is not None:  # _duration's first case, inlined
            call.duration_ms = completed - started if completed > started else 0
        else:
            call.duration_ms = _duration(event, call)

    def _other(self, event: Event) -> None:
        said = self._said
        if isinstance(event, InitEvent):
            # A resumed session can repeat init: the first one names the workspace.
            self._said = dataclasses.replace(
                said,
                session_id=said.session_id or self._redact(event.session_id),
                model=said.model or self._redact(event.model),
                cwd=said.cwd or event.cwd,  # for paths only; never cut
            )
        elif isinstance(event, InteractionEvent):
            kept = self._interactions
            if event.subtype == "response":
                reason = self._cut(event.reason, DETAIL_LIMIT)
                ok = add_response(kept, event.query_type, event.query_id, event.answer, reason)
            else:
                text = self._cut(event.text, DETAIL_LIMIT)
                ok = add_request(kept, event.query_type, event.query_id, text)
            self._interactions_left_out += not ok
        elif isinstance(event, SystemEvent):
            if len(self._notices) < NOTICES_KEPT:
                text = self._cut(event.text, TARGET_LIMIT)
                self._notices.append(Notice(event.subtype, event.status, text))
            else:
                self._notices_left_out += 1
        elif isinstance(event, ResultEvent):
            self._end_segment()
            ok = event.subtype == "success" and not event.is_error
            self._succeeded = ok
            result_text = self._redact(self._separated(event.result))
            del self._segments[:-1]  # the result has the text: only the final message is needed
            self._segment_chars = len(self._segments[0]) if self._segments else 0
            self._dropped_chars = 0
            self._result_error = "" if ok else _result_error(event, result_text)
            self._said = dataclasses.replace(
                said,
                has_result=True,
                result_text=result_text,
                duration_ms=event.duration_ms,
                session_id=self._redact(event.session_id) or said.session_id,
                request_id=self._redact(event.request_id) or said.request_id,
                input_tokens=event.usage.get("input"),
                output_tokens=event.usage.get("output"),
                cache_read_tokens=event.usage.get("cache_read"),
                cache_write_tokens=event.usage.get("cache_write"),
            )

    def _separated(self, result: str) -> str:
        """The CLI's result joins the segments with nothing between ("…then reply.done"):
        with every segment kept and the same text, a blank line goes between them."""
        segments = self._segments
        if len(segments) < 2 or self._dropped_chars or len(result) != self._segment_chars:
            return result
        return "\n\n".join(segments) if "".join(segments) == result else result

    def _shown_target(self, target: str, is_path: bool) -> str:
        """``target`` as the record keeps it: a path relative to the workspace, redacted and
        cut to :data:`TARGET_LIMIT` (the same text for the same target, so it is cached)."""
        redactor = self._redactor
        if redactor is not None and redactor.version != self._shown_version:
            self._shown_paths.clear()
            self._shown_targets.clear()
            self._shown_version = redactor.version
        cwd = self._said.cwd
        is_path = is_path and bool(cwd)
        cache = self._shown_paths if is_path else self._shown_targets
        shown = cache.get(target)
        if shown is None:
            shown = workspace_relative(target, cwd) if is_path else target  # shorter, same meaning
            shown = self._cut(shown, TARGET_LIMIT)
            if len(cache) >= _TARGETS_CACHED:
                cache.clear()
            cache[target] = shown
        return shown

    def _cut(self, text: str, limit: int) -> str:
        if not text:  # most details are empty
            return text
        # Always here: tables escape | and newlines in a target, so no later pass would see it.
        return shorten(self._redact(text), limit)

    @property
    def finished(self) -> bool:
        return self._said.has_result

    @property
    def calls_started(self) -> int:
        return len(self._calls)

    # -- end of stream --------------------------------------------------------------------

    def finish(self) -> StreamResult:
        """The result of everything seen; may be called more than once."""
        self._end_segment()
        said = self._said
        result_text = said.result_text
        if not said.has_result:
            result_text = "".join(self._segments)
            if self._dropped_chars:
                result_text = (
                    f"[… {self._dropped_chars:,} earlier characters of the agent's text left "
                    "out by cursor-agent-action; the transcript has them]\n\n" + result_text
                )
        return dataclasses.replace(
            said,
            failure="" if self._succeeded else self._failure_reason(),
            result_text=result_text,
            final_message=self._segments[-1] if self._segments else "",
            tool_calls=tuple(self._calls),
            files_changed=tuple(sorted(self._files)),
            malformed_lines=self._malformed,
            interactions=tuple(self._interactions),
            interactions_left_out=self._interactions_left_out,
            notices=tuple(self._notices),
            notices_left_out=self._notices_left_out,
        )

    def _failure_reason(self) -> str:
        if self._said.has_result:
            return self._result_error
        if self.lines == 0:
            return ("The transcript is empty: cursor-agent wrote nothing on stdout. Fix: see "
                    "its stderr (in the log) for why it did not start.")
        if self.events == 0:
            return (
                f"No stream-json event found: none of the {self.lines} non-blank lines is a "
                "JSON object. Fix: run cursor-agent with --print --output-format stream-json."
            )
        return (
            f"The stream ended without a result event after {self.events} events: the run "
            "did not finish (cut off, crashed or killed). Fix: see the CLI's stderr and the "
            "transcript's last lines."
        )


def _result_error(event: ResultEvent, text: str) -> str:
    """The failure reason for an error result, quoting the start of its (redacted) text."""
    message = " ".join(text[:1000].split())[:300]  # the head only: the text may be huge
    return (
        f"cursor-agent reported an error (result subtype {event.subtype!r}"
        f"{', is_error true' if event.is_error else ''})" + (f": {message}" if message else ".")
        + " Fix: read the agent's last message and the transcript; a rate limit or outage "
        "passes with time (re-run), a task the agent could not do needs a clearer prompt."
    )


@functools.lru_cache(maxsize=256)  # kinds are the CLI's keys: bounded like any cache
def _settled(kind: str) -> ToolCallRecord:
    """The shared entry of a successful call past :data:`ROWS_SHOWN` (never changed)."""
    return ToolCallRecord("", kind, "", "success")


def _unchanged(text: str) -> str:
    return text


def _duration(event: ToolCallEvent, call: ToolCallRecord) -> int | None:
    if event.started_at_ms is not None and event.completed_at_ms is not None:
        return max(0, event.completed_at_ms - event.started_at_ms)
    execution = event.payload.get("executionTime")
    if isinstance(execution, int) and not isinstance(execution, bool):
        return execution
    if call.started_at_ms is not None and event.timestamp_ms is not None:
        return max(0, event.timestamp_ms - call.started_at_ms)
    return None
