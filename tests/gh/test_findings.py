"""The findings schema (review/findings.schema.json) and the review command's own reading of
an answer agree; the schema is usable as the run's output-schema-file; the diff parser agrees
with the loopback API's independent one on generated patches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from cursor_agent_action.agent.launch.output_schema import load_schema
from cursor_agent_action.errors import UsageError
from cursor_agent_action.gh.review.diffmap import parse_patch
from cursor_agent_action.gh.review.findings import parse
from tests.support.github_server import _diff_lines

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "review" / "findings.schema.json"
GOOD = {"path": "a.py", "line": 3, "severity": "minor", "title": "t", "body": "b"}


def _answer(**finding: Any) -> dict[str, Any]:
    return {"summary": "s", "verdict": "comment", "findings": [{**GOOD, **finding}]}


CASES = [
    (_answer(), True),
    (_answer(start_line=1, side="LEFT", suggestion="x"), True),
    ({"summary": "s", "verdict": "approve", "findings": []}, True),
    (_answer(line=0), False),
    (_answer(line="3"), False),
    (_answer(line=True), False),
    (_answer(side="BOTH"), False),
    (_answer(severity="blocker"), False),
    (_answer(title=""), False),
    (_answer(path=""), False),
    (_answer(extra=1), False),
    (_answer(body="x" * 8001), False),
    (_answer(suggestion=None), False),
    ({"summary": "s", "verdict": "merge", "findings": []}, False),
    ({"summary": "s", "verdict": "comment"}, False),
    ({"summary": "s", "verdict": "comment", "findings": [], "more": 1}, False),
    ([], False),
]


def test_the_schema_is_a_valid_json_schema_by_check_jsonschema() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "check-jsonschema"), "--check-metaschema",
         str(SCHEMA_FILE)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_is_accepted_as_output_schema_file() -> None:
    loaded = load_schema("", str(SCHEMA_FILE))
    assert loaded is not None
    assert loaded.source == "output-schema-file"


@pytest.mark.parametrize(("answer", "valid"), CASES)
def test_schema_and_reader_agree(answer: Any, valid: bool) -> None:
    schema = json.loads(SCHEMA_FILE.read_text())
    assert Draft202012Validator(schema).is_valid(answer) is valid
    if valid:
        parse(answer, "findings")
    else:
        with pytest.raises(UsageError):
            parse(answer, "findings")


_LINE = st.sampled_from(["+", "-", " "]).map(lambda kind: kind + "x")


@st.composite
def patches(draw: st.DrawFn) -> str:
    old = new = 1
    hunks = []
    for _ in range(draw(st.integers(1, 4))):
        old += draw(st.integers(0, 30))
        new = old + draw(st.integers(-5, 5)) if old > 6 else old
        body = draw(st.lists(_LINE, min_size=1, max_size=12))
        removed = sum(line[0] in "- " for line in body)
        added = sum(line[0] in "+ " for line in body)
        hunks.append(f"@@ -{old},{removed} +{new},{added} @@ ctx\n" + "\n".join(body))
        old, new = old + removed, new + added
    return "\n".join(hunks)


@given(patches())
def test_line_maps_agree_with_an_independent_parser(patch: str) -> None:
    ours = parse_patch("f", patch)
    theirs = _diff_lines([{"filename": "f", "patch": patch}], "f")
    mapped = {("RIGHT", n): h for n, h in ours.right.items()}
    mapped |= {("LEFT", n): h for n, h in ours.left.items()}
    assert mapped == theirs


def test_a_huge_value_in_the_answer_makes_no_huge_error() -> None:
    """A verdict of 3,000,000 characters: the error quotes a few hundred of them."""
    with pytest.raises(UsageError) as info:
        parse({"summary": "s", "verdict": "a" * 3_000_000, "findings": []}, "findings")
    assert len(info.value.message) < 600
    assert "verdict must be one of" in info.value.message


def test_the_same_finding_twice_on_the_same_lines_is_kept_once() -> None:
    again = {**GOOD, "body": "worded otherwise"}
    elsewhere = {**GOOD, "line": 9}
    answer = parse({"summary": "s", "verdict": "comment", "findings": [GOOD, again, elsewhere]},
                   "findings")
    assert [(f.line, f.body) for f in answer.findings] == [(3, "b"), (9, "b")]
