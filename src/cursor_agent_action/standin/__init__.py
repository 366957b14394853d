"""A stand-in for the Cursor CLI (``cursor-agent``), for tests and the demo.

Imports: the shared top-level modules only.

The real CLI cannot run without an account and network access, so tests and ``demo`` run this
instead. It parses the print-mode command line the way the real CLI does (same flags, same
errors for an unknown option or a missing prompt) and then plays a *scenario*::

    python -m cursor_agent_action.standin --scenario FILE [cursor-agent args...]

Scenario JSON keys (all optional; relative paths are relative to the scenario file):

``transcript``   JSONL file to replay on stdout; or ``lines``: a list of events (objects are
                 serialised compactly like the CLI does, strings written as-is, e.g. a
                 malformed line). Default: a minimal
                 successful run. The ``system``/``init`` ``cwd`` (and every path under it) is
                 rewritten to the real working directory, as the real CLI would report it.
``chunks``       instead of lines: strings written exactly as given (no newline added, no cwd
                 rewritten), so a line can be split across writes (with ``drip_ms``, reads).
``drip_ms``      delay before each line (or chunk).
``hang_after``   after this many lines, stop writing and wait to be killed (bounded: 10 min).
``ignore_sigterm``  ignore SIGTERM (only SIGKILL stops it).
``crash``        ``{"after": N, "stderr": "...", "exit_code": 1}`` or ``{"after": N, "signal": 9}``:
                 stop after N lines, print ``stderr``, exit (``exit_code`` 0 = exit 0 without a
                 ``result`` event).
``linger_s``     keep running (stdout open) this long after the ``result`` event.
``edits``        ``{"relative/path": "content" | null}``: written (null: deleted) in the working
                 directory (or at an absolute path) just before the ``result`` event, like
                 shell-made changes.
``apply_tool_writes``  carry out the successful write/edit/delete tool calls of the transcript
                 on files under the working directory as they complete, as the real CLI does.
``tamper``       text written to ``.cursor/cli.json`` just before the ``result`` event.
``reject_trust`` behave like builds that reject ``--trust`` (unknown option, not in ``--help``).
``record``       file to which one JSON line per invocation is appended: ``argv``, ``env``,
                 ``stdin`` (text read, or null if stdin was left open), ``cli_json`` (the
                 ``.cursor/cli.json`` seen at start, or null), ``cursor_dir`` (the names in
                 ``.cursor/`` then, or null), ``repo_files`` (every path from the git root
                 down, ``.git`` left out, the configuration the real CLI could read among
                 them), ``cwd``, ``pid``, ``pgid``, ``child_pid``.
``spawn_child``  start a grandchild that sleeps holding stdout/stderr open (its pid is
                 recorded), to check nothing is left running after the run.
``fail_first``   ``{"times": N, "counter": FILE, "stderr": "...", "exit_code": 1}``: the first N
                 runs (counted in FILE) fail like ``crash`` before printing anything.
``exit_code``    exit code after a complete replay (default 0).
``answer``       instead of ``lines``: a minimal successful run answering this text.
``writes``       with ``answer``: ``{"relative/path": "content"}``, each written by a write tool
                 call before the answer (reported in the stream and carried out, as the real
                 CLI's write tool does; ``edits`` are changes made behind the tools' back).
``new_shapes``   instead of ``lines``: a run with every late-2026 shape (a skipped question,
                 a plan prompt, hook refusals, a background command stopped, a task
                 notification, cache tokens).
``sandbox_unavailable``  behave like a runner where the CLI's own sandbox cannot start: unless
                 given ``--sandbox disabled``, print the CLI's "Sandbox mode is enabled but not
                 available" error and exit 1 before any event.
``review_scope`` instead of ``answer``: answer as a reviewer of the diff the prompt (or the
                 file a long prompt was saved to) gives as its scope: findings on the first added
                 lines of its first files, a summary naming its part (``standin/scoped.py``).
``ms_per_kib``   wait this long per KiB of prompt before answering (a model whose time grows
                 with its context; with ``review_scope``, for the review bench).
``resume``       a scenario (its keys replace the outer ones, ``record`` kept) played when the
                 CLI is given ``--resume ID``: the answer of the chat's next turn.

Each recorded invocation also has ``mcp_json`` and ``sandbox_json``: the
``$HOME/.cursor/mcp.json`` and ``$HOME/.cursor/sandbox.json`` the CLI would read (text, or null),
as the real CLI reads user-level MCP servers and sandbox settings from there.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cursor_agent_action.standin.answers import SANDBOX_UNAVAILABLE, SESSION, answer_lines, turn
from cursor_agent_action.standin.cli import HELP, TRUST_HELP, CliExit, parse_cli
from cursor_agent_action.standin.scoped import context_delay, scoped_review

MAX_HANG_S = 600.0
_STDIN_WAIT_S = 1.0

def _read_stdin() -> str | None:
    """What stdin holds, or None when it stays open (the real CLI would wait on it)."""
    selector = selectors.DefaultSelector()
    try:
        selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    except (ValueError, OSError, PermissionError):
        return ""  # closed, or /dev/null on a platform that cannot poll it: nothing to read
    try:
        data = b""
        deadline = time.monotonic() + _STDIN_WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            if not selector.select(left):
                return None
            chunk = os.read(sys.stdin.fileno(), 65536)
            if not chunk:
                return data.decode("utf-8", "replace")
            data += chunk
        return None
    finally:
        selector.close()


def to_json_line(event: object) -> str:
    """An event serialised the way the CLI writes it (compact, UTF-8 unescaped)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


