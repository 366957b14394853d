"""What the wall let through and what it refused, bounded, as the run's report.

The report (:meth:`Ledger.report`) is a JSON-able dict, the ``network`` field of the run
record::

    {"mode": "restricted",
     "rules": [{"pattern": "*.cursor.sh", "ports": [443], "source": "default"}, ...],
     "unreachable": ["http://10.0.0.5/mcp"],       # MCP URLs the wall cannot pass
     "allowed": [{"destination": "api2.cursor.sh:443", "connections": 3,
                  "failed": 0, "bytes_out": 1200, "bytes_in": 56000}, ...],
     "refused": [{"destination": "evil.example", "kind": "dns", "count": 2,
                  "first": "no rule allows this name", "first_at": "2026-11-25T10:00:00Z"}],
     "allowed_total": 3, "refused_total": 2, "omitted": 0, "error": ""}

Kinds of refusal (:data:`KINDS`): ``dns`` (a name no rule allows), ``port`` (an allowed name on
a port no rule gives it), ``address`` (it resolved to a metadata, link-local or, for a name not
listed exactly, private address), ``ip-literal`` (an address dialed without a name),
``sni-mismatch`` (the TLS SNI or HTTP Host names another host), ``limit`` (too many
connections at once). At most :data:`MAX_ENTRIES` destinations of each list are kept; the
rest are counted in ``omitted``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

KINDS = ("dns", "port", "address", "ip-literal", "sni-mismatch", "limit")
MAX_ENTRIES = 200
MAX_DETAIL = 300
EventSink = Callable[[dict[str, Any]], None]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Ledger:
    """Counts by destination; thread-safe (the relay thread writes, the jail reads)."""

    def __init__(self, policy_json: dict[str, Any], on_event: EventSink | None = None) -> None:
        self._policy = policy_json
        self._on_event = on_event
        self._lock = threading.Lock()
        self._allowed: dict[str, dict[str, Any]] = {}
        self._refused: dict[tuple[str, str], dict[str, Any]] = {}
        self.allowed_total = 0
        self.refused_total = 0
        self._omitted = 0
        self.error = ""

    def _emit(self, event: dict[str, Any]) -> None:
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
                entry = self._refused[(kind, destination)] = {
                    "destination": destination,
                    "kind": kind,
                    "count": 0,
                    "first": detail,
                    "first_at": _now(),
                }
                first = True
            else:
                first = False
                if entry is None:
                    self._omitted += 1
            if entry is not None:
                entry["count"] += 1
        self._emit({"event": "refused", "kind": kind, "destination": destination,
                    "detail": detail, "first": first, "first_of_run": first_of_run})

    def _entry(self, destination: str) -> dict[str, Any] | None:
        entry = self._allowed.get(destination)
        if entry is None and len(self._allowed) < MAX_ENTRIES:
            entry = self._allowed[destination] = {
                "destination": destination,
                "connections": 0,
                "failed": 0,
                "bytes_out": 0,
                "bytes_in": 0,
            }
        elif entry is None:
            self._omitted += 1
        return entry

    def connected(self, destination: str) -> None:
        with self._lock:
            self.allowed_total += 1
            if (entry := self._entry(destination)) is not None:
                entry["connections"] += 1

    def failed(self, destination: str, detail: str) -> None:
        """An allowed destination that could not be reached (resolution or connect failed)."""
        with self._lock:
            if (entry := self._entry(destination)) is not None:
                entry["failed"] += 1
        self._emit({"event": "failed", "destination": destination, "detail": detail[:MAX_DETAIL]})

    def moved(self, destination: str, out: int, back: int) -> None:
        with self._lock:
            if (entry := self._allowed.get(destination)) is not None:
                entry["bytes_out"] += out
                entry["bytes_in"] += back

    def broke(self, detail: str) -> None:
        """The relay itself stopped on an error: every connection of the box now fails."""
        with self._lock:
            self.error = detail[:MAX_DETAIL]
        self._emit({"event": "relay-failed", "detail": self.error})

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {
                "mode": "restricted",
                "rules": list(self._policy.get("rules", [])),
                "unreachable": list(self._policy.get("unreachable", [])),
                "allowed": sorted(
                    (dict(e) for e in self._allowed.values()),
                    key=lambda e: (-e["connections"], e["destination"]),
                ),
                "refused": sorted(
                    (dict(e) for e in self._refused.values()),
                    key=lambda e: (-e["count"], e["destination"]),
                ),
                "allowed_total": self.allowed_total,
                "refused_total": self.refused_total,
                "omitted": self._omitted,
                "error": self.error,
            }
