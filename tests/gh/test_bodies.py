"""Pull request and comment bodies show no invisible character raw: a bidi override in the
agent's final message or compact summary is ``\\u202e`` there, as in the job summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cursor_agent_action.gh.bodies import compose_body
from cursor_agent_action.redact import Redactor

HIDDEN = "evil\u202egpj.exe, pass\u200bword, \u2067isolate\u2069, \U000e0041"
SHOWN = "evil\\u202egpj.exe, pass\\u200bword, \\u2067isolate\\u2069, \\U000e0041"
SEGMENT = {"type": "assistant", "model_call_id": "m", "message": {"content": [
    {"type": "text", "text": HIDDEN}]}}


def _body(**given: str) -> str:
    sources = {"transcript": "", "final_message": "", "body": "", "body_file": ""}
    return compose_body(**{**sources, **given}, links={"Run": "https://x.example/run"},
                        max_chars=65536, redact=Redactor())


@pytest.mark.parametrize("source", ["final_message", "body", "transcript"])
def test_invisible_characters_are_shown_escaped_in_every_kind_of_body(
    tmp_path: Path, source: str
) -> None:
    if source == "transcript":
        path = tmp_path / "t.jsonl"
        path.write_text(json.dumps(SEGMENT) + "\n" + json.dumps(
            {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5,
             "result": HIDDEN}) + "\n")
        body = _body(transcript=str(path))
    else:
        body = _body(**{source: HIDDEN})
    for char in ("\u202e", "\u2067", "\u2069", "\U000e0041"):
        assert char not in body
    if source == "body":  # your own Markdown: a zero-width space of yours stays
        assert SHOWN.replace("\\u200b", "\u200b") in body
    else:
        assert SHOWN in body


def test_an_escaped_final_message_still_fits_the_limit() -> None:
    body = compose_body(transcript="", final_message="\u202e" * 5000, body="", body_file="",
                        links={}, max_chars=2000, redact=Redactor())
    assert len(body) <= 2000
    assert "\u202e" not in body