def _default_lines() -> list[Any]:
    return answer_lines("Done.")


def _load_lines(scenario: dict[str, Any], base: Path) -> list[bytes]:
    if "chunks" in scenario:
        return [str(chunk).encode("utf-8") for chunk in scenario["chunks"]]
    if "transcript" in scenario:
        data = (base / str(scenario["transcript"])).read_bytes()
        return data.splitlines(keepends=True)
    items = scenario.get("lines", _default_lines())
    return [
        (item if isinstance(item, str) else to_json_line(item)).encode("utf-8") + b"\n"
        for item in items
    ]


def _rewrite_cwd(lines: list[bytes], cwd: str) -> list[bytes]:
    """Report the real working directory instead of the one recorded in the transcript."""
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("subtype") == "init" and event.get("cwd"):
            old = json.dumps(event["cwd"])[1:-1].encode("utf-8")
            new = json.dumps(cwd)[1:-1].encode("utf-8")
            return [item.replace(old, new) for item in lines]
    return lines


def _is_result(line: bytes) -> bool:
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("type") == "result"


def _apply_tool_write(line: bytes, cwd: Path) -> None:
    """Do what a completed write/edit/delete call reports, for paths inside ``cwd``."""
    try:
        event = json.loads(line)
    except ValueError:
        return
    if not isinstance(event, dict) or event.get("subtype") != "completed":
        return
    calls = event.get("tool_call")
    for key, content_of in _TOOL_WRITES.items():
        inner = calls.get(key) if isinstance(calls, dict) else None
        if not isinstance(inner, dict):
            continue
        args, result = inner.get("args"), inner.get("result")
        success = result.get("success") if isinstance(result, dict) else None
        if not isinstance(args, dict) or not isinstance(success, dict):
            continue
        raw = str(args.get("path", ""))
        if not raw:
            continue
        path = Path(os.path.normpath(cwd / raw))  # relative paths are relative to the cwd
        if not path.is_relative_to(cwd):
            continue
        content = content_of(args, success)
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")


_TOOL_WRITES: dict[str, Callable[[dict[str, Any], dict[str, Any]], str | None]] = {
    "writeToolCall": lambda args, success: str(args.get("fileText", "")),
    "editToolCall": lambda args, success: str(success.get("afterFullFileContent", "")),
    "deleteToolCall": lambda args, success: None,
}


def _apply_changes(scenario: dict[str, Any]) -> None:
    for rel, content in scenario.get("edits", {}).items():
        path = Path(rel)
        if content is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
    if "tamper" in scenario:
        Path(".cursor").mkdir(exist_ok=True)
        Path(".cursor/cli.json").write_text(scenario["tamper"], encoding="utf-8")


def _wait(seconds: float) -> None:
    deadline = time.monotonic() + min(seconds, MAX_HANG_S)
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 1.0))


