"""The run's answer against ``output-schema``: checked, asked for once more, and set as the
``structured-output`` outputs.

:func:`with_structured_output` takes the first run's record; when its answer holds no value
that validates, it asks the agent once more in the same chat (the caller's ``ask_again``:
``--resume``) with the validation errors, and checks that answer. The two turns are one run in
the report: tool calls, files and tokens of both, the second turn's answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from cursor_agent_action.agent.structured import OutputSchema, choose, fix_prompt
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.record import RunRecord
from cursor_agent_action.stream.report import write_state_file

OUTPUT_LIMIT = 64 * 1024
"""Bytes of ``structured-output`` (the file always has the whole value)."""


def _answer(record: RunRecord) -> str:
    # The result is every segment joined: a value followed by a closing remark is still found.
    return record.result_text or record.final_message


def with_structured_output(
    schema: OutputSchema, record: RunRecord, runner: Runner,
    ask_again: Callable[[str], RunRecord],
) -> RunRecord:
    """``record`` with ``structured_output`` set, or concluded ``failure`` saying why."""
    value, errors = choose(schema, _answer(record))
    if errors and not record.session_id:  # no chat to resume: asking anew would lose the work
        record.conclusion = "failure"
        record.failure_reason = one_line(
            f"The agent's answer does not match {schema.source}: {'; '.join(errors)}. It could "
            "not be asked again: the CLI reported no session id to resume. Fix: make the "
            "schema easier to meet, or say in the prompt what each field means.", 2000)
        return record
    if errors:
        runner.warning(one_line(f"The answer does not match {schema.source}: "
                                f"{'; '.join(errors)}. Asking the agent once more.", 1500),
                       title="structured output")
        second = ask_again(fix_prompt(schema, errors))
        first_errors = errors
        record = combine(record, second)
        record.notes.append(one_line(
            f"The first answer did not match {schema.source} ({'; '.join(first_errors)}); the "
            "agent was asked once more in the same chat.", 1000))
        if record.conclusion != "success":
            return record
        value, errors = choose(schema, _answer(second))
        if errors:
            record.conclusion = "failure"
            record.failure_reason = one_line(
                f"The agent's answer does not match {schema.source}, also after it was asked "
                f"once more: {'; '.join(errors)}. Fix: make the schema easier to meet (fewer "
                "required fields, plain types), or say in the prompt what each field means; "
                "the result output has the answer as it was.", 2000)
            return record
    record.structured_output = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return record


def _sum(first: int | None, second: int | None) -> int | None:
    return None if first is None and second is None else (first or 0) + (second or 0)


def combine(first: RunRecord, second: RunRecord) -> RunRecord:
    """One record for a run and its follow-up turn."""
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
        tool_calls=[*first.tool_calls, *second.tool_calls],
        files_changed=sorted({*first.files_changed, *second.files_changed}),
        malformed_lines=first.malformed_lines + second.malformed_lines,
        interactions=[*first.interactions, *second.interactions],
        interactions_left_out=first.interactions_left_out + second.interactions_left_out,
        notices=[*first.notices, *second.notices],
        notices_left_out=first.notices_left_out + second.notices_left_out,
        notes=[*first.notes, *second.notes],
        isolation=first.isolation or second.isolation,
    )


def structured_outputs(record: RunRecord, state_dir: Path,
                       redact: Callable[[str], str] | None) -> dict[str, str]:
    """``structured-output`` (compact JSON, "" when too large: see the file, and a note in the
    record, so call it before the report) and ``structured-output-file``; "" without a value."""
    value = redact(record.structured_output) if redact else record.structured_output
    if not value:
        return {"structured-output": "", "structured-output-file": ""}
    path = ""
    with contextlib.suppress(OSError):
        path = write_state_file(state_dir, "structured-output-", ".json",
                                (value + "\n").encode("utf-8"))
    if len(value.encode("utf-8")) > OUTPUT_LIMIT:
        record.notes.append(f"The structured output is over {OUTPUT_LIMIT // 1024} KiB: the "
                            "structured-output output is empty; read structured-output-file.")
        value = ""
    return {"structured-output": value, "structured-output-file": path}
