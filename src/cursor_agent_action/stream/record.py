"""What a run's report holds, read-only: the stream's :class:`StreamResult` (built by
:class:`~.aggregate.Aggregator`), and the one :class:`RunReport` a run (or ``summarize``) makes
of it, with a :class:`Conclusion` and the :class:`Failure` list it follows from; the live log,
the job summary and the outputs only read them."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple

from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.notices import Interaction, Notice
from cursor_agent_action.stream.toolcalls import UNKNOWN
from cursor_agent_action.stream.wallreport import NetReport

ROWS_SHOWN = 500
"""The most tool calls any report lists one by one: the
record keeps each call's details only for the first ones, and for every call that did not
succeed; a later successful call is kept as a shared, detail-free entry of its kind (counted
everywhere, listed nowhere), so 100,000 calls do not cost 100,000 records."""
_NOT_FAILED = frozenset({"success", "pending", UNKNOWN})


class Conclusion(str, enum.Enum):
    """How a run ended (docs/how-it-works.md, "Conclusions"): a closed set. Shown and output
    as its value."""

    SUCCESS = "success"
    FAILURE = "failure"
    TIMEOUT = "timeout"
    BUDGET = "budget"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:  # as its value: equal to it, so found by it in a mapping
        return hash(self.value)


CONCLUSIONS: tuple[str, ...] = tuple(conclusion.value for conclusion in Conclusion)


class Cause(enum.Enum):
    """What a :class:`Failure` is about."""

    AGENT = "the agent's result said it failed"
    NO_RESULT = "the stream ended without a result"
    STOPPED = "the action stopped the agent (timeout, budget, cancel)"
    TAMPERED = "the agent changed the CLI's configuration"
    GUARDED_FILES = "the agent changed the git config or the runner's file commands"
    BOX = "the box ended without a status, or its changes could not come back"
    REFUSED_CHANGES = "the agent changed files no run may change (protected, links, includes)"
    POLICY = "the agent wrote where its permissions do not allow"
    UNCHECKED = "the changes could not be checked"
    ANSWER = "the answer does not match the output schema"
    KEY = "the agent wrote the API key out, in some form"
    CREDENTIALS = "the relay could not use the API key for the agent"


@dataclass(frozen=True)
class Failure:
    """One reason the run failed, in the user's words (with its fix)."""

    cause: Cause
    message: str


class CallGroups(NamedTuple):
    """The calls of a record by what became of them (see :meth:`StreamResult.grouped`)."""

    failed: list[ToolCallRecord]
    denied: list[ToolCallRecord]
    hook_denied: list[ToolCallRecord]
    unknown: list[ToolCallRecord]
    pending: list[ToolCallRecord]


@dataclass(slots=True)  # one per call: a run can make 100,000
class ToolCallRecord:
    call_id: str  # raw id (may contain "\n"): never print raw
    kind: str
    target: str
    outcome: str  # "success", "error", "rejected", ..., "pending", "unknown" (no result)
    detail: str = ""
    exit_code: int | None = None
    duration_ms: int | None = None
    started_at_ms: int | None = None  # stream timestamp of `started`, for the duration fallback
    refused_by: str = ""  # "policy", "hook" or "" (see toolcalls.refusal)

    @property
    def failed(self) -> bool:
        """It ran and failed: not a success, not still pending, not of unknown outcome, and not
        refused (a refusal is counted as such, once)."""
        return self.outcome not in _NOT_FAILED and not self.refused_by

    @property
    def denied(self) -> bool:
        """The permission policy refused it."""
        return self.refused_by == "policy"

    @property
    def hook_denied(self) -> bool:
        """A hook refused it."""
        return self.refused_by == "hook"