def _fail(stderr: str, exit_code: int | None = None, sig: int | None = None) -> int:
    if stderr:
        sys.stderr.write(stderr if stderr.endswith("\n") else stderr + "\n")
        sys.stderr.flush()
    if sig is not None:
        os.kill(os.getpid(), sig)
        _wait(MAX_HANG_S)
    return 1 if exit_code is None else exit_code


def _consume_failure(scenario: dict[str, Any], base: Path) -> dict[str, Any] | None:
    """The failure to play for this invocation, counting invocations in the counter file."""
    spec = scenario.get("fail_first")
    if not spec:
        return None
    counter = base / spec["counter"]
    done = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(done + 1))
    return dict(spec) if done < int(spec["times"]) else None


def _record(scenario: dict[str, Any], base: Path, argv: Sequence[str], child: int | None) -> None:
    if "record" not in scenario:
        return
    cli_json = Path(".cursor/cli.json")
    entry = {
        "argv": list(argv),
        "env": dict(os.environ),
        "stdin": _read_stdin(),
        "cli_json": cli_json.read_text(encoding="utf-8") if cli_json.exists() else None,
        "cursor_dir": sorted(os.listdir(".cursor")) if os.path.isdir(".cursor") else None,
        "cwd": os.getcwd(),
        "pid": os.getpid(),
        "pgid": os.getpgrp(),
        "child_pid": child,
        "mcp_json": _home_file("mcp.json"),
        "sandbox_json": _home_file("sandbox.json"),
        "repo_files": _repo_files(),
    }
    with (base / scenario["record"]).open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def _repo_files(limit: int = 5000) -> list[str]:
    """Every path from the git root down (found upwards from the working directory, as the real
    CLI looks for configuration), relative to it, ``.git`` left out; at most ``limit``."""
    root = Path.cwd()
    while not (root / ".git").exists() and root != root.parent:
        root = root.parent
    if not (root / ".git").exists():
        root = Path.cwd()
    found: list[str] = []
    for directory, dirs, files in os.walk(root):  # does not follow links into directories
        dirs[:] = sorted(name for name in dirs if not (directory == str(root) and name == ".git"))
        for name in (*dirs, *sorted(files)):
            found.append(os.path.relpath(os.path.join(directory, name), root))
            if len(found) >= limit:
                return found
    return found


def _home_file(name: str) -> str | None:
    path = Path(os.environ.get("HOME", "/nonexistent")) / ".cursor" / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def play(scenario: dict[str, Any], base: Path, argv: Sequence[str]) -> int:
    """Run one invocation of the stand-in; returns the exit code."""
    accepts_trust = not scenario.get("reject_trust", False)
    try:
        options, words = parse_cli(argv, accepts_trust=accepts_trust)
    except CliExit as exc:
        return _fail(str(exc), exc.code)
    scenario = turn(scenario, options)
    refused = _start(scenario, base, argv, options, words, accepts_trust=accepts_trust)
    if refused is not None:
        return refused
    prompt = " ".join(words)
    if scenario.get("review_scope"):
        session = options["resume"] if isinstance(options.get("resume"), str) else SESSION
        scenario = {**scenario, "lines": answer_lines(scoped_review(prompt), session)}
    if scenario.get("ms_per_kib"):
        _wait(context_delay(prompt, float(scenario["ms_per_kib"])))
    failure = _consume_failure(scenario, base)
    if failure is not None:
        return _fail(failure.get("stderr", ""), failure.get("exit_code", 1))
    lines = _load_lines(scenario, base)
    if "chunks" not in scenario:
        lines = _rewrite_cwd(lines, os.getcwd())
    return _replay(scenario, options, lines)


