"""No text we did not write acts as a workflow command in the log, in either of the runner's
forms (``::name::`` at a line's start once white space is trimmed, ``##[name]`` anywhere), read
by a port of the runner's own parser (tests/support/runner_commands.py), with every command
name it registers; and ``logsafe.neutral`` is the only way foreign text reaches the log."""

from __future__ import annotations

import ast
import io
import json
import pathlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cursor_agent_action
from cursor_agent_action.agent.contain.box.net import walllog
from cursor_agent_action.agent.contain.box.net.ledger import NetEvent
from cursor_agent_action.logsafe import COMMANDS, neutral
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.engine import StreamProcessor
from tests.support.runner_commands import DOTNET_WHITE, parse, processed

PACKAGE = pathlib.Path(cursor_agent_action.__file__).parent
RUNNER_ENV = {"GITHUB_ACTIONS": "true"}
NAMES = sorted(COMMANDS)


def test_the_port_reads_both_forms_as_the_runner_does() -> None:
    """The port itself (so a pass below means something)."""
    assert parse("::error::x", COMMANDS) == ("error", "x")
    assert parse(" \u3000::Warning file=a::x", COMMANDS) == ("Warning", "x")
    assert parse("anything ##[error]x", COMMANDS) == ("error", "x")
    assert parse("::nope::then ##[add-mask]s3", COMMANDS) == ("add-mask", "s3")
    assert parse("::nope::x", COMMANDS) is None
    assert parse("##[nope]x", COMMANDS) is None
    assert processed("::stop-commands::t1\n::error::a\n##[t1]\n::error::b\n") == [
        ("stop-commands", "t1"), ("t1", ""), ("error", "b")]


def _forms(name: str) -> list[str]:
    upper = name.upper()
    return [f"::{name}::x", f"::{upper} a=b::x", f"{DOTNET_WHITE}::{name}::x",
            f"a ##[{name}]x", f"a ##[{upper} k=v;j=w]x", f"###[{name}]x", f"##[{name}",
            f"a\n::{name}::x", f"a\r::{name}::x", f"a\r\n \t::{name}::x", f"\n##[{name}]x"]


@pytest.mark.parametrize("name", NAMES)
def test_neutral_text_holds_no_command_of_either_form(name: str) -> None:
    for text in _forms(name):
        shown = neutral(text)
        for line in shown.replace("\r", "\n").split("\n"):
            assert parse(line, COMMANDS | {"tok"}) is None, (text, line)
        assert shown.replace("\\", "") == text  # the reader still sees what was written


@given(st.lists(st.sampled_from(["::", "##[", "#", "[", "]", ":", " ", "\t", "\n", "\r",
                                 "\u3000", "\xa0", "error", "stop-commands", "x", "\\"]),
                max_size=20).map("".join))
def test_no_text_once_neutral_parses_as_a_command(text: str) -> None:
    for line in neutral(text).replace("\r", "\n").split("\n"):
        assert parse(line, COMMANDS) is None, line


def _ours_after(write: object) -> list[tuple[str, str]]:
    """What the runner carries out of a log where ``write`` prints foreign text, then we
    print our own ::error::."""
    out = io.StringIO()
    runner = Runner(stdout=out, env=RUNNER_ENV)
    write(runner)  # type: ignore[operator]
    runner.error("ours after")
    runner.flush()
    return processed(out.getvalue())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("method", ["log", "untrusted", "warning", "title", "group",
                                    "entry"])
def test_every_runner_path_keeps_foreign_commands_inert(method: str, name: str) -> None:
    for text in _forms(name):
        def write(runner: Runner, text: str = text) -> None:
            if method == "title":
                runner.warning("m", title=text)
            elif method == "group":
                with runner.group(text):
                    pass
            else:
                getattr(runner, method)(text)

        done = _ours_after(write)
        assert done[-1] == ("error", "ours after"), (method, text, done)
        foreign = [c for c in done if c[0].casefold() not in
                   {"error", "warning", "group", "endgroup", "stop-commands"}
                   and c[1] != ""]
        assert foreign == [], (method, text)
        assert all(c[1] in ("", "m", "ours after") or c[0] in ("stop-commands", "group",
                                                               "warning")
                   for c in done), done


def test_replay_a_refused_dns_name_cannot_stop_the_commands_after_it() -> None:
    """From inside the box: one DNS query for ``##[stop-commands]pwned`` made the helper log
    ``Network: refused ##[stop-commands]pwned ...``, and every command after it (our
    ::error:: and ::add-mask:: too) was ignored."""
    event = NetEvent("refused", "not an allowed name", "##[stop-commands]pwned", "dns",
                     first=True, first_of_run=True)
    done = _ours_after(lambda runner: walllog.live(runner, event))
    assert done == [("error", "ours after")]


