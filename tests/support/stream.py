"""Helpers for the stream tests (and tests proving the helpers can fail).

``summarize`` runs the real command line in-process; ``processed_commands`` reads a log the way
the Actions runner does, honouring ``::stop-commands::``, so a test can assert that nothing the
agent wrote became a workflow command.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action.cli import main
from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.stream.aggregate import Aggregator
from cursor_agent_action.stream.events import parse_line
from cursor_agent_action.stream.record import StreamResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Every title our stream code gives an annotation; an injected command would carry another.
OUR_TITLES = frozenset(
    {
        "permission denied",
        "blocked by a hook",
        "background command stopped",
        "malformed stream line",
        "malformed stream lines",
        "cursor-agent: failure",
        "invalid input",
        "job summary not written",
    }
)
_COMMAND = re.compile(r"^::([A-Za-z-]+)(?: ([^:]*))?::(.*)$")


@dataclass
class Summarized:
    code: int
    log: str
    outputs: dict[str, str]
    summary: str
    result_dir: Path


def summarize(tmp_path: Path, transcript: Path | str, *args: str) -> Summarized:
    """Run ``cursor-agent-action summarize`` with output and summary files in ``tmp_path``."""
    output = tmp_path / "github_output"
    summary = tmp_path / "step_summary.md"
    result_dir = tmp_path / "results"
    stdout = io.StringIO()
    argv = ["summarize", str(transcript), "--output-file", str(output)]
    argv += ["--summary-file", str(summary), "--result-dir", str(result_dir), *args]
    with contextlib.redirect_stdout(stdout):
        code = main(argv)
    outputs = parse_output_file(output.read_text("utf-8")) if output.exists() else {}
    text = summary.read_text("utf-8") if summary.exists() else ""
    return Summarized(code, stdout.getvalue(), outputs, text, result_dir)


def _unescape(value: str) -> str:
    for escaped, char in (("%3A", ":"), ("%2C", ","), ("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        value = value.replace(escaped, char)
    return value


def processed_commands(log: str) -> list[tuple[str, str, str]]:
    """(name, properties, message) of each workflow command the runner would process.

    Raises AssertionError for anything our code never emits: an unknown command, an annotation
    title we do not use, an unbalanced group or an unterminated stop-commands block.
    """
    commands: list[tuple[str, str, str]] = []
    stopped: str | None = None
    depth = 0
    for raw in log.split("\n"):
        line = raw.lstrip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        match = _COMMAND.match(line)
        if not match:
            continue
        name, props, message = match.group(1), match.group(2) or "", match.group(3)
        commands.append((name, props, message))
        if name == "stop-commands":
            assert re.fullmatch(r"[0-9a-f]{32}", message), f"weak stop token {message!r}"
            stopped = message
        elif name == "group":
            assert depth == 0, "nested group"
            depth += 1
        elif name == "endgroup":
            assert depth == 1, "endgroup without group"
            depth -= 1
        elif name in ("warning", "error", "notice"):
            title = _unescape(props.removeprefix("title="))
            assert title in OUR_TITLES, f"annotation with foreign title {props!r}: {message!r}"
        else:
            assert name == "add-mask", f"unexpected workflow command {line!r}"
    assert stopped is None, "stop-commands never resumed"
    assert depth == 0, "group never closed"
    return commands


def applied_record(lines: list[bytes]) -> StreamResult:
    """The result ``Aggregator.apply`` builds line by line (no engine, no fast path)."""
    aggregator = Aggregator()
    for line in lines:
        if line.strip():
            aggregator.apply(parse_line(line))
    return aggregator.finish()