def _start(scenario: dict[str, Any], base: Path, argv: Sequence[str], options: dict[str, Any],
           words: Sequence[str], *, accepts_trust: bool) -> int | None:
    """What the CLI does before its first event: help, its checks of the command line, the
    workspace, the scenario's child and record. An exit code when it stops there."""
    if options.get("help"):
        _write(HELP.format(trust=TRUST_HELP if accepts_trust else "").encode())
        return 0
    if not options.get("print"):
        return _fail("error: the stand-in supports print mode only (-p)", 2)
    if "workspace" in options:
        try:
            os.chdir(options["workspace"])
        except OSError as exc:
            return _fail(f"Error: workspace {options['workspace']}: {exc.strerror}", 1)
    if scenario.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = None
    if scenario.get("spawn_child"):
        child = subprocess.Popen(  # a background process of the agent's, e.g. a shell tool
            [sys.executable, "-c", f"import time; time.sleep({MAX_HANG_S})"],
            stdin=subprocess.DEVNULL,  # keeps stdout and stderr open, as a stray tool would
        ).pid
    _record(scenario, base, argv, child)
    if not " ".join(words).strip():
        return _fail("Error: No prompt provided for print mode", 1)
    if scenario.get("sandbox_unavailable") and options.get("sandbox") != "disabled":
        return _fail(SANDBOX_UNAVAILABLE, 1)
    return None


def _replay(scenario: dict[str, Any], options: dict[str, Any], lines: list[bytes]) -> int:
    """The events, line by line as the scenario says (a crash, a hang, a drip, a linger)."""
    crash = scenario.get("crash")
    drip = float(scenario.get("drip_ms", 0)) / 1000
    for index, line in enumerate(lines):
        if crash is not None and index == int(crash.get("after", 0)):
            return _fail(crash.get("stderr", ""), crash.get("exit_code"), crash.get("signal"))
        if "hang_after" in scenario and index == int(scenario["hang_after"]):
            _wait(MAX_HANG_S)
            return 3
        if drip:
            time.sleep(drip)
        if scenario.get("apply_tool_writes"):
            _apply_tool_write(line, Path.cwd())
        result = _is_result(line)
        if result:
            _apply_changes(scenario)
        _emit(line, options["output-format"], result=result)
        if result and "linger_s" in scenario:
            _wait(float(scenario["linger_s"]))
    if crash is not None:
        return _fail(crash.get("stderr", ""), crash.get("exit_code"), crash.get("signal"))
    return int(scenario.get("exit_code", 0))


def _emit(line: bytes, output_format: str, *, result: bool) -> None:
    """One line as ``--output-format`` shows it: every event, or only the result's text."""
    if output_format == "stream-json":
        _write(line)
    elif result:
        event = json.loads(line)
        _write((event.get("result", "") + "\n").encode() if output_format == "text"
               else json.dumps(event).encode() + b"\n")


def write_wrapper(
    path: Path, scenario_file: Path, *, python: str = "", package_root: Path | None = None
) -> Path:
    """An executable ``cursor-agent`` that runs the stand-in with ``scenario_file``.

    It names the interpreter by absolute path, so it works with a stripped environment. With
    ``python`` and ``package_root`` it runs that interpreter isolated (``-I``) on the stand-in
    found under ``package_root`` (it needs nothing but the standard library): a contained agent
    user can run it where it cannot reach the helper's own interpreter or venv.
    """
    if python and package_root is not None:
        loader = ("import sys; sys.path.insert(0, sys.argv.pop(1)); "
                  "from cursor_agent_action.standin import main; sys.exit(main())")
        command = [python, "-I", "-B", "-c", loader, str(package_root)]
    else:
        command = [sys.executable, "-m", "cursor_agent_action.standin"]
    command += ["--scenario", str(scenario_file.resolve())]
    path.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


def copy_package(destination: Path) -> Path:
    """The stand-in's own files (and the package files it imports) under ``destination``, for
    :func:`write_wrapper`'s ``package_root``; readable by every user."""
    source = Path(__file__).resolve().parents[1]  # .../cursor_agent_action
    for relative in ("__init__.py", "standin/__init__.py",
                     "standin/cli.py", "standin/answers.py", "standin/scoped.py",
                     "standin/__main__.py"):
        target = destination / "cursor_agent_action" / relative
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        target.write_bytes((source / relative).read_bytes())
        target.chmod(0o644)
    return destination


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2 or args[0] != "--scenario":
        sys.stderr.write(
            "usage: python -m cursor_agent_action.standin --scenario FILE [args...]\n"
        )
        return 2
    scenario_file = Path(args[1])
    scenario = json.loads(scenario_file.read_text(encoding="utf-8"))
    return play(scenario, scenario_file.parent, args[2:])
