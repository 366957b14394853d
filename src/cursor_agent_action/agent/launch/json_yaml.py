"""The value of an input written as JSON or YAML (``output-schema``, ``output-schema-file``,
``mcp-config``): in a workflow file a schema is far easier to write as YAML.

Text that is JSON is read as JSON. Other text is read as YAML with PyYAML's safe loader,
narrowed to what JSON holds: the scalars of YAML 1.2's core schema (``true``/``false``, not
``yes``/``on``; ``017`` is 17; dates stay strings), no tags (``!!binary``, ``!!python/...``,
``!custom``), no merge keys (``<<``), one document. Anchors and aliases are read, and the value
is then measured with every alias expanded: a billion-laughs document is refused after at most
``limit`` bytes of work, a self-referencing one by its depth. Both ways the value must be at
most ``limit`` bytes as JSON and nest at most :data:`MAX_DEPTH` levels. The YAML parser is
PyYAML's pure-Python one (not libyaml): its nesting is counted before it recurses.

PyYAML and jsonschema are the schema support (requirements/schema.txt), installed only for runs
with these inputs: :func:`require_schema_support` says so clearly when they are missing.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar

from cursor_agent_action.errors import SetupError, UsageError

MAX_DEPTH = 64
"""Levels of nested objects and arrays accepted (a schema or an MCP config needs a handful)."""
_MERGE_KEY = "<<"
# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), without .inf/.nan:
# (tag, pattern, first characters).
_RESOLVERS = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$",
        "-+.0123456789",
    ),
)


class _Refused(Exception):
    """A YAML document this reader does not take; the message says why."""


def require_schema_support(label: str) -> None:
    """Raise :class:`SetupError` when jsonschema or PyYAML cannot be imported."""
    try:
        import jsonschema  # noqa: F401, PLC0415 - lazy: installed only for these inputs
        import yaml  # noqa: F401, PLC0415
    except ImportError as exc:
        raise SetupError(
            f"{label} needs the schema support (jsonschema, PyYAML), which this helper's "
            f"Python lacks ({exc}).",
            "Run the action as action.yml does: its set-up installs the schema support when "
            "output-schema, output-schema-file or mcp-config is given. Outside the action: "
            "pip install jsonschema pyyaml.",
        ) from exc


def load(text: str, label: str, *, limit: int, hint: str) -> Any:
    """The JSON or YAML value of input ``label``. Raises :class:`UsageError`."""
    if len(text.encode("utf-8")) > limit:
        raise UsageError(f"{label} is over {limit // 1024} KiB.", hint)
    from_yaml = False
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise UsageError(f"{label} nests deeper than {MAX_DEPTH} levels.", hint) from exc
    except ValueError as json_error:
        require_schema_support(label)
        import yaml  # noqa: PLC0415 - lazy: installed only for these inputs

        from_yaml = True
        try:
            value = _yaml(text)
        except _Refused as exc:
            raise UsageError(f"{label} (YAML) {exc}.", hint) from exc
        except (yaml.YAMLError, ValueError) as exc:  # ValueError: an int over 4,300 digits
            if text.lstrip()[:1] in ("{", "["):  # JSON, or YAML's flow style: both errors
                raise UsageError(f"{label} is not JSON ({json_error}) nor YAML "
                                 f"({_yaml_problem(exc)}).", hint) from json_error
            raise UsageError(f"{label} is neither JSON nor YAML: {_yaml_problem(exc)}.",
                             hint) from exc
    problem = _measure(value, limit, from_yaml=from_yaml)
    if problem:
        raise UsageError(f"{label} {problem}.", hint)
    return value


def _measure(value: Any, limit: int, *, from_yaml: bool) -> str:
    """What makes ``value`` unfit (too deep, too large as compact JSON, not a JSON value), or
    ''. Aliased parts are counted each time they occur; each step counts at least one byte and
    the walk stops at the first problem, so it takes at most ``limit`` steps."""
    budget = [limit]

    def walk(item: Any, depth: int) -> str:
        if isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return f"nests deeper than {MAX_DEPTH} levels" + (
                    " (or an alias refers to itself)" if from_yaml else "")
            budget[0] -= 1 + max(len(item), 1)  # brackets and commas
            pairs = item.items() if isinstance(item, dict) else ((None, v) for v in item)
            for key, member in pairs:
                if isinstance(item, dict):
                    if not isinstance(key, str):
                        return f"has a key that is not a string: {key!r} (quote it)"
                    if from_yaml and key == _MERGE_KEY:
                        return "uses a merge key (<<), which is not read: write the keys out"
                    budget[0] -= len(key.encode("utf-8", "surrogatepass")) + 3
                problem = walk(member, depth + 1)
                if problem:
                    return problem
        elif isinstance(item, str):
            budget[0] -= len(item.encode("utf-8", "surrogatepass")) + 2
        elif isinstance(item, float) and not math.isfinite(item):
            return f"holds {item}, which JSON does not"
        elif item is None or isinstance(item, bool | int | float):
            budget[0] -= len(repr(item)) if isinstance(item, int | float) else 4
        else:
            return f"holds a {type(item).__name__}, which is not a JSON value"
        if budget[0] < 0:
            return f"is over {limit // 1024} KiB written as JSON" + (
                ", with its aliases expanded" if from_yaml else "")
        return ""

    return walk(value, 0)


def _yaml(text: str) -> Any:
    import yaml  # noqa: PLC0415 - lazy: installed only for these inputs

    safe_loader: Any = yaml.SafeLoader  # PyYAML's classes are untyped where this uses them

    class Loader(safe_loader):  # type: ignore[misc]
        yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}  # ours only: see _RESOLVERS
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if not isinstance(event, yaml.AliasEvent) and event.tag is not None:
                raise _Refused(f"uses the tag {event.tag} (line {event.start_mark.line + 1}), "
                               "which is not read: write plain JSON values")
            nests = isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent)
            self.depth += nests
            if self.depth > MAX_DEPTH:
                raise _Refused(f"nests deeper than {MAX_DEPTH} levels")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= nests

    for tag, pattern, first in _RESOLVERS:
        Loader.add_implicit_resolver(tag, re.compile(pattern), list(first))
    Loader.add_constructor("tag:yaml.org,2002:int", _int)
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader, narrowed further


def _int(loader: Any, node: Any) -> int:
    text: str = loader.construct_scalar(node)
    return int(text, 0) if text[:2] in ("0o", "0x") else int(text, 10)


def _yaml_problem(exc: Exception) -> str:
    """A PyYAML error on one line: its context, problem and where."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    problem = f"{context}, {problem}" if context else problem
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"
