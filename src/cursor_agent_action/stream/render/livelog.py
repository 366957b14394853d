"""The live log: what a person scrolling the CI log sees while the agent works.

One entry per assistant segment (never per token), one collapsible ``::group::`` per tool call
titled with its kind, target, outcome and duration, thinking hidden, full tool output only with
``--verbose``. Agent-authored text goes through ``Runner.untrusted`` (inside
``::stop-commands::``) or an escaped group title; warnings name permission denials and the
first few malformed lines. Our own lines use ``Runner.log``; where they quote CLI metadata
(model, session id, workspace, subtype, event type) it is flattened, and ``Runner`` puts every
line through ``logsafe.neutral``: the runner parses ``::`` at a line's start and ``##[``
anywhere in it, and neither form survives in text we did not write.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.aggregate import News
from cursor_agent_action.stream.events import (
    Event,
    InitEvent,
    InteractionEvent,
    MalformedLine,
    ResultEvent,
    SystemEvent,
    UnknownEvent,
    UserEvent,
)
from cursor_agent_action.stream.notices import (
    Interaction,
    Notice,
    describe_interaction,
    describe_notice,
    interaction_label,
)
from cursor_agent_action.stream.record import StreamResult, ToolCallRecord
from cursor_agent_action.stream.toolcalls import ToolCallEvent

MALFORMED_SHOWN = 5
PREVIEW_CHARS = 120
FAILED_OUTPUT_TAIL_LINES = 20
# Long agent text is logged in pieces, each its own stop-commands block, so the log never
# holds a second copy of a 50 MiB message (the log viewer shows the pieces as one text).
LOG_PIECE_CHARS = 64 * 1024
FLAT_TARGETS_CACHED = 4096


def log_pieces(text: str, size: int = LOG_PIECE_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters, each ending after a
    newline where the text has one in reach; a short text is the one piece."""
    start = 0
    while len(text) - start > size:
        end = text.rfind("\n", start, start + size) + 1 or start + size
        yield text[start:end]
        start = end
    yield text[start:]


