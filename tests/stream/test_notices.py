"""The agent's questions and prompts (``interaction_query``) and the CLI's system notices:
parsed leniently, paired request to response, kept within a cap, shown in the log and the
summary as untrusted text. Fixtures of our own, after the shapes in docs/cli-compat.md."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.engine import process_stream
from cursor_agent_action.stream.events import InteractionEvent, SystemEvent, parse_line
from cursor_agent_action.stream.notices import INTERACTIONS_KEPT, Interaction
from cursor_agent_action.stream.render.report import report
from cursor_agent_action.stream.render.summary import render_summary
from tests.stream.test_summary import DANGEROUS, rendered_markup
from tests.support.runner import RUNNER_ENV
from tests.support.stream import processed_commands

INIT = {"type": "system", "subtype": "init", "session_id": "s", "cwd": "/w"}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "ok"}


def _stream(*events: dict[str, Any], usage: dict[str, Any] | None = None) -> bytes:
    result = dict(RESULT, **({"usage": usage} if usage is not None else {}))
    return "".join(json.dumps(e) + "\n" for e in (INIT, *events, result)).encode()


def _request(query_type: str, args: dict[str, Any], query_id: Any = 1) -> dict[str, Any]:
    return {"type": "interaction_query", "subtype": "request", "query_type": query_type,
            "query": {"id": query_id, query_type: {"args": args}}}  # fmt: skip


def _response(query_type: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"type": "interaction_query", "subtype": "response", "query_type": query_type,
            "response": response}  # fmt: skip


SKIPPED = {"rejected": {"reason": "Questions skipped by the user"}}


def test_a_question_request_and_its_response_parse_to_text_and_answer() -> None:
    request = parse_line(json.dumps(_request("askQuestionInteractionQuery",
                                             {"title": "Which branch?"}, 7)).encode())  # fmt: skip
    assert request == InteractionEvent("request", "askQuestionInteractionQuery", "7",
                                       "Which branch?")  # fmt: skip
    response = parse_line(json.dumps(_response(
        "askQuestionInteractionQuery", {"id": 7, "result": SKIPPED})).encode())
    assert response == InteractionEvent("response", "askQuestionInteractionQuery", "7", "",
                                        "rejected", "Questions skipped by the user")  # fmt: skip


def test_other_shapes_of_queries_and_answers() -> None:
    plan = parse_line(json.dumps(_request("createPlanRequestQuery", {"plan": "# Plan"})).encode())
    assert isinstance(plan, InteractionEvent)
    assert plan.text == "# Plan"
    several = _request("askQuestionRequestQuery", {"questions": [{"prompt": "A?"}, "B?"]})
    asked = parse_line(json.dumps(several).encode())
    assert isinstance(asked, InteractionEvent)
    assert asked.text == "A?\nB?"
    nested = _response("webFetchRequestQuery", {"id": 9, "webFetchRequestResponse": {
        "approved": {}}})  # fmt: skip
    answered = parse_line(json.dumps(nested).encode())
    assert isinstance(answered, InteractionEvent)
    assert (answered.answer, answered.query_id) == ("approved", "9")
    for junk in ({"query": "x"}, {"query": {"id": True, "q": []}}, {"response": [1]}):
        event = parse_line(json.dumps({"type": "interaction_query", "subtype": "request",
                                       **junk}).encode())  # fmt: skip
        assert isinstance(event, InteractionEvent)
        assert (event.query_id, event.text) == ("", "")


def test_system_notices_keep_status_and_text_and_unknown_ones_their_name() -> None:
    timeout = {"type": "system", "subtype": "background_shell_timeout", "command": "npm start"}
    assert parse_line(json.dumps(timeout).encode()) == SystemEvent(
        "background_shell_timeout", "", "npm start")
    note = {"type": "system", "subtype": "task_notification", "status": "completed",
            "summary": "done"}  # fmt: skip
    assert parse_line(json.dumps(note).encode()) == SystemEvent("task_notification",
                                                                "completed", "done")
    assert parse_line(b'{"type":"system","subtype":"brand_new","x":1}') == SystemEvent(
        "brand_new")


def test_responses_answer_their_own_request_by_id_then_by_type() -> None:
    record = process_stream(io.BytesIO(_stream(
        _request("askQuestionInteractionQuery", {"title": "first?"}, 1),
        _request("webFetchRequestQuery", {"url": "https://x.test"}, 2),
        _response("askQuestionInteractionQuery", {"id": 1, "result": SKIPPED}),
        _response("webFetchRequestQuery", {"webFetchRequestResponse": {"approved": {}}}),
        _response("shellRequestQuery", {"id": 5, "rejected": {"reason": "no"}}),
    )), None)
    assert list(record.stream.interactions) == [
        Interaction("askQuestionInteractionQuery", "1", "first?", "rejected",
                    "Questions skipped by the user"),
        Interaction("webFetchRequestQuery", "2", "https://x.test", "approved", ""),
        Interaction("shellRequestQuery", "5", "", "rejected", "no"),  # no request seen
    ]  # fmt: skip


def test_questions_beyond_the_cap_are_counted_not_kept() -> None:
    asks = [_request("askQuestionInteractionQuery", {"title": f"q{i}"}, i)
            for i in range(INTERACTIONS_KEPT + 3)]  # fmt: skip
    record = process_stream(io.BytesIO(_stream(*asks)), None)
    assert len(record.stream.interactions) == INTERACTIONS_KEPT
    assert record.stream.interactions_left_out == 3
    summary = render_summary(record, budget_bytes=1024 * 1024)
    assert (f"<summary>Questions and prompts from the agent ({INTERACTIONS_KEPT + 3:,})"
            "</summary>") in summary


def test_a_run_with_a_question_a_timeout_and_cache_tokens_reads_right(tmp_path: Path) -> None:
    data = _stream(
        _request("askQuestionInteractionQuery", {"title": "Which release?"}),
        _response("askQuestionInteractionQuery", {"id": 1, "result": SKIPPED}),
        {"type": "system", "subtype": "background_shell_timeout", "command": "npm run dev"},
        usage={"inputTokens": 10, "outputTokens": 2, "cacheReadTokens": 7,
               "cacheWriteTokens": 0},
    )  # fmt: skip
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, output_file=tmp_path / "out",
                    summary_file=tmp_path / "s")
    record = process_stream(io.BytesIO(data), runner)
    report(record, runner, result_dir=tmp_path)
    outputs = parse_output_file((tmp_path / "out").read_text())
    assert [outputs[f"{k}-tokens"] for k in ("input", "output", "cache-read", "cache-write")] == [
        "10", "2", "7", "0"]  # a reported 0 is 0
    summary = (tmp_path / "s").read_text()
    assert "| question | `Which release?` | `skipped (a headless run answers no questions): " in (
        summary)
    assert "stopped (timed out) | `npm run dev` |" in summary
    warnings = [props for name, props, _ in processed_commands(log.getvalue())
                if name == "warning"]  # fmt: skip
    assert warnings == ["title=background command stopped"]


def test_absent_or_empty_usage_leaves_every_token_output_empty(tmp_path: Path) -> None:
    for usage in (None, {}, {"inputTokens": None, "cacheReadTokens": "n/a"}):
        runner = Runner(stdout=io.StringIO(), env=RUNNER_ENV, output_file=tmp_path / "out",
                        summary_file=tmp_path / "s")  # fmt: skip
        record = process_stream(io.BytesIO(_stream(usage=usage)), runner)
        report(record, runner, result_dir=tmp_path)
        outputs = parse_output_file((tmp_path / "out").read_text())
        assert [outputs[f"{k}-tokens"] for k in ("input", "output", "cache-read",
                                                 "cache-write")] == ["", "", "", ""]
        assert "**Tokens:**" not in (tmp_path / "s").read_text()
        (tmp_path / "out").unlink()


def test_an_agent_question_cannot_inject_workflow_commands_or_markup(tmp_path: Path) -> None:
    """The question, the answer's reason and a notice's text are the agent's or the CLI's:
    in the log inside stop-commands or escaped, in the summary inside code cells."""
    evil = "x\n::error::owned\n::add-mask::y\n</details><img src=x onerror=alert(1)>| a |"
    data = _stream(
        _request("askQuestionInteractionQuery", {"title": evil}),
        _response("askQuestionInteractionQuery", {"id": 1, "rejected": {"reason": evil}}),
        {"type": "system", "subtype": "task_notification", "summary": evil},
        {"type": "system", "subtype": "background_shell_timeout", "command": evil},
        {"type": "system", "subtype": "::warning::x", "status": evil},
    )
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, output_file=tmp_path / "out",
                    summary_file=tmp_path / "s")
    record = process_stream(io.BytesIO(data), runner)
    report(record, runner, result_dir=tmp_path)
    commands = processed_commands(log.getvalue())  # raises on any command we never emit
    assert [name for name, _, _ in commands].count("error") == 0
    outside = rendered_markup((tmp_path / "s").read_text())
    assert not [marker for marker in DANGEROUS if marker in outside]
