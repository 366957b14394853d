"""What the wall let through and what it refused, bounded, as the run's report.

The report (:meth:`Ledger.report`) is a :class:`~cursor_agent_action.stream.wallreport.NetReport`
(its JSON is there), the ``network`` field of the run report.

Kinds of refusal (:data:`KINDS`): ``dns`` (a name no rule allows), ``port`` (an allowed name on
a port no rule gives it), ``address`` (it resolved to a metadata, link-local or, for a name not
listed exactly, private address), ``ip-literal`` (an address dialed without a name),
``sni-mismatch`` (the TLS SNI or HTTP Host names another host), ``limit`` (too many
connections at once). At most :data:`MAX_ENTRIES` destinations of each list are kept; the
rest are counted in ``omitted``.

As it happens, the ledger tells its listener (``on_event``) of each refusal, failed attempt
and a relay that stopped, as a :class:`NetEvent`: the box's root side writes the ones the
runner's log needs to a file, one JSON line each, and the helper reads them back
(``walllog.jsonl_sink``, ``walllog.EventLines``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.stream.wallreport import (
    RESTRICTED,
    AllowRule,
    Destination,
    NetReport,
    Refusal,
)

KINDS = ("dns", "port", "address", "ip-literal", "sni-mismatch", "limit")
MAX_ENTRIES = 200
MAX_DETAIL = 300
EVENTS = ("refused", "failed", "relay-failed")


@dataclass(frozen=True)
class NetEvent:
    """One thing the wall tells as it happens: ``refused`` (of ``kind``; ``first``: the first
    of its kind and destination, ``first_of_run``: the run's very first), ``failed`` (an
    allowed destination that could not be reached) or ``relay-failed`` (the relay stopped)."""

    event: str
    detail: str = ""
    destination: str = ""
    kind: str = ""
    first: bool = False
    first_of_run: bool = False

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> NetEvent | None:
        """The event of a JSON line, or None when it is none (it crossed a process boundary:
        a value of the wrong type is dropped)."""
        if not isinstance(data, dict) or data.get("event") not in EVENTS:
            return None

        def text(key: str) -> str:
            value = data.get(key)
            return value[:MAX_DETAIL] if isinstance(value, str) else ""

        return cls(
            data["event"],
            text("detail"),
            text("destination"),
            text("kind"),
            data.get("first") is True,
            data.get("first_of_run") is True,
        )


EventSink = Callable[[NetEvent], None]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Ledger:
    """Counts by destination; thread-safe (the relay thread writes, the jail reads)."""

    def __init__(self, policy: NetPolicy | None = None, on_event: EventSink | None = None) -> None:
        self._policy = policy if policy is not None else NetPolicy(())
        self._on_event = on_event
        self._lock = threading.Lock()
        self._allowed: dict[str, Destination] = {}
        self._refused: dict[tuple[str, str], Refusal] = {}
        self.allowed_total = 0
        self.refused_total = 0
        self._omitted = 0
        self.error = ""

    def _emit(self, event: NetEvent) -> None:
        if self._on_event is None:
            return
        with contextlib.suppress(Exception):  # a listener's bug must not stop the relay
            self._on_event(event)

    def refused(self, kind: str, destination: str, detail: str) -> None:
        """One refusal; the listener hears of each (``first``: the first of its kind and
        destination; ``first_of_run``: the run's very first)."""
        destination, detail = destination[:MAX_DETAIL], detail[:MAX_DETAIL]
        with self._lock:
            self.refused_total += 1
            first_of_run = self.refused_total == 1
            entry = self._refused.get((kind, destination))
            if entry is None and len(self._refused) < MAX_ENTRIES:
                entry = Refusal(destination, kind, 0, detail, _now())
                first = True
            else:
                first = False
                if entry is None:
                    self._omitted += 1
            if entry is not None:
                self._refused[(kind, destination)] = replace(entry, count=entry.count + 1)
        self._emit(NetEvent("refused", detail, destination, kind, first, first_of_run))

    def _entry(self, destination: str) -> Destination | None:
        entry = self._allowed.get(destination)
        if entry is None and len(self._allowed) < MAX_ENTRIES:
            entry = self._allowed[destination] = Destination(destination)
        elif entry is None:
            self._omitted += 1
        return entry

    def connected(self, destination: str) -> None:
        with self._lock:
            self.allowed_total += 1
            if (entry := self._entry(destination)) is not None:
                self._allowed[destination] = replace(entry, connections=entry.connections + 1)

    def failed(self, destination: str, detail: str) -> None:
        """An allowed destination that could not be reached (resolution or connect failed)."""
        with self._lock:
            if (entry := self._entry(destination)) is not None:
                self._allowed[destination] = replace(entry, failed=entry.failed + 1)
        self._emit(NetEvent("failed", detail[:MAX_DETAIL], destination))

    def moved(self, destination: str, out: int, back: int) -> None:
        with self._lock:
            if (entry := self._allowed.get(destination)) is not None:
                self._allowed[destination] = replace(
                    entry, bytes_out=entry.bytes_out + out, bytes_in=entry.bytes_in + back
                )

    def broke(self, detail: str) -> None:
        """The relay itself stopped on an error: every connection of the box now fails."""
        with self._lock:
            self.error = detail[:MAX_DETAIL]
        self._emit(NetEvent("relay-failed", self.error))

    def report(self) -> NetReport:
        rules = tuple(AllowRule(r.pattern, r.ports, r.source) for r in self._policy.rules)
        with self._lock:
            return NetReport(
                mode=RESTRICTED,
                rules=rules,
                unreachable=self._policy.unreachable,
                allowed=tuple(
                    sorted(self._allowed.values(), key=lambda e: (-e.connections, e.destination))
                ),
                refused=tuple(
                    sorted(self._refused.values(), key=lambda e: (-e.count, e.destination))
                ),
                allowed_total=self.allowed_total,
                refused_total=self.refused_total,
                omitted=self._omitted,
                error=self.error,
            )