def format_duration(ms: int | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s"


def describe_outcome(call: ToolCallRecord) -> str:
    """``success``, ``success (exit 1)``, ``rejected``, ``pending (never completed)``..."""
    if call.outcome == "pending":
        return "pending (never completed)"
    if call.outcome == "unknown":
        return "unknown (no outcome reported)"
    if call.refused_by == "hook":
        return f"{call.outcome} (blocked by a hook)"
    if call.exit_code is not None and (call.exit_code != 0 or call.outcome != "success"):
        return f"{call.outcome} (exit {call.exit_code})"
    return call.outcome


def _tool_output(event: ToolCallEvent) -> str:
    """The full output of a completed call, as text."""
    payload = event.payload
    for key in ("interleavedOutput", "content", "diffString", "output"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    if event.kind == "shell":
        return "".join(v for k in ("stdout", "stderr") if isinstance(v := payload.get(k), str))
    file_text = event.args.get("fileText")
    if isinstance(file_text, str):
        return file_text
    return orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode() if payload else ""


class LogRenderer:
    """The live log on top of a Runner. The engine gives it, in stream order, the record's
    news (:meth:`show`: finished segments and tool calls) and the events that stand alone
    (:meth:`event`: init, result, malformed lines, the rest)."""

    def __init__(self, runner: Runner, *, verbose: bool = False) -> None:
        self.runner = runner
        self.verbose = verbose
        self._malformed = 0
        self._unknown: dict[str, int] = {}
        # Targets flattened for a title, by the record's target (the aggregator hands the same
        # string for the same target, so a repeat costs one lookup).
        self._flat_targets: dict[str, str] = {}

    def call_title(self, call: ToolCallRecord, event: ToolCallEvent | None = None) -> str:
        """``kind target → outcome · stats · duration`` (the target flattened to one line; the
        stats, such as ``6 lines``, from the completed ``event``)."""
        # Once per tool call: the title is built in one piece (no head or duration string
        # first), the common cases first.
        stats = ""
        if event is not None and (payload := event.payload):
            if event.kind == "edit" and "linesAdded" in payload:
                stats = f" · +{payload.get('linesAdded')} -{payload.get('linesRemoved', 0)} lines"
            elif isinstance(count := payload.get("linesCreated"), int):
                stats = f" · {count} line{'' if count == 1 else 's'} written"
            elif isinstance(count := payload.get("totalLines"), int):
                stats = f" · {count} line{'' if count == 1 else 's'}"
        target = call.target
        flat = self._flat_targets.get(target) if target else ""
        if flat is None:
            if len(self._flat_targets) >= FLAT_TARGETS_CACHED:
                self._flat_targets.clear()
            flat = self._flat_targets[target] = one_line(target, 160)
        outcome = call.outcome
        code = call.exit_code
        # describe_outcome only where it says more than the outcome.
        if outcome == "pending" or (code is not None and (code != 0 or outcome != "success")):
            outcome = describe_outcome(call)
        ms = call.duration_ms
        if ms is not None and 0 <= ms < 1000:  # most calls
            if target:
                return f"{call.kind} {flat} → {outcome}{stats} · {ms} ms"
            return f"{call.kind} → {outcome}{stats} · {ms} ms"
        duration = format_duration(ms)
        tail = f"{outcome}{stats} · {duration}" if duration else f"{outcome}{stats}"
        return f"{call.kind} {flat} → {tail}" if target else f"{call.kind} → {tail}"

    def show(self, news: News) -> None:
        """Finished assistant segments and completed tool calls, as the record got them."""
        for item in news:
            if isinstance(item, str):
                self.segment(item)
            else:
                self.tool_call(*item)

    def event(self, event: Event, line_no: int) -> None:
        """An event the record's news does not cover (tool calls and segments are news)."""
        if isinstance(event, MalformedLine):
            self.on_malformed(line_no, event)
        elif isinstance(event, InitEvent):
            self.on_init(event)
        elif isinstance(event, ResultEvent):
            self.on_result(event)
        elif isinstance(event, (UserEvent, SystemEvent, InteractionEvent, UnknownEvent)):
            self.on_other(event)

    def on_init(self, event: InitEvent) -> None:
        redact = self.runner.redact  # before one_line cuts anything
        self.runner.log(
            f"cursor-agent session {one_line(redact(event.session_id), 80) or '(no id)'}: "
            f"model {one_line(redact(event.model), 80) or '(unknown)'}, "
            f"workspace {one_line(redact(event.cwd), 200) or '(unknown)'}"
        )

    def _untrusted(self, text: str) -> None:
        if len(text) <= LOG_PIECE_CHARS:
            self.runner.untrusted(text)
            return
        # Redacted whole before it is cut into pieces: a cut could split a secret.
        for piece in log_pieces(self.runner.redact(text)):
            self.runner.untrusted(piece)

    # A finished assistant segment: agent text like any other (an alias, not a call more per
    # segment).
    segment = _untrusted

    def tool_call(self, call: ToolCallRecord, event: ToolCallEvent) -> None:
        """A completed tool call."""
        runner = self.runner
        title = self.call_title(call, event)
        if not (call.detail or self.verbose or call.exit_code or call.refused_by):
            runner.entry(title)  # most calls: nothing to show inside the group
            return
        with runner.group(title):
            if call.detail:
                runner.untrusted(call.detail)
            if self.verbose:
                output = _tool_output(event)
                if output:
                    self._untrusted(output)
            elif call.exit_code:
                output = runner.redact(_tool_output(event))[-16384:]  # redact, then cut
                tail = "\n".join(output.splitlines()[-FAILED_OUTPUT_TAIL_LINES:])
                if tail:
                    runner.log("last lines of output (all of it with --verbose):")
                    runner.untrusted(tail)
        if call.refused_by:
            reason = f": {one_line(call.detail)}" if call.detail else ""
            who = "a hook" if call.hook_denied else "the permission policy"
            runner.warning(
                f"{call.kind} {one_line(call.target, 160)} was refused by {who} "
                f"({call.outcome}){reason}",
                title="blocked by a hook" if call.hook_denied else "permission denied",
            )

    def on_result(self, event: ResultEvent) -> None:
        duration = format_duration(event.duration_ms)
        self.runner.log(
            f"cursor-agent finished: {one_line(event.subtype, 40) or '(no subtype)'}"
            + (", is_error" if event.is_error else "")
            + (f" after {duration}" if duration else "")
        )

    def on_malformed(self, line_no: int, event: MalformedLine) -> None:
        self._malformed += 1
        if self._malformed <= MALFORMED_SHOWN:
            self.runner.warning(
                f"line {line_no} skipped, not a JSON event ({event.reason}): "
                + one_line(self.runner.redact(event.preview), PREVIEW_CHARS),
                title="malformed stream line",
            )

    def on_other(self, event: Event) -> None:
        runner = self.runner
        if isinstance(event, UserEvent):
            runner.log(f"prompt sent ({len(event.text)} characters)")
        elif isinstance(event, SystemEvent):
            self.on_notice(event)
        elif isinstance(event, InteractionEvent):
            self.on_interaction(event)
        elif isinstance(event, UnknownEvent):
            name = one_line(f"{event.type}/{event.subtype}".strip("/"), 80) or "(no type)"
            self._unknown[name] = self._unknown.get(name, 0) + 1

    def on_notice(self, event: SystemEvent) -> None:
        """A system notice: a background command stopped (a warning), a task notification;
        any other subtype named only. What it carries is CLI or agent text: untrusted."""
        runner = self.runner
        notice = Notice(event.subtype, one_line(event.status, 40), "")
        known = event.subtype in ("background_shell_timeout", "task_notification")
        if not known:
            runner.log(f"system event: {one_line(event.subtype, 80)}")
        elif event.subtype == "background_shell_timeout":
            about = one_line(runner.redact(event.text), 300)
            runner.warning(
                describe_notice(notice) + (f": {about}" if about else ""),
                title="background command stopped",
            )
        else:
            runner.log(f"{describe_notice(notice)}:" if event.text else describe_notice(notice))
            if event.text:
                self._untrusted(event.text)

    def on_interaction(self, event: InteractionEvent) -> None:
        """A question or prompt the agent raised (its text is the agent's: untrusted), or the
        answer it got."""
        label = interaction_label(one_line(event.query_type, 80))
        if event.subtype == "response":
            item = Interaction(
                event.query_type,
                "",
                "",
                event.answer or "answered",
                one_line(self.runner.redact(event.reason), 300),
            )
            self.runner.log(f"the agent's {label}: {describe_interaction(item)}")
        elif event.subtype == "request":
            self.runner.log(f"the agent raised a {label}" + (":" if event.text else ""))
            if event.text:
                self._untrusted(event.text)
        else:
            self.runner.log(f"interaction query {label}: {one_line(event.subtype, 40)}")

    def close(self, stream: StreamResult) -> None:
        """End-of-stream notes: pending calls, totals of what was skipped."""
        runner = self.runner
        for call in stream.grouped().pending:
            with runner.group(self.call_title(call)):
                runner.log("this tool call started but no completion event arrived")
        if self._malformed > MALFORMED_SHOWN:
            runner.warning(
                f"{self._malformed} malformed lines were skipped in total "
                f"(the first {MALFORMED_SHOWN} are shown above)",
                title="malformed stream lines",
            )
        if self._unknown:
            listed = ", ".join(f"{name} x{count}" for name, count in self._unknown.items())
            runner.log(f"events of unknown type (ignored): {one_line(listed, 400)}")
