"""The network wall's report as data (rendered by :mod:`.render.wallsection`): what it allowed,
what it let through and what it refused.

The wall's ledger (``agent.contain.box.net.ledger``) builds a :class:`NetReport` in the box's root
side; it travels to the helper as JSON in the box's status and ends on the run record as
``network``, where the job summary and the step outputs read it (:mod:`.render.wallsection`). A run
without the wall has a report too: its ``mode`` (``open``, ``uncontained``, ``landlock``) and
``why``. In JSON::

    {"mode": "restricted", "why": "",
     "rules": [{"pattern": "*.cursor.sh", "ports": [443], "source": "default"}, ...],
     "unreachable": ["http://10.0.0.5/mcp"],       # MCP URLs the wall cannot pass
     "allowed": [{"destination": "api2.cursor.sh:443", "connections": 3,
                  "failed": 0, "bytes_out": 1200, "bytes_in": 56000}, ...],
     "refused": [{"destination": "evil.example", "kind": "dns", "count": 2,
                  "first": "no rule allows this name", "first_at": "2026-11-25T10:00:00Z"}],
     "allowed_total": 3, "refused_total": 2, "omitted": 0, "error": ""}

:meth:`NetReport.from_json` reads it defensively: it crossed a process boundary, and every
name in it is one the agent asked for. A value of the wrong type is dropped (a string becomes
"", a number 0, an entry that is no object is left out), a list is read up to
:data:`MAX_LISTED` entries (the destinations left out are counted in ``omitted``); only a
report that is no object or has no mode is refused, with :class:`ReportError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

MAX_LISTED = 1000
"""Entries read of each list of a report (the wall keeps at most 200 destinations of each)."""
RESTRICTED = "restricted"
"""The mode of a run behind the wall; the others (``open``, ``uncontained``, ``landlock``) had
none."""


class ReportError(ValueError):
    """A network report that is no object or has no mode."""


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _objects(value: object) -> list[dict[str, object]]:
    """The objects of a JSON list (up to :data:`MAX_LISTED` entries read); [] for a non-list."""
    if not isinstance(value, list):
        return []
    return [entry for entry in value[:MAX_LISTED] if isinstance(entry, dict)]


def _overflow(value: object) -> int:
    return max(len(value) - MAX_LISTED, 0) if isinstance(value, list) else 0


@dataclass(frozen=True)
class AllowRule:
    """One rule of the wall: a name pattern, its ports, where it came from (``default``,
    ``allowed-domains``, ``mcp-config``)."""

    pattern: str
    ports: tuple[int, ...]
    source: str

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AllowRule:
        ports = data.get("ports")
        listed = ports[:MAX_LISTED] if isinstance(ports, list) else []
        return cls(
            _str(data.get("pattern")),
            tuple(_int(p) for p in listed if _int(p)),
            _str(data.get("source")),
        )


@dataclass(frozen=True)
class Destination:
    """A destination the wall let through: connections made, failed, bytes each way."""

    destination: str
    connections: int = 0
    failed: int = 0
    bytes_out: int = 0
    bytes_in: int = 0

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Destination:
        return cls(
            _str(data.get("destination")),
            _int(data.get("connections")),
            _int(data.get("failed")),
            _int(data.get("bytes_out")),
            _int(data.get("bytes_in")),
        )


@dataclass(frozen=True)
class Refusal:
    """A destination the wall refused, of one kind: how often, the first reason and when."""

    destination: str
    kind: str
    count: int = 0
    first: str = ""
    first_at: str = ""

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Refusal:
        return cls(
            _str(data.get("destination")),
            _str(data.get("kind")),
            _int(data.get("count")),
            _str(data.get("first")),
            _str(data.get("first_at")),
        )


@dataclass(frozen=True)
class NetReport:
    """The wall's report on one run (see the module docstring for its JSON)."""

    mode: str
    why: str = ""  # a run without the wall: why (e.g. why the agent was not contained)
    rules: tuple[AllowRule, ...] = ()
    unreachable: tuple[str, ...] = ()
    allowed: tuple[Destination, ...] = ()
    refused: tuple[Refusal, ...] = ()
    allowed_total: int = 0
    refused_total: int = 0
    omitted: int = 0  # destinations not listed (over the wall's cap)
    error: str = ""  # the relay stopped on this error: every connection failed from then on

    @property
    def walled(self) -> bool:
        """The run was behind the wall (the lists and counts mean something)."""
        return self.mode == RESTRICTED

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: object) -> NetReport:
        if not isinstance(data, dict) or not isinstance(data.get("mode"), str):
            raise ReportError("the network report is no object with a mode")
        unreachable = data.get("unreachable")
        allowed, refused = data.get("allowed"), data.get("refused")
        return cls(
            mode=data["mode"],
            why=_str(data.get("why")),
            rules=tuple(AllowRule.from_json(rule) for rule in _objects(data.get("rules"))),
            unreachable=tuple(url for url in unreachable[:MAX_LISTED] if isinstance(url, str))
            if isinstance(unreachable, list)
            else (),
            allowed=tuple(Destination.from_json(entry) for entry in _objects(allowed)),
            refused=tuple(Refusal.from_json(entry) for entry in _objects(refused)),
            allowed_total=_int(data.get("allowed_total")),
            refused_total=_int(data.get("refused_total")),
            omitted=_int(data.get("omitted")) + _overflow(allowed) + _overflow(refused),
            error=_str(data.get("error")),
        )

    def redacted(self, redact: Callable[[str], str]) -> NetReport:
        """A copy with every string redacted (a refused name may hold a secret)."""
        return replace(
            self,
            mode=redact(self.mode),
            why=redact(self.why),
            rules=tuple(
                AllowRule(redact(r.pattern), r.ports, redact(r.source)) for r in self.rules
            ),
            unreachable=tuple(map(redact, self.unreachable)),
            allowed=tuple(replace(d, destination=redact(d.destination)) for d in self.allowed),
            refused=tuple(
                replace(
                    r,
                    destination=redact(r.destination),
                    kind=redact(r.kind),
                    first=redact(r.first),
                    first_at=redact(r.first_at),
                )
                for r in self.refused
            ),
            error=redact(self.error),
        )
