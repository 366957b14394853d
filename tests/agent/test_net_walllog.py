"""The wall in the runner's log: the rules at the start, the first refusal live, a capped
warning per refused destination after the run, and a live-event pipe that never blocks."""

from __future__ import annotations

import io
import os
import time

from cursor_agent_action.agent.contain.box.net import walllog
from cursor_agent_action.agent.contain.box.net.ledger import MAX_DETAIL, Ledger, NetEvent
from cursor_agent_action.agent.contain.box.net.policy import build_policy
from cursor_agent_action.runner_io import Runner
from tests.support.runner import RUNNER_ENV


def _runner() -> tuple[Runner, io.StringIO]:
    out = io.StringIO()
    return Runner(stdout=out, env=RUNNER_ENV), out


def _log(runner: Runner, out: io.StringIO) -> str:
    runner.flush()
    return out.getvalue()


def test_the_start_of_a_run_names_the_rules_or_warns_there_is_no_wall() -> None:
    runner, out = _runner()
    policy = build_policy(["a.example"], ["http://10.0.0.5:8080/mcp"])
    walllog.announce(runner, policy, network="restricted", contained=True)
    log = _log(runner, out)
    assert "Network: restricted; the agent may reach *.cursor.sh:443," in log
    assert "a.example:443,80; everything else is refused and reported." in log
    assert ("::warning title=MCP server unreachable::mcp-config names "
            "http://10.0.0.5:8080/mcp") in log
    runner, out = _runner()
    walllog.announce(runner, policy, network="open", contained=True)
    assert "::warning title=no network wall::--network is open" in _log(runner, out)
    runner, out = _runner()
    walllog.announce(runner, policy, network="restricted", contained=False)
    assert _log(runner, out) == ""  # the uncontained warning says it (UNCONTAINED_NOTE)


def test_the_live_log_tells_the_first_refusal_once_and_a_stopped_relay() -> None:
    runner, out = _runner()
    ledger = Ledger(None, lambda event: walllog.live(runner, event))
    ledger.refused("dns", "evil.example", "no rule allows this name")
    ledger.refused("ip-literal", "127.0.0.1:443", "an address dialed without a name")
    ledger.broke("the relay stopped: OSError: x")
    log = _log(runner, out)
    assert log.count("Network: refused") == 1
    assert ("Network: refused evil.example (dns: no rule allows this name) (the first refusal; "
            "the job summary lists them all).") in log
    assert "::warning title=network wall stopped::" in log


def test_after_the_run_one_warning_per_refused_destination_capped() -> None:
    ledger = Ledger()
    for i in range(15):
        ledger.refused("dns", f"h{i}.example", "no rule allows this name")
    ledger.refused("dns", "h0.example", "no rule allows this name")
    runner, out = _runner()
    walllog.warn_refusals(runner, ledger.report())
    warnings = [line for line in _log(runner, out).splitlines() if line.startswith("::warning")]
    assert len(warnings) == walllog.MAX_WARNINGS + 1
    assert warnings[0] == ("::warning title=network refused::The network wall refused "
                           "h0.example (dns: no rule allows this name), 2 attempts. If the "
                           "agent needs it, add the name to --allowed-domains.")
    assert warnings[-1].endswith("refused 16 attempts to 15 destinations; the job summary's "
                                 "Network section lists them.")
    runner, out = _runner()
    walllog.warn_refusals(runner, walllog.unwalled_report("open"))
    assert _log(runner, out) == ""


def test_the_live_event_pipe_never_blocks_the_relay_and_sends_firsts_only() -> None:
    read_end, write_end = os.pipe()
    try:
        sink = walllog.jsonl_sink(write_end)
        ledger = Ledger(None, sink)
        ledger.refused("dns", "a.example", "x")
        ledger.refused("dns", "a.example", "x")  # not a first: not sent
        started = time.monotonic()
        for i in range(5000):  # far more than the pipe holds: dropped, never waited for
            sink(NetEvent("refused", "x" * 900, f"n{i}", "dns", first=True))
        assert time.monotonic() - started < 5
        data = os.read(read_end, 1 << 20)
        reader = walllog.EventLines()
        lines = reader.feed(data[:100]) + reader.feed(data[100:])  # whole events, however cut
        assert lines[0] == NetEvent("refused", "x", "a.example", "dns", True, True)
        assert all(line.first for line in lines)
        assert len(lines) == data.count(b"\n") < walllog.MAX_LIVE_EVENTS
        assert reader.feed(b'not json\n[1]\n{"event": "hello"}\n{"detail": "x"}\n') == []
        hostile = b'{"event": "refused", "destination": ["a"], "first": "yes", "detail": "%s"}\n'
        assert reader.feed(hostile % (b"d" * 5000)) == [NetEvent("refused", "d" * MAX_DETAIL)]
    finally:
        os.close(read_end)
        os.close(write_end)
