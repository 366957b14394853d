"""The run record: what happened in a run, as the reports need it; built by
:class:`~.aggregate.Aggregator`, rendered by the live log, the job summary and the outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple, get_args

from cursor_agent_action.stream.netreport import NetReport
from cursor_agent_action.stream.notices import Interaction, Notice
from cursor_agent_action.stream.toolcalls import UNKNOWN

ROWS_SHOWN = 500
"""The most tool calls any report lists one by one: the
record keeps each call's details only for the first ones, and for every call that did not
succeed; a later successful call is kept as a shared, detail-free entry of its kind (counted
everywhere, listed nowhere), so 100,000 calls do not cost 100,000 records."""
_NOT_FAILED = frozenset({"success", "pending", UNKNOWN})

Conclusion = Literal["success", "failure", "timeout", "budget", "cancelled"]
"""How a run ended (docs/how-it-works.md, "Conclusions"): a closed set, checked where it is
set."""
CONCLUSIONS: tuple[Conclusion, ...] = get_args(Conclusion)


class CallGroups(NamedTuple):
    """The calls of a record by what became of them (see :meth:`RunRecord.grouped`)."""

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


@dataclass
class RunRecord:
    conclusion: Conclusion = "failure"
    failure_reason: str = ""
    has_result: bool = False
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
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    malformed_lines: int = 0
    # Questions and prompts the agent raised, and the CLI's system notices (capped; how many
    # more there were: the transcript has them).
    interactions: list[Interaction] = field(default_factory=list)
    interactions_left_out: int = 0
    notices: list[Notice] = field(default_factory=list)
    notices_left_out: int = 0
    # Set by `run` before report():
    stderr: str = ""
    exit_code: int | None = None
    transcript_file: str = ""
    transcript_artifact: str = ""  # the artifact the transcript is uploaded as, if any
    transcript_temporary: bool = False  # in the job's RUNNER_TEMP: gone after the job
    preset: str = ""  # the permission preset and whether it writes, e.g. "docs (writes allowed)"
    prompt: str = ""  # the task as given
    isolation: str = ""  # how the agent was contained (agent.isolation.Isolation.label)
    notes: list[str] = field(default_factory=list)
    structured_output: str = ""  # the checked JSON value, compact (run's output-schema)
    network: NetReport | None = None  # the network wall's report (stream/network.py)

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
