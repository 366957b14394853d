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


def test_a_transcript_s_secret_is_redacted_before_the_message_is_cut(tmp_path: Path) -> None:
    """The stream keeps a short final message as the agent wrote it (only long segments are
    redacted as they come): cut to fit ``max_chars`` first and redacted after, a known
    secret's first characters would be left in the body."""
    secret = "S3cr3tV4lue" + "Q" * 20 + "END"
    redact = Redactor()
    redact.add(secret)
    say = {"type": "assistant", "session_id": "s", "message": {"role": "assistant", "content": [
        {"type": "text", "text": f"the key is {secret}, keep it"}]}}
    done = {"type": "result", "subtype": "success", "is_error": False, "result": "ok",
            "session_id": "s"}
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text(json.dumps(say) + "\n" + json.dumps(done) + "\n")
    for max_chars in range(250, 420, 3):  # the cut falls before, inside and after the secret
        body = compose_body(transcript=str(transcript), final_message="", body="",
                            body_file="", links={}, max_chars=max_chars, redact=redact)
        assert "S3cr3t" not in body, max_chars
        assert len(body) <= max_chars
