"""The run's answer against ``output-schema``: checked, asked for once more, and set as the
``structured-output`` outputs.

:func:`with_structured_output` takes the first run's verdict; when its answer holds no value
that validates, it asks the agent once more in the same chat (the caller's ``ask_again``:
``--resume``) with the validation errors, and checks that answer. The two turns are one run in
the report: tool calls, files and tokens of both, the second turn's answer.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

from cursor_agent_action.agent.judge.structured import choose, fix_prompt
from cursor_agent_action.agent.judge.verdict import Verdict
from cursor_agent_action.agent.launch.output_schema import OutputSchema
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.record import Cause
from cursor_agent_action.stream.render.report import write_state_file

OUTPUT_LIMIT = 64 * 1024
"""Bytes of ``structured-output`` (the file always has the whole value)."""


def _answer(verdict: Verdict) -> str:
    # The result is every segment joined: a value followed by a closing remark is still found.
    return verdict.stream.result_text or verdict.stream.final_message


def with_structured_output(
    schema: OutputSchema, verdict: Verdict, runner: Runner,
    ask_again: Callable[[str], Verdict],
) -> Verdict:
    """``verdict`` with the checked answer, or failed saying why."""
    value, errors = choose(schema, _answer(verdict))
    if errors and not verdict.stream.session_id:  # no chat to resume: asking anew loses the work
        verdict.fail(Cause.ANSWER, one_line(
            f"The agent's answer does not match {schema.source}: {'; '.join(errors)}. It could "
            "not be asked again: the CLI reported no session id to resume. Fix: make the "
            "schema easier to meet, or say in the prompt what each field means.", 2000))
        return verdict
    if errors:
        runner.warning(one_line(f"The answer does not match {schema.source}: "
                                f"{'; '.join(errors)}. Asking the agent once more.", 1500),
                       title="structured output")
        second = ask_again(fix_prompt(schema, errors))
        first_errors = errors
        verdict = verdict.followed_by(second)
        verdict.notes.append(one_line(
            f"The first answer did not match {schema.source} ({'; '.join(first_errors)}); the "
            "agent was asked once more in the same chat.", 1000))
        if not verdict.succeeded:
            return verdict
        value, errors = choose(schema, _answer(second))
        if errors:
            verdict.fail(Cause.ANSWER, one_line(
                f"The agent's answer does not match {schema.source}, also after it was asked "
                f"once more: {'; '.join(errors)}. Fix: make the schema easier to meet (fewer "
                "required fields, plain types), or say in the prompt what each field means; "
                "the result output has the answer as it was.", 2000))
            return verdict
    verdict.answered(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    return verdict


def structured_outputs(verdict: Verdict, state_dir: Path,
                       redact: Callable[[str], str] | None) -> dict[str, str]:
    """``structured-output`` (compact JSON, "" when too large: see the file, and a note in the
    verdict, so call it before the report) and ``structured-output-file``; "" without a value."""
    value = redact(verdict.structured_output) if redact else verdict.structured_output
    if not value:
        return {"structured-output": "", "structured-output-file": ""}
    path = ""
    with contextlib.suppress(OSError):
        path = write_state_file(state_dir, "structured-output-", ".json",
                                (value + "\n").encode("utf-8"))
    if len(value.encode("utf-8")) > OUTPUT_LIMIT:
        verdict.notes.append(f"The structured output is over {OUTPUT_LIMIT // 1024} KiB: the "
                             "structured-output output is empty; read structured-output-file.")
        value = ""
    return {"structured-output": value, "structured-output-file": path}
