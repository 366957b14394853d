"""Structured output: one JSON value from the agent's answer, checked against the workflow's
JSON Schema (read and checked when the run is requested: :mod:`..launch.output_schema`).

The prompt gets a short instruction asking for the value in a ```` ```json ```` block at the end of
the answer. From the answer, :func:`candidates` takes every JSON value in a fenced block and
every bare JSON object or array (outside fences), in order; :func:`choose` keeps the last one
that validates, or reports the errors of the last one found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from cursor_agent_action.agent.launch.output_schema import (
    OutputSchema,
    one_line,
    sorted_errors,
    validator_class,
)

SEARCH_CHARS = 64 * 1024
"""Of the answer's end searched for JSON: the value is asked for at the end."""
MAX_DECODE_ATTEMPTS = 512
"""Bare ``{``/``[`` tried as the start of a value; bounds the work on a hostile answer."""
ERRORS_SHOWN = 5
_FENCE = re.compile(
    r"^[ \t]*(?P<ticks>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^[ \t]*(?P=ticks)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_DECODER = json.JSONDecoder()


def instruction(schema: OutputSchema) -> str:
    """What is appended to the prompt."""
    return (
        "\n\n---\nWhen you have finished, end your final answer with one JSON value that "
        "matches the JSON Schema below, in a ```json fenced block, and put no other JSON "
        f"after it.\n\n```json\n{schema.text}\n```\n"
    )


def fix_prompt(schema: OutputSchema, errors: list[str]) -> str:
    """The follow-up prompt (same chat) when the answer did not validate."""
    listed = "\n".join(f"- {error}" for error in errors)
    return (
        "Your final answer did not contain a JSON value matching the required JSON Schema:\n"
        f"{listed}\n\nReply with only the corrected JSON value in a ```json fenced block. "
        f"The schema again:\n\n```json\n{schema.text}\n```\n"
    )


def candidates(text: str) -> list[Any]:
    """Every JSON value in the end of ``text``: fenced blocks and bare objects or arrays, in
    the order they appear."""
    text = text[-SEARCH_CHARS:]
    found: list[tuple[int, Any]] = []
    outside: list[tuple[int, str]] = []  # the text between fences, with its offset
    position = 0
    for match in _FENCE.finditer(text):
        outside.append((position, text[position : match.start()]))
        position = match.end()
        try:
            found.append((match.start(), json.loads(match.group("body"))))
        except (ValueError, RecursionError):  # deep nesting: not an answer anyone asked for
            continue
    outside.append((position, text[position:]))
    attempts = [MAX_DECODE_ATTEMPTS]
    for offset, part in outside:
        found.extend((offset + at, value) for at, value in _bare_values(part, attempts))
    return [value for _, value in sorted(found, key=lambda item: item[0])]


def _bare_values(text: str, attempts: list[int]) -> Iterator[tuple[int, Any]]:
    index = 0
    while attempts[0] > 0:
        starts = [at for at in (text.find("{", index), text.find("[", index)) if at >= 0]
        if not starts:
            return
        start = min(starts)
        attempts[0] -= 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            index = start + 1
            continue
        yield start, value
        index = end


def choose(schema: OutputSchema, answer: str) -> tuple[Any, list[str]]:
    """(the last value in ``answer`` that validates, []) or (None, the errors to report)."""
    found = candidates(answer)
    if not found:
        return None, ["the answer holds no JSON value (none in a ```json block, no bare "
                      "object or array)"]
    validator = validator_class(schema.schema)(schema.schema)
    last_errors: list[str] = []
    for value in reversed(found):
        errors = validation_errors(validator, value)
        if not errors:
            return value, []
        last_errors = last_errors or errors
    return None, last_errors


def validation_errors(validator: Any, value: Any) -> list[str]:
    """The first :data:`ERRORS_SHOWN` errors, each as ``at $.path: message``."""
    from referencing.exceptions import Unresolvable  # noqa: PLC0415 - lazy, as jsonschema

    try:
        errors = sorted_errors(validator, value)
    except Unresolvable as exc:
        return [f"the schema refers to {exc} which cannot be resolved (references to other "
                "documents are not fetched)"]
    shown = []
    for error in errors[:ERRORS_SHOWN]:
        path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
        shown.append(f"at {path}: {one_line(error.message)}")
    if len(errors) > ERRORS_SHOWN:
        shown.append(f"and {len(errors) - ERRORS_SHOWN} more")
    return shown
