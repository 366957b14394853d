"""Process control for the agent: its own process group, live output, timeouts, no orphans.

The agent runs in a new session (so its process group holds everything it starts), with stdin
on ``/dev/null`` (a positional prompt with stdin left open can hang the CLI). Its stdout is read
in chunks as it comes, fed to the stream processor and saved to the transcript file byte for
byte, except secrets replaced by ``***`` (the transcript is uploaded and read by later jobs that
have no secrets to redact with); its stderr is kept as a bounded tail. The run ends when the
agent exits, shortly after its ``result`` event (the CLI can linger), at the timeout, or when
the helper is asked to stop; in every case the whole process group is killed before returning.

A descendant that calls ``setsid()`` leaves that group and could outlive the run, then write
the runner's file-command files (``$GITHUB_ENV``...) after they were restored. On Linux the
helper is a child subreaper while the agent runs, so such orphans become its children, and it
kills and reaps them too (:class:`.sandbox.Uncontained`). macOS has no subreaper: there a
descendant that called ``setsid()`` and whose parent exited is not found.
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol, cast

from cursor_agent_action.agent.contain.box.net import walllog
from cursor_agent_action.agent.contain.sandbox import AgentExit, EndedBy, Sandbox
from cursor_agent_action.errors import SetupError
from cursor_agent_action.options import setting
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.framing import MAX_LINE_BYTES

RESULT_GRACE_S = 2.0
"""How long an agent may keep running after its ``result`` event."""

KILL_GRACE_S = 3.0
"""SIGTERM to SIGKILL. Short enough to finish inside the runner's cancellation window
(SIGINT, then SIGTERM 7.5 s later: https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-cancellation)."""

EXIT_DRAIN_S = 0.5
"""After the agent exits, how long its leftover children may hold the output pipes open."""

STDERR_TAIL_BYTES = 64 * 1024
_CHUNK = 64 * 1024
_IDLE_FLUSH_S = 0.01  # the log gets a quiet agent's line within ~10 ms (target: 50 ms)
_POLL_S = 0.1  # upper bound on reacting to a stop request or a deadline


class OutputSink(Protocol):
    """What consumes the agent's stdout (``engine.StreamProcessor``)."""

    def feed(self, chunk: bytes) -> None: ...

    @property
    def finished(self) -> bool: ...

    @property
    def over_budget(self) -> bool: ...


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class TranscriptWriter:
    """The transcript file: the agent's stdout byte for byte, except secrets replaced by ``***``.

    Redaction uses ``redact`` (``Runner.redact``: every secret the runner knows) on complete
    lines, the unit the stream framer uses, so a secret split across two reads is still found;
    the last line is written by :meth:`close` even without its ``\\n``. Bytes that are not UTF-8
    pass through unchanged. A line over ``MAX_LINE_BYTES`` keeps only its first
    ``MAX_LINE_BYTES`` (the rest never stays in memory), as the stream engine cuts it too. A
    failed write (disk full) is kept in :attr:`error` and stops further writes; the run goes
    on.
    """

    def __init__(self, fd: int, redact: Callable[[str], str]) -> None:
        self._fd = fd
        self._redact = redact
        self._pending = bytearray()
        self._dropping = False  # in a line over MAX_LINE_BYTES, past what is kept
        self.error = ""

    def write(self, chunk: bytes) -> None:
        if self._dropping:  # the rest of an over-long line: only its end is looked for
            end = chunk.find(b"\n")
            if end < 0:
                return
            self._dropping = False
            self._emit(b"\n")
            chunk = chunk[end + 1 :]
        end = chunk.rfind(b"\n") + 1  # only the new bytes are searched: a long line stays cheap
        if not end:
            self._pending += chunk
            if len(self._pending) > MAX_LINE_BYTES:  # kept: its start, cut like the engine cuts
                del self._pending[MAX_LINE_BYTES:]
                self._emit(self._pending)
                self._pending = bytearray()
                self._dropping = True
            return
        self._pending += chunk[:end]
        self._emit(self._pending)
        self._pending = bytearray(chunk[end:])

    def close(self) -> None:
        """Write the last partial line and close the file."""
        try:
            if self._pending:
                self._emit(self._pending)
        finally:
            os.close(self._fd)

    def _emit(self, data: bytes | bytearray) -> None:
        if self.error:
            return
        text = data.decode("utf-8", "surrogateescape")  # no copy of the bytes first
        redacted = self._redact(text)
        try:
            _write_all(self._fd, data if redacted == text
                       else redacted.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            self.error = f"{exc.strerror or exc}"


@dataclass(frozen=True)
class Seen:
    """What one turn of the pump saw."""

    now: float
    finished: bool  # the agent's result event has arrived
    stop: bool  # the job was cancelled
    over_budget: bool  # over max-tool-calls
    exited: bool  # the agent's process exited (first seen on this turn)


@dataclass(frozen=True)
class Shutdown:
    """Where stopping the agent stands: why the run ends (None: not stopped by us), when its
    group gets SIGTERM, and when the pump stops waiting for the output pipes."""

    deadline: float  # timeout-minutes from the start
    ended_by: EndedBy | None = None
    term_at: float | None = None
    termed: bool = False
    kill_at: float | None = None

    def wait(self, now: float, idle: float) -> float:
        """How long the pump may wait for output before the next decision."""
        timers = [at - now for at in (None if self.termed else self.term_at, self.kill_at)
                  if at is not None]
        if self.ended_by is None:
            timers.append(self.deadline - now)
        return max(min([idle, *timers]), 0.0)


def next_shutdown(state: Shutdown, seen: Seen, *, result_grace_s: float,
                  kill_grace_s: float) -> tuple[Shutdown, bool, bool]:
    """The pure decision of one turn: (the new state, SIGTERM the group now, stop pumping).

    A stop request, the deadline or the budget ends a run that has no result yet (SIGTERM at
    once); a result ends it after ``result_grace_s`` (at once when the job was cancelled). Once
    the agent exits, only leftover children can hold the pipes: they get ``EXIT_DRAIN_S``.
    SIGTERM is sent once; ``kill_grace_s`` later the pump stops and everything is killed."""
    now, changes = seen.now, {}
    ended_by, term_at, kill_at = state.ended_by, state.term_at, state.kill_at
    if ended_by is None and not seen.finished and (
            seen.stop or now >= state.deadline or seen.over_budget):
        ended_by = (EndedBy.CANCELLED if seen.stop else
                    EndedBy.TIMEOUT if now >= state.deadline else EndedBy.BUDGET)
        term_at = now
    if term_at is None and seen.finished:
        term_at = now + (0.0 if seen.stop else result_grace_s)
    if seen.exited:
        kill_at = now + EXIT_DRAIN_S if kill_at is None else min(kill_at, now + EXIT_DRAIN_S)
    term = not state.termed and term_at is not None and now >= term_at
    if term:
        changes["termed"] = True
        kill_at = now + kill_grace_s if kill_at is None else min(kill_at, now + kill_grace_s)
    new = dataclasses.replace(state, ended_by=ended_by, term_at=term_at, kill_at=kill_at,
                              **changes)
    return new, term, kill_at is not None and now >= kill_at


def _open_transcript(transcript: Path, redact: Callable[[str], str], *,
                     append: bool) -> TranscriptWriter:
    try:
        transcript.parent.mkdir(parents=True, exist_ok=True)
        mode = os.O_APPEND if append else os.O_TRUNC  # append: a resumed chat's second part
        out_fd = os.open(transcript, os.O_WRONLY | os.O_CREAT | mode, 0o600)
    except OSError as exc:
        raise SetupError(f"cannot create the transcript file {transcript}: "
                         f"{exc.strerror or exc}.",
                         "Point transcript at a writable path (default: under $RUNNER_TEMP).",
                         ) from exc
    return TranscriptWriter(out_fd, redact)


@dataclass
class _Pump:
    """The agent's output, read as it comes: stdout to the transcript and the sink, a bounded
    tail of stderr, the wall's refusals to the live log."""

    proc: subprocess.Popen[bytes]
    sandbox: Sandbox
    sink: OutputSink
    runner: Runner
    transcript: TranscriptWriter
    stderr_tail: bytearray = field(default_factory=bytearray)

    def run(self, stop: threading.Event, shutdown: Shutdown, *, result_grace_s: float,
            kill_grace_s: float) -> EndedBy | None:
        """Until the agent and its output are done, or the shutdown gives up on them; why we
        stopped it (None: it ended by itself)."""
        proc, sandbox = self.proc, self.sandbox
        stdout_fd = cast(IO[bytes], proc.stdout).fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(stdout_fd, selectors.EVENT_READ)
            selector.register(cast(IO[bytes], proc.stderr).fileno(), selectors.EVENT_READ)
            dirty = False
            while selector.get_map() or proc.poll() is None:
                exited = proc.returncode is None and proc.poll() is not None  # once, at exit
                seen = Seen(time.monotonic(), self.sink.finished, stop.is_set(),
                            self.sink.over_budget, exited)
                shutdown, term, done = next_shutdown(shutdown, seen, kill_grace_s=kill_grace_s,
                                                     result_grace_s=result_grace_s)
                if term:
                    sandbox.stop(proc, signal.SIGTERM)
                if done:
                    break
                if sandbox.ends_when_output_closes and not selector.get_map():
                    break  # the box closes the agent's output once its namespace is gone: what
                    # is left is the box's finish, which sandbox.wait waits for (or stops)
                for event in sandbox.network_events():
                    walllog.live(self.runner, event)
                wait = shutdown.wait(seen.now, _IDLE_FLUSH_S if dirty else _POLL_S)
                ready = selector.select(wait)
                if ready:
                    dirty = self._read(selector, ready, stdout_fd) or dirty
                elif dirty:  # a quiet moment: the log gets what it holds
                    self.runner.flush()
                    dirty = False
        return shutdown.ended_by

    def _read(self, selector: selectors.BaseSelector,
              ready: list[tuple[selectors.SelectorKey, int]], stdout_fd: int) -> bool:
        """One chunk from each ready pipe; whether stdout gave the log something new."""
        dirty = False
        for key, _ in ready:
            chunk = os.read(key.fd, _CHUNK)
            if not chunk:
                selector.unregister(key.fd)
            elif key.fd == stdout_fd:
                self.transcript.write(chunk)
                self.sink.feed(chunk)
                dirty = True
                self.runner.maybe_flush()
            else:
                self.stderr_tail += chunk
                del self.stderr_tail[:-STDERR_TAIL_BYTES]
        return dirty


def run_agent_process(
    sandbox: Sandbox,
    *,
    sink: OutputSink,
    runner: Runner,
    transcript: Path,
    timeout_s: float,
    stop: threading.Event,
    result_grace_s: float = RESULT_GRACE_S,
    kill_grace_s: float = KILL_GRACE_S,
    append: bool = False,
) -> AgentExit:
    """Run the agent to its end; see the module docstring.

    ``sandbox`` (:mod:`.sandbox`) starts, stops and reports on the agent, contained or not.

    Raises SetupError if the transcript file cannot be created or the agent cannot start. A
    transcript write that fails later (disk full) does not stop the run: the rest of the output
    is still processed and ``AgentExit.transcript_error`` says what happened. The transcript is
    redacted with ``Runner.redact`` (see :class:`TranscriptWriter`).
    """
    transcript_file = _open_transcript(transcript, runner.redact, append=append)
    try:
        proc = sandbox.start()
    except OSError as exc:
        transcript_file.close()
        raise SetupError(f"cannot start the Cursor CLI at {sandbox.program}: "
                         f"{exc.strerror or exc}.",
                         f"Check that {setting('--agent-bin')} points at an executable "
                         "cursor-agent.") from exc
    pump = _Pump(proc, sandbox, sink, runner, transcript_file)
    try:
        stopped_by = pump.run(stop, Shutdown(time.monotonic() + timeout_s),
                              result_grace_s=result_grace_s, kill_grace_s=kill_grace_s)
    finally:
        # Whatever happened, nothing the agent started outlives the run.
        sandbox.stop(proc, signal.SIGKILL)
        sandbox.wait(proc, kill_grace_s, stop)
        sandbox.close(proc)
        cast(IO[bytes], proc.stdout).close()
        cast(IO[bytes], proc.stderr).close()
        transcript_file.close()
        runner.flush()
    ended_by = stopped_by or (EndedBy.RESULT if sink.finished else EndedBy.EXIT)
    ended = AgentExit(ended_by, proc.returncode, pump.stderr_tail.decode("utf-8", "replace"),
                      proc.pid, transcript_file.error)
    return sandbox.result(ended, stopped=stop.is_set() or ended_by.stopped)
