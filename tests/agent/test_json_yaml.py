"""output-schema and mcp-config written as YAML: read with a narrowed safe loader, and hostile
documents (alias bombs, deep nesting, tags, merge keys) refused with one clear error naming the
input, after bounded work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cursor_agent_action.agent.launch.json_yaml import MAX_DEPTH, load
from cursor_agent_action.agent.launch.mcp import parse_mcp_config
from cursor_agent_action.agent.launch.output_schema import SCHEMA_LIMIT, OutputSchema, load_schema
from cursor_agent_action.errors import UsageError

LIMIT = 64 * 1024
TRIAGE_YAML = """\
# The answer CI triage wants.
type: object
required: [cause, confidence]
additionalProperties: false
properties:
  cause: {type: string, description: "what broke: one line"}
  confidence:
    type: number
    minimum: 0
    maximum: 1
"""
TRIAGE = {
    "type": "object", "required": ["cause", "confidence"], "additionalProperties": False,
    "properties": {"cause": {"type": "string", "description": "what broke: one line"},
                   "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
}  # fmt: skip


def _refused(text: str, label: str = "output-schema") -> str:
    with pytest.raises(UsageError) as caught:
        load(text, label, limit=LIMIT, hint="Give JSON or YAML.")
    assert caught.value.hint == "Give JSON or YAML."
    return str(caught.value)


def test_a_yaml_schema_is_the_same_schema_as_its_json() -> None:
    assert load_schema(TRIAGE_YAML, "") == OutputSchema(TRIAGE, "output-schema")
    assert load_schema(json.dumps(TRIAGE), "") == OutputSchema(TRIAGE, "output-schema")


def test_a_yaml_schema_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "schema.yml"
    path.write_text(TRIAGE_YAML)
    assert load_schema("", str(path)) == OutputSchema(TRIAGE, "output-schema-file")


def test_a_yaml_mcp_config_is_written_for_the_cli_as_json() -> None:
    text = ("mcpServers:\n  github:\n    command: npx\n    args: [-y, server-github]\n"
            "    env: {GITHUB_TOKEN: '${env:MCP_TOKEN}'}\n")
    config = parse_mcp_config(text, ["MCP_TOKEN"])
    assert config is not None
    assert json.loads(config.text) == {"mcpServers": {"github": {
        "command": "npx", "args": ["-y", "server-github"],
        "env": {"GITHUB_TOKEN": "${env:MCP_TOKEN}"}}}}  # fmt: skip
    assert config.env_names == ("MCP_TOKEN",)


@pytest.mark.parametrize(("text", "value"), [
    # YAML 1.1's surprises are not made: JSON's scalars only (YAML 1.2's core schema).
    ("[yes, no, on, off, y, n]", ["yes", "no", "on", "off", "y", "n"]),
    ("[true, False, TRUE]", [True, False, True]),
    ("[2026-11-25, 12:30:00, 1:20]", ["2026-11-25", "12:30:00", "1:20"]),
    ("[017, 0o17, 0x1F, -5, +3, 1_000]", [17, 15, 31, -5, 3, "1_000"]),
    ("[1.5, .5, 1e3, -2.5E-1, .inf, .nan]", [1.5, 0.5, 1000.0, -0.25, ".inf", ".nan"]),
    ("[~, null, NULL, 'null', '']", [None, None, None, "null", ""]),
    ("a:\nb: ''", {"a": None, "b": ""}),
    ("'<<': quoted", "refused"),
])  # fmt: skip
def test_yaml_scalars_are_read_as_json_would_hold_them(text: str, value: object) -> None:
    if value == "refused":  # a key spelt like a merge key is refused however it is quoted
        assert "merge key" in _refused(f"{{{text}}}")
    else:
        assert load(text, "output-schema", limit=LIMIT, hint="") == value


def test_anchors_and_aliases_are_read() -> None:
    text = "definitions:\n  name: &name {type: string, maxLength: 40}\nproperties:\n  a: *name\n"
    assert load(text, "output-schema", limit=LIMIT, hint="") == {
        "definitions": {"name": {"type": "string", "maxLength": 40}},
        "properties": {"a": {"type": "string", "maxLength": 40}},
    }


@pytest.mark.timeout(20)
def test_a_billion_laughs_is_refused_after_bounded_work() -> None:
    """Nine levels of nine aliases: 387 million strings once expanded, in 700 bytes of YAML.
    PyYAML builds it as shared objects; json.dumps of it (the prompt, mcp.json) would not end."""
    lines = ['a0: &a0 "lol"']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    text = "\n".join(lines) + "\n"
    assert len(text) < 1000
    assert "is over 64 KiB written as JSON, with its aliases expanded" in _refused(text)
    assert "mcp-config is over 64 KiB written as JSON" in _refused(text, "mcp-config")


def test_a_self_referencing_alias_is_refused() -> None:
    assert "an alias refers to itself" in _refused("&loop [*loop]")
    assert "an alias refers to itself" in _refused("&loop {a: *loop}")


@pytest.mark.timeout(20)
@pytest.mark.parametrize("style", ["yaml-flow", "yaml-block", "json"])
def test_deep_nesting_is_refused_by_depth_not_by_a_crash(style: str) -> None:
    """The parsers recurse: 20,000 levels would raise RecursionError (an internal error, or
    worse in C). The YAML reader counts the levels before it recurses; JSON's is caught."""
    depth = 20_000 if style != "yaml-block" else 300
    if style == "yaml-block":
        text = "".join(f"{' ' * i}k:\n" for i in range(depth))
    else:
        text = "[" * depth + "]" * depth
        if style == "yaml-flow":
            text = "# not JSON\n" + text
    message = _refused(text)
    assert f"nests deeper than {MAX_DEPTH} levels" in message


