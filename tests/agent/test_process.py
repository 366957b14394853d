"""Process control: live output, transcript, timeouts, lingering, stop requests, no orphans."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent.contain import process
from cursor_agent_action.agent.contain.process import (
    EXIT_DRAIN_S,
    KILL_GRACE_S,
    RESULT_GRACE_S,
    Seen,
    Shutdown,
    TranscriptWriter,
    next_shutdown,
    run_agent_process,
)
from cursor_agent_action.agent.contain.sandbox import AgentExit, EndedBy, Uncontained
from cursor_agent_action.redact import Redactor
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.standin import to_json_line
from tests.support.clock import HeldClock
from tests.support.standin import make_standin, records, wait_group_gone

ARGS = ["-p", "--output-format", "stream-json", "--", "go"]


class Sink:
    """Collects chunks; finished once a result line arrived (what StreamProcessor reports)."""

    def __init__(self, on_chunk: Any = None) -> None:
        self.chunks: list[bytes] = []
        self.on_chunk = on_chunk

    def feed(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        if self.on_chunk:
            self.on_chunk(self)

    @property
    def finished(self) -> bool:
        return b'"type":"result"' in b"".join(self.chunks)

    over_budget = False


def _run(
    tmp_path: Path, scenario: dict[str, Any], *, sink: Sink | None = None,
    stop: threading.Event | None = None, timeout_s: float = 20,
    result_grace_s: float = RESULT_GRACE_S, kill_grace_s: float = KILL_GRACE_S,
) -> tuple[AgentExit, Sink, float]:
    scenario.setdefault("record", "record.jsonl")
    agent = make_standin(tmp_path, scenario)
    sink = sink or Sink()
    started = time.monotonic()
    result = run_agent_process(
        Uncontained([str(agent), *ARGS], tmp_path, {"PATH": "/usr/bin:/bin"}), sink=sink,
        runner=Runner(stdout=io.StringIO(), env={}), transcript=tmp_path / "t.jsonl",
        timeout_s=timeout_s, stop=stop or threading.Event(), result_grace_s=result_grace_s,
        kill_grace_s=kill_grace_s,
    )
    return result, sink, time.monotonic() - started


def _assert_group_gone(result: AgentExit) -> None:
    assert wait_group_gone(result.pgid) == []


def test_transcript_is_stdout_byte_for_byte_and_fed_live(tmp_path: Path) -> None:
    lines: list[Any] = [{"type": "system", "subtype": "init", "n": i} for i in range(4)]
    lines.insert(2, "not json \u00e9 \t")
    lines.append({"type": "result", "subtype": "success", "result": "ok"})
    result, sink, _ = _run(tmp_path, {"lines": lines, "drip_ms": 30})
    expected = b"".join(
        (item if isinstance(item, str) else to_json_line(item)).encode() + b"\n" for item in lines
    )
    assert (tmp_path / "t.jsonl").read_bytes() == expected
    assert b"".join(sink.chunks) == expected
    assert len(sink.chunks) >= 3  # dripped lines arrive as they come, not at the end
    assert result.ended_by is EndedBy.RESULT
    assert result.returncode == 0
    _assert_group_gone(result)


def _held_until_output(monkeypatch: pytest.MonkeyPatch) -> Sink:
    """A sink, and the deadline's clock held until the first output reaches it: a short
    timeout then falls after the stand-in started (its signal handling set, its first line
    written), however slow the machine is to start it."""
    sink = Sink()
    monkeypatch.setattr(process, "time", HeldClock(lambda: bool(sink.chunks)))
    return sink


def test_hang_is_stopped_at_the_timeout_with_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, sink, elapsed = _run(tmp_path, {"hang_after": 1}, timeout_s=0.5,
                                 sink=_held_until_output(monkeypatch))
    assert result.ended_by is EndedBy.TIMEOUT
    assert result.returncode == -signal.SIGTERM
    assert len(sink.chunks) == 1
    assert elapsed < 5
    _assert_group_gone(result)


def test_agent_ignoring_sigterm_is_killed_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _, elapsed = _run(tmp_path, {"hang_after": 1, "ignore_sigterm": True},
                              timeout_s=0.3, kill_grace_s=0.3,
                              sink=_held_until_output(monkeypatch))
    assert result.ended_by is EndedBy.TIMEOUT
    assert result.returncode == -signal.SIGKILL
    assert elapsed < 5
    _assert_group_gone(result)


def test_lingering_after_result_is_stopped_after_a_short_grace(tmp_path: Path) -> None:
    result, sink, elapsed = _run(tmp_path, {"linger_s": 60}, result_grace_s=0.2)
    assert result.ended_by is EndedBy.RESULT
    assert sink.finished
    assert elapsed < 5
    _assert_group_gone(result)


def test_stop_request_cancels_the_run(tmp_path: Path) -> None:
    stop = threading.Event()
    sink = Sink(on_chunk=lambda _: stop.set())  # the job is cancelled as soon as output arrives
    result, _, elapsed = _run(tmp_path, {"hang_after": 1}, sink=sink, stop=stop)
    assert result.ended_by is EndedBy.CANCELLED
    assert elapsed < 5
    _assert_group_gone(result)


def test_background_children_do_not_outlive_a_normal_exit(tmp_path: Path) -> None:
    result, _, elapsed = _run(tmp_path, {"spawn_child": True})
    [entry] = records(tmp_path)
    assert entry["pgid"] == result.pgid
    assert result.ended_by is EndedBy.RESULT
    assert elapsed < 5  # the child holding stdout open did not keep the run alive
    _assert_group_gone(result)


def test_kill_9_of_the_agent_ends_the_run(tmp_path: Path) -> None:
    result, sink, _ = _run(tmp_path, {"crash": {"after": 2, "signal": 9}, "spawn_child": True})
    assert result.ended_by is EndedBy.EXIT
    assert result.returncode == -signal.SIGKILL
    assert not sink.finished
    assert records(tmp_path)[0]["child_pid"]
    _assert_group_gone(result)


def test_stderr_is_captured_as_a_bounded_tail(tmp_path: Path) -> None:
    message = "x" * 100_000 + "\nAuthentication required"
    result, _, _ = _run(tmp_path, {"crash": {"after": 0, "stderr": message, "exit_code": 1}})
    assert result.returncode == 1
    assert result.stderr.endswith("Authentication required\n")
    assert len(result.stderr) == 64 * 1024


def test_waiting_out_the_kill_grace_does_not_spin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the timeout, waiting for a SIGTERM-ignoring agent sleeps instead of busy-looping."""
    sink = _held_until_output(monkeypatch)
    before = os.times()
    result, _, elapsed = _run(tmp_path, {"hang_after": 1, "ignore_sigterm": True},
                              timeout_s=0.2, kill_grace_s=1.0, sink=sink)
    after = os.times()
    assert result.returncode == -signal.SIGKILL
    assert elapsed >= 1.0
    assert (after.user - before.user) + (after.system - before.system) < 0.5


