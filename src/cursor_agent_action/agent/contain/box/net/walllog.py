"""The wall in the runner's log: what it allows (at the start), the first refusal (live), a
warning per refused destination (after the run), and the report of a run without a wall.

The relay runs in the jail (root), the log in the helper: :func:`jsonl_sink` is the relay's
``on_event`` that writes the events the helper needs, one JSON line each, to a pipe, without
ever blocking the relay; the helper hands each line it reads to :func:`live`.
"""

from __future__ import annotations

import contextlib
import json
import os

from cursor_agent_action.agent.contain.box.net.ledger import EventSink, NetEvent
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.options import setting
from cursor_agent_action.runner_io import Runner, one_line
from cursor_agent_action.stream.wallreport import NetReport

MAX_WARNINGS = 10
MAX_LIVE_EVENTS = 1000
UNCONTAINED_NOTE = ("the agent is not contained, so it has no network wall either: it can reach "
                    "anything the runner can (the cloud metadata address, services on the "
                    "runner's loopback, any host)")
"""For the uncontained warning (``isolation.fallback_warning``): what is lost on the network."""


def announce(runner: Runner, policy: NetPolicy | None, *, network: str, contained: bool) -> None:
    """At the start of a run: the wall's rules in the log, or a warning that there is none."""
    if not contained:
        return  # the uncontained warning says it (UNCONTAINED_NOTE)
    if network == "open" or policy is None:
        runner.warning(f"{setting('--network')} is open: the agent can reach anything the "
                       "runner can, the cloud metadata address and services on the runner's "
                       f"loopback included. Fix: leave {setting('--network')} at restricted and "
                       f"list the names the agent needs in {setting('--allowed-domains')}.",
                       title="no network wall")
        return
    patterns = ", ".join(rule.describe() for rule in policy.rules)
    runner.log(one_line(f"Network: restricted; the agent may reach {patterns}; everything "
                        "else is refused and reported.", 4000))
    if policy.unreachable:
        runner.warning(one_line(
            f"mcp-config names {', '.join(policy.unreachable)} by IP address; the network "
            "wall lets the agent out by name only, so the agent cannot reach "
            f"{'it' if len(policy.unreachable) == 1 else 'them'}. Fix: give the server a "
            f"host name, or set {setting('--network')} to open.", 2000),
            title="MCP server unreachable")


def jsonl_sink(fd: int) -> EventSink:
    """An ``on_event`` for the relay: the first refusal of each destination and a relay
    failure, one JSON line each, written to ``fd`` (made non-blocking); a line the pipe has no
    room for is dropped, never waited for, and at most :data:`MAX_LIVE_EVENTS` are written."""
    os.set_blocking(fd, False)
    written = [0]

    def sink(event: NetEvent) -> None:
        wanted = event.first or event.event == "relay-failed"
        if not wanted or written[0] >= MAX_LIVE_EVENTS:
            return
        written[0] += 1
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            os.write(fd, json.dumps(event.to_json()).encode() + b"\n")

    return sink


class EventLines:
    """The helper's side of :func:`jsonl_sink`: bytes read from the pipe in, whole events out
    (a line over 64 KiB, not JSON or no event is skipped: the jail wrote it, but never trust a
    pipe)."""

    LIMIT = 64 * 1024

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, data: bytes) -> list[NetEvent]:
        *lines, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > self.LIMIT:
            self._partial = b""
        events = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if (read := NetEvent.from_json(event)) is not None:
                events.append(read)
        return events


def live(runner: Runner, event: NetEvent) -> None:
    """One event from the relay in the live log: the run's first refusal and a failed relay
    (every refused destination gets its warning after the run, see :func:`warn_refusals`)."""
    if event.event == "relay-failed":
        runner.warning(one_line(f"The network wall's relay stopped ({event.detail});"
                                " every connection of the agent fails from now on.", 1000),
                       title="network wall stopped")
    elif event.event == "refused" and event.first_of_run:
        what = _what(event.kind, event.destination, event.detail)
        runner.log(one_line(f"Network: refused {what} (the first refusal; the job summary "
                            "lists them all).", 1000))


def _what(kind: str, destination: str, detail: str) -> str:
    return f"{destination} ({kind}: {detail})"


def warn_refusals(runner: Runner, report: NetReport | None) -> None:
    """After the run: one warning per refused destination, the first :data:`MAX_WARNINGS`."""
    if report is None or not report.walled:
        return
    refused = report.refused
    for entry in refused[:MAX_WARNINGS]:
        count = entry.count
        runner.warning(one_line(
            f"The network wall refused {_what(entry.kind, entry.destination, entry.first)}"
            f"{f', {count} attempts' if count > 1 else ''}. If the agent needs it, add the "
            f"name to {setting('--allowed-domains')}.", 1000), title="network refused")
    if len(refused) > MAX_WARNINGS:
        runner.warning(f"The network wall refused {report.refused_total:,} attempts to "
                       f"{len(refused) + report.omitted:,} destinations; the job "
                       "summary's Network section lists them.", title="network refused")
    if report.error:
        runner.warning(one_line(f"The network wall's relay stopped ({report.error}); the "
                                "agent's connections failed from then on.", 1000),
                       title="network wall stopped")


def unwalled_report(mode: str, why: str = "") -> NetReport:
    """The record's ``network`` for a run without the wall: ``open`` (the input),
    ``uncontained`` or ``landlock`` (``why``: the reason the agent was not in the box)."""
    return NetReport(mode=mode, why=why)