@pytest.mark.parametrize("source", ["json", "yaml"])
def test_the_depth_limit_is_the_same_for_json_and_yaml(source: str) -> None:
    def nested(levels: int) -> str:
        text = "[" * levels + "]" * levels
        return text if source == "json" else f"# yaml\n{text}"

    assert load(nested(MAX_DEPTH), "output-schema", limit=LIMIT, hint="") is not None
    assert f"nests deeper than {MAX_DEPTH} levels" in _refused(nested(MAX_DEPTH + 1))


@pytest.mark.parametrize(("text", "tag"), [
    ("!!python/object/apply:os.system ['touch {marker}']", "tag:yaml.org,2002:python/object"),
    ("type: !!python/name:os.system", "tag:yaml.org,2002:python/name:os.system"),
    ("data: !!binary aGVsbG8=", "tag:yaml.org,2002:binary"),
    ("items: !!set {a, b}", "tag:yaml.org,2002:set"),
    ("type: !custom string", "!custom"),
    ("type: !!str 5", "tag:yaml.org,2002:str"),
])  # fmt: skip
def test_tags_are_refused_and_run_nothing(tmp_path: Path, text: str, tag: str) -> None:
    marker = tmp_path / "ran"
    message = _refused(text.replace("{marker}", str(marker)))
    assert message.startswith(f"output-schema (YAML) uses the tag {tag}")
    assert "write plain JSON values" in message
    assert not marker.exists()


def test_merge_keys_are_refused() -> None:
    text = "base: &base {type: string}\nname:\n  <<: *base\n  maxLength: 4\n"
    assert "uses a merge key (<<), which is not read: write the keys out" in _refused(text)


@pytest.mark.parametrize(("text", "message"), [
    ("1: one", "has a key that is not a string: 1 (quote it)"),
    ("? [a, b]\n: pair", "neither JSON nor YAML: while constructing a mapping, found unhashable"),
    ("a: 1\n---\nb: 2\n", "neither JSON nor YAML: expected a single document in the stream, "
     "but found another document (line 2, column 1)"),
    ("type: [object\nrequired: x", "neither JSON nor YAML"),
    ("a: \x07", "neither JSON nor YAML: unacceptable character #x0007: special characters"),
    ('{"type": "object"', "output-schema is not JSON (Expecting ',' delimiter"),
    # YAML's flow style starts like JSON: both readers' words, the YAML one with its place
    ("{type: [unclosed", "nor YAML (while parsing a flow sequence, expected ',' or ']', "
                         "but got '<stream end>' (line 1, column 17))"),
    ("n: " + "9" * 5000, "neither JSON nor YAML: Exceeds the limit"),
])  # fmt: skip
def test_broken_yaml_gets_one_line_naming_the_input_and_where(text: str, message: str) -> None:
    got = _refused(text)
    assert message in got, got
    assert "\n" not in got.split(" (hint")[0]


def test_yaml_is_held_to_the_same_size_limit_as_json() -> None:
    assert "output-schema is over 64 KiB." in _refused("description: " + "x" * LIMIT)
    assert "output-schema is over 64 KiB." in _refused(json.dumps({"d": "x" * LIMIT}))
    # Within the limit as text, over it once its aliases are expanded.
    text = f"a: &a '{'x' * 9000}'\nb: [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    assert "written as JSON, with its aliases expanded" in _refused(text)


def test_json_that_fits_as_text_fits_as_a_value() -> None:
    """The expanded-size count never refuses JSON its text limit let through, and the YAML-only
    rules (merge keys) do not apply to JSON."""
    many = json.dumps([0] * (LIMIT // 2 - 2), separators=(",", ":"))
    assert len(many) <= LIMIT
    assert load(many, "output-schema", limit=LIMIT, hint="") == [0] * (LIMIT // 2 - 2)
    spaced = json.dumps({"<<": {"k": "v" * 1000}, "list": list(range(2000))}, indent=4)
    assert load(spaced, "output-schema", limit=LIMIT, hint="")["<<"] == {"k": "v" * 1000}


def test_the_schema_limit_applies_to_a_yaml_schema() -> None:
    with pytest.raises(UsageError, match="over 256 KiB"):
        load_schema(f"description: {'x' * SCHEMA_LIMIT}\n", "")


def test_without_the_schema_support_the_error_says_how_to_get_it() -> None:
    """A helper venv built without it (set-up not told about the input): exit code 3 and the
    fix, not a traceback."""
    code = (
        "import importlib.abc, sys\n"
        "class Gone(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] in ('yaml', 'jsonschema'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Gone())\n"
        "from cursor_agent_action.cli import main\n"
        "sys.exit(main(['run', '--prompt', 'x', '--output-schema', 'type: object']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "output-schema needs the schema support (jsonschema, PyYAML)" in done.stdout
    assert "installs the schema support when output-schema" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_reader_is_narrower_than_pyyaml_safe_load() -> None:
    """What the plain safe loader would have let through, for the record."""
    assert yaml.safe_load("[yes, 017, 2026-11-25]")[0] is True
    assert "tag" in _refused("!!set {a}")
