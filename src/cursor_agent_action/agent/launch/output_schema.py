"""The workflow's JSON Schema for a structured answer (``output-schema`` /
``output-schema-file``, written as JSON or YAML), read and checked against its own metaschema
when the run is requested: a bad schema never starts the agent. Validation is the
``jsonschema`` library's, imported only when a schema is given (it costs ~60 ms); references to
other documents are never fetched. :mod:`..judge.structured` finds the answer's value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cursor_agent_action.agent.launch import json_yaml
from cursor_agent_action.errors import UsageError
from cursor_agent_action.options import read_input_file

SCHEMA_LIMIT = 256 * 1024
"""Bytes of schema accepted: it goes into the prompt."""


@dataclass(frozen=True)
class OutputSchema:
    """A checked JSON Schema and where it came from (for messages)."""

    schema: Any
    source: str  # "output-schema" or "output-schema-file"

    @property
    def text(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)


def validator_class(schema: Any) -> Any:
    """The jsonschema validator class ``schema`` declares (its ``$schema``)."""
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
        validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        raise UsageError(f"{source} is not a valid JSON Schema: {describe(exc)}.",
                         "Fix the schema; check it with e.g. "
                         "check-jsonschema --check-metaschema.") from exc
    return OutputSchema(schema, source)


def sorted_errors(validator: Any, value: Any) -> list[Any]:
    """Every jsonschema error of ``value``, in the order of their paths."""
    return sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.path])


def describe(error: Any) -> str:
    """``message (at a/b)``: one jsonschema error (or schema error) on one line."""
    where = "/".join(str(part) for part in error.path) or "the top level"
    return f"{one_line(error.message)} (at {where})"


def one_line(message: str, limit: int = 300) -> str:
    """``message`` on one line, at most ``limit`` characters."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 1] + "…"
