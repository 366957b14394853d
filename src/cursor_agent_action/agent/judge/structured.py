"""Structured output: one JSON value from the agent's answer, checked against the workflow's
JSON Schema (``output-schema`` / ``output-schema-file``, written as JSON or YAML).

The schema is checked when the run is requested (a bad schema never starts the agent). The
prompt gets a short instruction asking for the value in a ```` ```json ```` block at the end of
the answer. From the answer, :func:`candidates` takes every JSON value in a fenced block and
every bare JSON object or array (outside fences), in order; :func:`choose` keeps the last one
that validates, or reports the errors of the last one found. Validation is the ``jsonschema``
library's (imported only when a schema is given: it costs ~60 ms); references to other
documents are never fetched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cursor_agent_action.agent.launch import json_yaml
from cursor_agent_action.errors import UsageError
from cursor_agent_action.options import read_input_file

SCHEMA_LIMIT = 256 * 1024
"""Bytes of schema accepted: it goes into the prompt."""
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


@dataclass(frozen=True)
class OutputSchema:
    """A checked JSON Schema and where it came from (for messages)."""

    schema: Any
    source: str  # "output-schema" or "output-schema-file"

    @property
    def text(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)


def _validator_class(schema: Any) -> Any:
    from jsonschema.validators import validator_for  # noqa: PLC0415 - lazy: ~60 ms, only with a schema

    return validator_for(schema)


def load_schema(inline: str, file: str) -> OutputSchema | None:
    """The schema from ``output-schema`` or ``output-schema-file`` (one at most), checked
    against its own metaschema. Raises :class:`UsageError` naming the input and the fix."""
    if inline.strip() and file.strip():
        raise UsageError("output-schema and output-schema-file were both given.",
                         "Pass the schema one way only.")
    source, text = "output-schema", inline
    if file.strip():
        source = "output-schema-file"
        text = read_input_file(file, source, "UTF-8 JSON or YAML")
    if not text.strip():
        return None
    json_yaml.require_schema_support(source)
    schema = json_yaml.load(text, source, limit=SCHEMA_LIMIT, hint="Give a small JSON Schema as "
                            "JSON or YAML: it is sent to the agent with the prompt.")
    if not isinstance(schema, dict):
        raise UsageError(f"{source} must be a JSON object (a JSON Schema), not "
                         f"{type(schema).__name__}.",
                         'Give e.g. {"type": "object", "properties": {...}}, or in YAML '
                         '"type: object" and "properties:" on lines of their own.')
    from jsonschema.exceptions import SchemaError  # noqa: PLC0415 - lazy: ~60 ms, only with a schema

    try:
        _validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        raise UsageError(f"{source} is not a valid JSON Schema: {describe(exc)}.",
                         "Fix the schema; check it with e.g. "
                         "check-jsonschema --check-metaschema.") from exc
    return OutputSchema(schema, source)


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
    validator = _validator_class(schema.schema)(schema.schema)
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
        shown.append(f"at {path}: {_short(error.message)}")
    if len(errors) > ERRORS_SHOWN:
        shown.append(f"and {len(errors) - ERRORS_SHOWN} more")
    return shown


def sorted_errors(validator: Any, value: Any) -> list[Any]:
    """Every jsonschema error of ``value``, in the order of their paths."""
    return sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.path])


def describe(error: Any) -> str:
    """``message (at a/b)``: one jsonschema error (or schema error) on one line."""
    where = "/".join(str(part) for part in error.path) or "the top level"
    return f"{_short(error.message)} (at {where})"


def _short(message: str, limit: int = 300) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"