@dataclass(frozen=True)
class StreamResult:
    """What the stream said, and nothing else: built once by the aggregator, never changed.

    ``failure`` is the stream's own verdict: "" when its result event said success, else why
    not (an error result, no result, no events at all)."""

    has_result: bool = False
    failure: str = "the stream has not been read"
    session_id: str = ""
    request_id: str = ""
    model: str = ""
    cwd: str = ""
    duration_ms: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    result_text: str = ""
    final_message: str = ""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    files_changed: tuple[str, ...] = ()  # as the write tools reported them
    malformed_lines: int = 0
    # Questions and prompts the agent raised, and the CLI's system notices (capped; how many
    # more there were: the transcript has them).
    interactions: tuple[Interaction, ...] = ()
    interactions_left_out: int = 0
    notices: tuple[Notice, ...] = ()
    notices_left_out: int = 0

    @property
    def succeeded(self) -> bool:
        return self.has_result and not self.failure

    def grouped(self) -> CallGroups:
        """The calls sorted by what became of them, in one pass (the reports need several
        lists of up to 100,000 calls: call this once and share it)."""
        groups = CallGroups([], [], [], [], [])
        for call in self.tool_calls:
            if call.outcome == "success" and not call.refused_by:  # most calls: in no list
                continue
            if call.failed:
                groups.failed.append(call)
            if call.denied:
                groups.denied.append(call)
            elif call.hook_denied:
                groups.hook_denied.append(call)
            if call.outcome == UNKNOWN:
                groups.unknown.append(call)
            elif call.outcome == "pending":
                groups.pending.append(call)
        return groups


def stream_failures(stream: StreamResult) -> tuple[Failure, ...]:
    """The stream's own verdict as failures (none when its result said success)."""
    if stream.succeeded:
        return ()
    return (Failure(Cause.AGENT if stream.has_result else Cause.NO_RESULT, stream.failure),)


@dataclass(frozen=True)
class LeftOut:
    """A path the agent made (or changed) that did not come back to the working tree, and why
    (too deep, too long, too large, a special file, a link out, ...), in the user's words."""

    path: str
    reason: str


@dataclass(frozen=True)
class RunReport:
    """The one report of a run: what the stream said, how the run concluded and why, and what
    the run itself found (its changes, notes, containment); made once, then only read.

    ``failures`` come newest first: a later check's failure is the first thing the reason
    says."""

    stream: StreamResult
    conclusion: Conclusion
    failures: tuple[Failure, ...] = ()
    files_changed: tuple[str, ...] = ()  # the checked list (git's, or the tools' without git)
    notes: tuple[str, ...] = ()
    stderr: str = ""
    exit_code: int | None = None
    transcript_file: str = ""
    transcript_artifact: str = ""  # the artifact the transcript is uploaded as, if any
    transcript_temporary: bool = False  # in the job's RUNNER_TEMP: gone after the job
    preset: str = ""  # the permission preset and whether it writes, e.g. "docs (writes allowed)"
    prompt: str = ""  # the task as given
    isolation: str = ""  # how the agent was contained (agent.contain.isolation.Isolation.label)
    isolation_details: tuple[str, ...] = ()  # the box's limits, its tree's storage
    isolation_warning: str = ""  # why it was less contained, in full (the annotation is short)
    structured_output: str = ""  # the checked JSON value, compact (run's output-schema)
    network: NetReport | None = None  # the network wall's report (stream/render/wallsection.py)
    api_key_in_box: str = ""  # no, yes-fallback, yes-asked, yes-no-relay ("": not known)
    api_key_note: str = ""  # the same in words, for the summary
    key_relay: MaskReport | None = None  # what the relay saw when it held the key
    left_out: tuple[LeftOut, ...] = ()  # what did not come back (the first of each kind)
    left_out_count: int = 0  # how many paths did not come back, in all

    @property
    def failure_reason(self) -> str:
        """Every failure's message, newest first ("" for a success)."""
        return " ".join(failure.message for failure in self.failures)

    @classmethod
    def of_stream(cls, stream: StreamResult, *, transcript_file: str = "",
                  notes: tuple[str, ...] = ()) -> RunReport:
        """The report of a saved transcript, where the stream is all there is."""
        return cls(stream, Conclusion.SUCCESS if stream.succeeded else Conclusion.FAILURE,
                   stream_failures(stream), files_changed=stream.files_changed, notes=notes,
                   transcript_file=transcript_file)
