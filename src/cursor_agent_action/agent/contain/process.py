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

import os
import selectors
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol, cast

from cursor_agent_action.agent.contain.box.net import walllog
from cursor_agent_action.agent.contain.isolation import BoxResult
from cursor_agent_action.agent.contain.sandbox import Sandbox
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


@dataclass
class AgentExit:
    """How the agent process ended."""

    ended_by: str  # "result" (a result event arrived) | "exit" | "timeout" | "cancelled" | "budget"
    returncode: int | None  # negative: killed by that signal
    stderr: str  # the last STDERR_TAIL_BYTES of stderr
    pgid: int
    transcript_error: str = ""  # why the transcript file is incomplete, "" when it is whole
    box: BoxResult | None = None  # contained: what the box reported
    box_error: str = ""  # contained: why the box ended without a proper status (fails closed)




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
    try:
        transcript.parent.mkdir(parents=True, exist_ok=True)
        mode = os.O_APPEND if append else os.O_TRUNC  # append: a resumed chat's second part
        out_fd = os.open(transcript, os.O_WRONLY | os.O_CREAT | mode, 0o600)
    except OSError as exc:
        raise SetupError(f"cannot create the transcript file {transcript}: "
                         f"{exc.strerror or exc}.",
                         "Point transcript at a writable path (default: under $RUNNER_TEMP).",
                         ) from exc
    transcript_file = TranscriptWriter(out_fd, runner.redact)
    try:
        proc = sandbox.start()
    except OSError as exc:
        transcript_file.close()
        raise SetupError(f"cannot start the Cursor CLI at {sandbox.program}: "
                         f"{exc.strerror or exc}.",
                         f"Check that {setting('--agent-bin')} points at an executable "
                         "cursor-agent.") from exc
    pgid = proc.pid
    stdout, stderr = cast(IO[bytes], proc.stdout), cast(IO[bytes], proc.stderr)
    stdout_fd, stderr_fd = stdout.fileno(), stderr.fileno()
    selector = selectors.DefaultSelector()
    selector.register(stdout_fd, selectors.EVENT_READ)
    selector.register(stderr_fd, selectors.EVENT_READ)
    stderr_tail = bytearray()
    ended_by = ""
    term_at: float | None = None  # when to SIGTERM the group
    kill_at: float | None = None  # when to SIGKILL it
    deadline = time.monotonic() + timeout_s
    dirty = False
    try:
        while selector.get_map() or proc.poll() is None:
            now = time.monotonic()
            finished = sink.finished  # after its result, a stop or timeout changes no conclusion
            if not ended_by and not finished and (
                stop.is_set() or now >= deadline or sink.over_budget
            ):
                ended_by = (
                    "cancelled" if stop.is_set() else "timeout" if now >= deadline else "budget"
                )
                term_at = now
            if term_at is None and finished:
                term_at = now + (0.0 if stop.is_set() else result_grace_s)
            if proc.returncode is None and proc.poll() is not None:  # once, when it exits
                # only leftover children can keep the pipes open, even during the kill grace
                kill_at = min(kill_at or float("inf"), now + EXIT_DRAIN_S)
            if term_at is not None and now >= term_at:
                sandbox.stop(proc, signal.SIGTERM)
                term_at = float("inf")  # once
                kill_at = min(kill_at or float("inf"), now + kill_grace_s)
            if kill_at is not None and now >= kill_at:
                break
            if sandbox.ends_when_output_closes and not selector.get_map():
                break  # the box closes the agent's output once its namespace is gone: what
                # is left is the box's finish, which sandbox.wait waits for (or stops)
            timers = [t - now for t in (term_at, kill_at) if t is not None]
            if not ended_by:
                timers.append(deadline - now)
            wait = min([_IDLE_FLUSH_S if dirty else _POLL_S, *timers])
            for event in sandbox.network_events():
                walllog.live(runner, event)
            ready = selector.select(max(wait, 0.0))
            if not ready:
                if dirty:
                    runner.flush()
                    dirty = False
                continue
            for key, _ in ready:
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                elif key.fd == stdout_fd:
                    transcript_file.write(chunk)
                    sink.feed(chunk)
                    dirty = True
                    runner.maybe_flush()
                else:
                    stderr_tail += chunk
                    del stderr_tail[:-STDERR_TAIL_BYTES]
    finally:
        # Whatever happened, nothing the agent started outlives the run.
        sandbox.stop(proc, signal.SIGKILL)
        sandbox.wait(proc, kill_grace_s, stop)
        sandbox.close(proc)
        selector.close()
        stdout.close()
        stderr.close()
        transcript_file.close()
        runner.flush()
    if not ended_by:
        ended_by = "result" if sink.finished else "exit"
    ended = AgentExit(ended_by=ended_by, returncode=proc.returncode,
                      stderr=stderr_tail.decode("utf-8", "replace"), pgid=pgid,
                      transcript_error=transcript_file.error)
    stopped = stop.is_set() or ended_by in ("timeout", "cancelled", "budget")
    ending = sandbox.result(proc.returncode, stopped=stopped)
    ended.returncode, ended.box, ended.box_error = ending.returncode, ending.box, ending.box_error
    return ended