def test_replay_the_stream_s_fields_make_no_annotation_or_mask() -> None:
    """With the stream in hand: the init event's model, session id and cwd, a subtype and an
    unknown event type reached the log as they were (``##[warning file=...]``,
    ``##[add-mask]``)."""
    events: list[dict[str, object]] = [
        {"type": "system", "subtype": "init", "session_id": "##[add-mask]s-id",
         "model": "##[warning file=README.md;line=1]pwned", "cwd": "/w ##[error]cwd"},
        {"type": "system", "subtype": "##[warning]sub"},
        {"type": "##[error]kind", "subtype": "##[notice]x"},
        {"type": "result", "subtype": "##[error]done", "is_error": False, "result": "ok"},
    ]
    out = io.StringIO()
    runner = Runner(stdout=out, env=RUNNER_ENV)
    processor = StreamProcessor(runner)
    processor.feed(b"".join(json.dumps(event).encode() + b"\n" for event in events))
    processor.close()
    runner.error("ours after")
    runner.flush()
    done = processed(out.getvalue())
    assert done[-1] == ("error", "ours after")
    assert [c for c in done if "pwned" in c[1] or c[0] in ("add-mask", "notice")] == []
    assert "s-id" in out.getvalue()


# -- the only path ------------------------------------------------------------------------


def _tree(name: str) -> ast.Module:
    return ast.parse((PACKAGE / name).read_text(encoding="utf-8"))


def _is_std_stream(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


NOT_THE_LOG = {
    "agent/contain/probe.py": "the box probe's answer: a pipe the helper reads as JSON",
    "standin/__init__.py": "the stand-in CLI plays the agent: the helper reads its output",
}


def test_nothing_but_the_runner_prints_to_the_log() -> None:
    """No print(), no sys.stdout/sys.stderr write in the package but a constant usage line,
    the internal error's traceback (through neutral) and :data:`NOT_THE_LOG`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("data/"):  # the demo workspace's files, not the package's code
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id == "print":
                found.append(f"{rel}:{node.lineno} print")
            elif (isinstance(func, ast.Attribute) and func.attr == "write"
                  and _is_std_stream(func.value)):
                arg = node.args[0] if node.args else None
                neutralised = (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name)
                               and arg.func.id == "neutral")
                ours = isinstance(arg, ast.Constant)  # a usage line of our own
                if not (neutralised or ours or rel in NOT_THE_LOG):
                    found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    assert found == []


def test_the_runner_writes_foreign_text_only_through_neutral() -> None:
    """In Runner: the log is written only by flush() (which puts every entry's content
    through neutral) and mask() (our ::add-mask:: lines); entries are made only by _write();
    every _write() call's head and tail are our own: literals, the random stop token, the
    command's head (whose property values go through neutral)."""
    runner = next(node for node in _tree("runner_io.py").body
                  if isinstance(node, ast.ClassDef) and node.name == "Runner")
    methods = {node.name: node for node in runner.body if isinstance(node, ast.FunctionDef)}

    def calls(method: ast.FunctionDef, attr: str) -> list[ast.Call]:
        return [node for node in ast.walk(method) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr == attr]

    writers = {name for name, method in methods.items()
               if any(isinstance(c.func, ast.Attribute) and isinstance(c.func.value,
                                                                        ast.Attribute)
                      and c.func.value.attr == "_out" for c in calls(method, "write"))}
    assert writers == {"flush", "mask"}
    assert "neutral(" in ast.unparse(methods["flush"])
    adders = {name for name, method in methods.items() for node in ast.walk(method)
              if isinstance(node, (ast.AugAssign, ast.Call)) and "self._buffer" in (
                  ast.unparse(node.target) if isinstance(node, ast.AugAssign)
                  else ast.unparse(node.func))
              and not ast.unparse(node).endswith(".clear()")}
    assert adders == {"_write"}
    for name, method in methods.items():
        for call in calls(method, "_write"):
            for framing in (call.args[0], *call.args[2:]):
                names = {node.id for node in ast.walk(framing) if isinstance(node, ast.Name)}
                assert isinstance(framing, (ast.Constant, ast.JoinedStr)), (name,
                                                                            ast.unparse(call))
                assert names <= {"token", "head"}, (name, ast.unparse(call))
    assert "escape_property(neutral(" in ast.unparse(methods["command"])


@pytest.mark.parametrize("text", [
    "key -----BEGIN RSA PRIVATE KEY-----",  # the pattern's second form eats white space
    "-----BEGIN PRIVATE KEY-----\nMIIB",
])
def test_a_redaction_never_reaches_the_stop_commands_lines(text: str) -> None:
    """The log's redaction runs over each entry's content, never over our framing: a match
    from an agent text into the next line (once the whole buffer's) joined the closing
    ``::token::`` to the text, and commands stayed stopped for the rest of the step."""
    def write(runner: Runner) -> None:
        runner.untrusted(text)
        runner.log("then -----END PRIVATE KEY----- ours")

    assert _ours_after(write)[-1] == ("error", "ours after")