def test_stop_request_after_the_result_keeps_the_result(tmp_path: Path) -> None:
    stop = threading.Event()

    def cancel_after_result(sink: Sink) -> None:
        if sink.finished:
            stop.set()

    sink = Sink(on_chunk=cancel_after_result)
    result, _, elapsed = _run(tmp_path, {"linger_s": 60}, sink=sink, stop=stop,
                              result_grace_s=30)
    assert result.ended_by is EndedBy.RESULT
    assert elapsed < 10  # stopped at once, not after the 30 s grace
    _assert_group_gone(result)


def test_transcript_writer_redacts_per_line_and_keeps_other_bytes(tmp_path: Path) -> None:
    """Secrets cut across writes are replaced; invalid UTF-8 and the unterminated last line
    are kept as they are."""
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600),
                              Redactor(["sk_live_abcdef"]))
    for chunk in (b"\xff\xfe sk_li", b"ve_abc", b"def ok\n", b"a" * 70000, b"sk_live_", b"abcdef"):
        writer.write(chunk)
    writer.close()
    assert path.read_bytes() == b"\xff\xfe *** ok\n" + b"a" * 70000 + b"***"
    assert writer.error == ""


# An agent whose descendant leaves the process group with setsid(), sleeps 1.5 s, then appends
# to a file (as it would to $GITHUB_ENV after the runner's files were restored). "nested": the
# escaped process forks the writer and waits, so it is found only after its parent is killed.
_ESCAPING_AGENT = """#!{python}
import os, sys, time
mode, marker, pids = sys.argv[1:4]
if os.fork() == 0:
    os.setsid()
    if mode == "nested" and os.fork() != 0:
        os.wait()
        os._exit(0)
    with open(pids + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pids + ".tmp", pids)
    time.sleep(1.5)
    with open(marker, "a") as f:
        f.write("BASH_ENV=/tmp/pwn\\n")
    os._exit(0)
for _ in range(500):  # exit only once the writer is running (bounded: 5 s)
    if os.path.exists(pids):
        break
    time.sleep(0.01)
if mode == "hang":
    time.sleep(60)
"""


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a child subreaper")
@pytest.mark.parametrize("mode", ["exit", "nested", "hang"])
def test_descendants_that_called_setsid_do_not_outlive_the_run(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A descendant that left the process group is killed and reaped before the run returns,
    whether the agent exited or was stopped at the timeout, so it never writes afterwards.
    The 0.2 s timeout counts from the escaped writer's start (its pid file), not the agent's:
    under load the agent was stopped before it forked, and there was no pid to check."""
    agent = tmp_path / "agent"
    agent.write_text(_ESCAPING_AGENT.format(python=sys.executable))
    agent.chmod(0o755)
    marker, pids = tmp_path / "marker", tmp_path / "pids"
    monkeypatch.setattr(process, "time", HeldClock(pids.exists))
    result = run_agent_process(
        Uncontained([str(agent), mode, str(marker), str(pids)], tmp_path, {}), sink=Sink(),
        runner=Runner(stdout=io.StringIO(), env={}), transcript=tmp_path / "t.jsonl",
        timeout_s=0.2 if mode == "hang" else 20, stop=threading.Event(),
    )
    assert result.ended_by is (EndedBy.TIMEOUT if mode == "hang" else EndedBy.EXIT)
    escaped = int(pids.read_text())
    assert not _pid_exists(escaped)
    deadline = time.monotonic() + 2.0  # longer than its sleep
    while time.monotonic() < deadline and not marker.exists():
        time.sleep(0.05)
    assert not marker.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a child subreaper")
def test_children_started_before_the_agent_are_left_alone(tmp_path: Path) -> None:
    """Cleaning up the agent's escaped descendants does not touch the caller's own children."""
    own = [subprocess.Popen(["sleep", "30"], start_new_session=new) for new in (True, False)]
    try:
        result, _, _ = _run(tmp_path, {"spawn_child": True})
        assert result.ended_by is EndedBy.RESULT
        assert [child.poll() for child in own] == [None, None]
    finally:
        for child in own:
            child.kill()
            child.wait()


def test_a_cancelled_job_ends_the_work_before_the_agent_at_once(tmp_path: Path) -> None:
    """SIGTERM while the helper hashes a large tree before the run (a git child busy for many
    seconds): the helper ends within 2 s with exit 130, and its git child with it. Before,
    the signal only set a flag that nothing read until the agent had started."""
    script = tmp_path / "prerun.py"
    script.write_text(
        "import subprocess, sys, threading\n"
        "from cursor_agent_action.agent.contain.cancel import interruptible, stop_on_signals\n"
        "with stop_on_signals() as stop:\n"
        "    try:\n"
        "        with interruptible(stop):\n"
        "            child = subprocess.Popen(['sleep', '30'])\n"
        f"            open({str(tmp_path / 'child')!r}, 'w').write(str(child.pid))\n"
        "            child.wait()\n"
        "    except KeyboardInterrupt:\n"
        "        child.kill(); child.wait()\n"
        "        sys.exit(130)\n")
    proc = subprocess.Popen([sys.executable, str(script)])
    deadline = time.monotonic() + 30
    while not (tmp_path / "child").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    child = int((tmp_path / "child").read_text())
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 130
    assert time.monotonic() - start < 2
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


# -- the shutdown decision, turn by turn (pure: no process, no clock) --------------------------

GRACE = {"result_grace_s": 2.0, "kill_grace_s": 3.0}


def _seen(now: float, **flags: bool) -> Seen:
    return Seen(now=now, finished=flags.get("finished", False), stop=flags.get("stop", False),
                over_budget=flags.get("over_budget", False), exited=flags.get("exited", False))


@pytest.mark.parametrize(("flags", "now", "ended_by", "term"), [
    ({}, 5.0, None, False),  # running, before the deadline: nothing
    ({"stop": True}, 5.0, EndedBy.CANCELLED, True),
    ({}, 10.0, EndedBy.TIMEOUT, True),  # at the deadline
    ({"over_budget": True}, 5.0, EndedBy.BUDGET, True),
    ({"stop": True, "over_budget": True}, 10.0, EndedBy.CANCELLED, True),  # cancel comes first
    ({"over_budget": True}, 10.0, EndedBy.TIMEOUT, True),  # then the deadline
    ({"finished": True}, 5.0, None, False),  # a result: a grace first
    ({"finished": True, "stop": True}, 5.0, None, True),  # a result, cancelled: at once
    ({"finished": True}, 10.0, None, False),  # after its result a deadline changes nothing
])
def test_the_first_turn_decides_why_the_run_ends_and_whether_to_stop_it_now(
        flags: dict[str, bool], now: float, ended_by: EndedBy | None, term: bool) -> None:
    state, sent, done = next_shutdown(Shutdown(deadline=10.0), _seen(now, **flags), **GRACE)
    assert (state.ended_by, sent, done) == (ended_by, term, False)
    if term:  # SIGTERM once, then the kill grace
        assert state.termed
        assert state.kill_at == now + 3.0


def test_a_result_gets_its_grace_then_one_sigterm_then_the_kill_grace() -> None:
    state = Shutdown(deadline=100.0)
    state, term, done = next_shutdown(state, _seen(1.0, finished=True), **GRACE)
    assert (state.term_at, term, done) == (3.0, False, False)
    state, term, done = next_shutdown(state, _seen(2.9, finished=True), **GRACE)
    assert (term, done) == (False, False)
    state, term, done = next_shutdown(state, _seen(3.0, finished=True), **GRACE)
    assert (term, done, state.kill_at) == (True, False, 6.0)
    state, term, done = next_shutdown(state, _seen(4.0, finished=True), **GRACE)
    assert (term, done) == (False, False)  # SIGTERM is sent once
    state, term, done = next_shutdown(state, _seen(6.0, finished=True), **GRACE)
    assert (term, done, state.ended_by) == (False, True, None)


def test_once_the_agent_exits_its_leftover_children_get_a_short_drain() -> None:
    state, term, done = next_shutdown(Shutdown(deadline=100.0), _seen(1.0, exited=True), **GRACE)
    assert (state.kill_at, term, done) == (1.0 + EXIT_DRAIN_S, False, False)
    state, term, done = next_shutdown(state, _seen(1.0 + EXIT_DRAIN_S), **GRACE)
    assert done
    # Exiting during the kill grace shortens it; it never lengthens it.
    state = Shutdown(deadline=100.0, ended_by=EndedBy.TIMEOUT, term_at=0.0, termed=True,
                     kill_at=1.2)
    state, _, _ = next_shutdown(state, _seen(1.0, exited=True), **GRACE)
    assert state.kill_at == 1.2


def test_the_wait_before_the_next_turn_is_bounded_by_every_timer() -> None:
    assert Shutdown(deadline=10.0).wait(9.95, 0.1) == pytest.approx(0.05)  # the deadline
    assert Shutdown(deadline=10.0).wait(20.0, 0.1) == 0.0  # past it: no negative wait
    stopping = Shutdown(deadline=10.0, ended_by=EndedBy.TIMEOUT, term_at=10.0, termed=True,
                        kill_at=10.02)
    assert stopping.wait(10.0, 0.1) == pytest.approx(0.02)  # the kill, not the old SIGTERM
    assert Shutdown(deadline=10.0, term_at=5.01).wait(5.0, 0.1) == pytest.approx(0.01)
