"""The run's verdict while the run finds it: the stream's read-only result, the failures the
checks after it add, and the run's own facts; made into the one read-only
:class:`~cursor_agent_action.stream.record.RunReport` at the end (:meth:`Verdict.report`).

The conclusion is never set: it follows from how the agent was stopped and the failures
(:meth:`Verdict.conclusion`), so a check can only add a failure, and a timeout or a cancel
stays what it was."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from cursor_agent_action.agent.contain.sandbox import EndedBy
from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.record import (
    Cause,
    Conclusion,
    Failure,
    LeftOut,
    RunReport,
    StreamResult,
    stream_failures,
)
from cursor_agent_action.stream.wallreport import NetReport

STOPPED: dict[EndedBy, Conclusion] = {
    EndedBy.TIMEOUT: Conclusion.TIMEOUT,
    EndedBy.CANCELLED: Conclusion.CANCELLED,
    EndedBy.BUDGET: Conclusion.BUDGET,
}
"""How the agent was stopped (``AgentExit.ended_by``) -> the run's conclusion."""


@dataclass(frozen=True)
class Described:
    """What the report says about the request itself (the same for every start)."""

    transcript_file: str = ""
    transcript_artifact: str = ""
    transcript_temporary: bool = False
    preset: str = ""
    prompt: str = ""


@dataclass
class Verdict:
    """One start of the agent (or a run and its follow-up turn) as the checks find it.

    ``failures`` come newest first: the latest check's failure leads the reason."""

    stream: StreamResult
    stopped: Conclusion | None = None
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    stderr: str = ""
    exit_code: int | None = None
    isolation: str = ""
    isolation_details: tuple[str, ...] = ()
    isolation_warning: str = ""
    network: NetReport | None = None
    structured_output: str = ""
    api_key_in_box: str = ""  # agent.contain.box.net.credentials.HELD_*
    api_key_note: str = ""
    key_relay: MaskReport | None = None
    left_out: list[LeftOut] = field(default_factory=list)
    left_out_count: int = 0

    def leave_out(self, paths: list[LeftOut], count: int) -> None:
        """Paths that did not come back (``count``: how many there were, ``paths`` may hold
        only the first of them)."""
        self.left_out.extend(paths)
        self.left_out_count += max(count, len(paths))

    @classmethod
    def of(cls, stream: StreamResult) -> Verdict:
        """The verdict of the stream alone: its own failure, the files its tools wrote."""
        return cls(stream, failures=list(stream_failures(stream)),
                   files_changed=list(stream.files_changed))

    @property
    def conclusion(self) -> Conclusion:
        if self.stopped is not None:
            return self.stopped
        return Conclusion.FAILURE if self.failures else Conclusion.SUCCESS

    @property
    def succeeded(self) -> bool:
        return self.conclusion is Conclusion.SUCCESS

    def fail(self, cause: Cause, message: str) -> None:
        """A failure that outweighs the run's own result (a timeout or cancel stays)."""
        self.failures.insert(0, Failure(cause, message))

    def stop(self, stopped: Conclusion, message: str) -> None:
        """The action stopped the agent (timeout, budget, cancel): that replaces the stream's
        verdict."""
        self.stopped = stopped
        self.failures = [Failure(Cause.STOPPED, message)]

    def no_result(self, message: str) -> None:
        """The agent ended without a result event: ``message`` (why, from its exit) replaces
        the stream's own account."""
        self.failures = [Failure(Cause.NO_RESULT, message)]

    def answered(self, value: str) -> None:
        """The checked answer to ``output-schema``, compact JSON."""
        self.structured_output = value

    def followed_by(self, second: Verdict) -> Verdict:
        """One verdict for a run and its follow-up turn: the second's conclusion, both turns'
        calls, files, tokens and notes."""
        return dataclasses.replace(
            second,
            stream=_both(self.stream, second.stream),
            failures=list(second.failures),
            notes=[*self.notes, *second.notes],
            files_changed=sorted({*self.files_changed, *second.files_changed}),
            isolation=self.isolation or second.isolation,
            api_key_in_box=second.api_key_in_box or self.api_key_in_box,
            api_key_note=second.api_key_note or self.api_key_note,
            key_relay=second.key_relay or self.key_relay,
            isolation_details=self.isolation_details or second.isolation_details,
            isolation_warning=self.isolation_warning or second.isolation_warning,
            left_out=[*self.left_out, *second.left_out],
            left_out_count=self.left_out_count + second.left_out_count,
        )

    def report(self, described: Described) -> RunReport:
        """The read-only report of this verdict."""
        return RunReport(
            self.stream,
            self.conclusion,
            tuple(self.failures),
            files_changed=tuple(self.files_changed),
            notes=tuple(self.notes),
            stderr=self.stderr,
            exit_code=self.exit_code,
            transcript_file=described.transcript_file,
            transcript_artifact=described.transcript_artifact,
            transcript_temporary=described.transcript_temporary,
            preset=described.preset,
            prompt=described.prompt,
            isolation=self.isolation,
            isolation_details=self.isolation_details,
            isolation_warning=self.isolation_warning,
            structured_output=self.structured_output,
            network=self.network,
            api_key_in_box=self.api_key_in_box,
            api_key_note=self.api_key_note,
            key_relay=self.key_relay,
            left_out=tuple(self.left_out),
            left_out_count=self.left_out_count,
        )


def _sum(first: int | None, second: int | None) -> int | None:
    return None if first is None and second is None else (first or 0) + (second or 0)


def _both(first: StreamResult, second: StreamResult) -> StreamResult:
    """The streams of a run and its follow-up turn as one (the second's answer)."""
    return dataclasses.replace(
        second,
        session_id=second.session_id or first.session_id,
        model=first.model or second.model,
        cwd=first.cwd or second.cwd,
        duration_ms=_sum(first.duration_ms, second.duration_ms),
        input_tokens=_sum(first.input_tokens, second.input_tokens),
        output_tokens=_sum(first.output_tokens, second.output_tokens),
        cache_read_tokens=_sum(first.cache_read_tokens, second.cache_read_tokens),
        cache_write_tokens=_sum(first.cache_write_tokens, second.cache_write_tokens),
        tool_calls=(*first.tool_calls, *second.tool_calls),
        files_changed=tuple(sorted({*first.files_changed, *second.files_changed})),
        malformed_lines=first.malformed_lines + second.malformed_lines,
        interactions=(*first.interactions, *second.interactions),
        interactions_left_out=first.interactions_left_out + second.interactions_left_out,
        notices=(*first.notices, *second.notices),
        notices_left_out=first.notices_left_out + second.notices_left_out,
    )
