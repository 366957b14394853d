"""structured: the output schema is checked before the run, and the JSON value is found in
whatever the agent answers (fenced or bare, the last one that validates), within bounds."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.agent.judge.structured import (
    MAX_DECODE_ATTEMPTS,
    SEARCH_CHARS,
    candidates,
    choose,
)
from cursor_agent_action.agent.launch.output_schema import OutputSchema, load_schema
from cursor_agent_action.errors import UsageError

TRIAGE = {
    "type": "object",
    "required": ["cause", "confidence"],
    "properties": {"cause": {"type": "string"},
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
}  # fmt: skip
SCHEMA = OutputSchema(TRIAGE, "output-schema")


def test_a_schema_comes_inline_or_from_a_file_never_both(tmp_path: Path) -> None:
    assert load_schema("", "") is None
    assert load_schema(json.dumps(TRIAGE), "") == SCHEMA
    path = tmp_path / "schema.json"
    path.write_text("\ufeff" + json.dumps(TRIAGE))  # an editor's byte-order mark is fine
    assert load_schema("", str(path)) == OutputSchema(TRIAGE, "output-schema-file")
    with pytest.raises(UsageError, match="both given"):
        load_schema("{}", str(path))


@pytest.mark.parametrize(("inline", "message"), [
    ("{not json", "output-schema is not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"type": "strnig"}', "output-schema is not a valid JSON Schema: 'strnig' is not valid"),
    ('{"properties": {"a": {"minimum": "zero"}}}',
     "not a valid JSON Schema: 'zero' is not of type 'number' (at properties/a/minimum)"),
    ('{"type": "object", "description": "' + "x" * 300_000 + '"}', "over 256 KiB"),
])  # fmt: skip
def test_an_invalid_schema_is_refused_naming_the_input(inline: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_schema(inline, "")
    assert message in str(caught.value)
    assert caught.value.hint


def test_an_unreadable_schema_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"output-schema-file: cannot read .*missing\.json"):
        load_schema("", str(tmp_path / "missing.json"))


@pytest.mark.parametrize(("answer", "expected"), [
    ('Done.\n\n```json\n{"cause": "flaky test", "confidence": 0.8}\n```\n',
     {"cause": "flaky test", "confidence": 0.8}),
    ('The cause: {"cause": "timeout", "confidence": 1} and that is all.',
     {"cause": "timeout", "confidence": 1}),
    # The last value that validates wins over an earlier draft and a later non-matching one.
    ('```json\n{"cause": "draft", "confidence": 0.1}\n```\nBetter:\n'
     '```\n{"cause": "final", "confidence": 0.9}\n```\nSee {"other": true}',
     {"cause": "final", "confidence": 0.9}),
    # A fence longer than three backticks, tildes, and JSON that holds backticks.
    ('~~~~json\n{"cause": "a ``` b", "confidence": 0}\n~~~~',
     {"cause": "a ``` b", "confidence": 0}),
])  # fmt: skip
def test_the_value_is_found_fenced_or_bare(answer: str, expected: Any) -> None:
    assert choose(SCHEMA, answer) == (expected, [])


def test_the_errors_are_those_of_the_last_value_found() -> None:
    value, errors = choose(SCHEMA, '{"cause": "x", "confidence": 0.5} then {"cause": 3}')
    assert value == {"cause": "x", "confidence": 0.5}  # the earlier one validates
    value, errors = choose(SCHEMA, 'first {"cause": 1} then {"confidence": 7}')
    assert value is None
    assert errors == ["at $: 'cause' is a required property",
                      "at $.confidence: 7 is greater than the maximum of 1"]


def test_an_answer_without_json_says_so() -> None:
    value, errors = choose(SCHEMA, "I could not find the cause, sorry {not json")
    assert value is None
    assert errors == ["the answer holds no JSON value (none in a ```json block, no bare "
                      "object or array)"]


def test_a_reference_to_another_document_is_never_fetched() -> None:
    schema = OutputSchema({"$ref": "http://127.0.0.1:9/schema.json"}, "output-schema")
    value, errors = choose(schema, '{"a": 1}')
    assert value is None
    assert "cannot be resolved" in errors[0]


def test_a_hostile_answer_costs_bounded_work() -> None:
    """Thousands of unclosed brackets before the answer: only the end is searched, and only
    a bounded number of starts is tried."""
    answer = '{"a": [' * 200_000 + '\n```json\n{"cause": "x", "confidence": 0}\n```'
    started = time.monotonic()
    assert choose(SCHEMA, answer)[0] == {"cause": "x", "confidence": 0}
    assert time.monotonic() - started < 5  # generous: the bound is in the attempts below
    assert MAX_DECODE_ATTEMPTS * SEARCH_CHARS < 10**8


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12,
)  # fmt: skip
_prose = st.text(alphabet=st.characters(blacklist_characters="{}[]`~"), max_size=200)


@given(_prose, st.dictionaries(st.text(max_size=8), _json, max_size=4), _prose,
       st.booleans())
def test_any_object_in_any_prose_is_found(before: str, value: dict[str, Any], after: str,
                                          fenced: bool) -> None:
    text = json.dumps(value)
    body = f"\n```json\n{text}\n```\n" if fenced else text
    assert candidates(before + body + after)[-1] == value


@given(st.text(max_size=500))
def test_any_text_gives_only_json_values_and_never_raises(text: str) -> None:
    for value in candidates(text):
        json.dumps(value)  # a real JSON value
