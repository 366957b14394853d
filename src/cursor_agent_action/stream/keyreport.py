"""The relay's account of Cursor's service when it held the API key for the agent (made by
``agent.contain.box.net.credentials.Tally`` in the box's root side, carried in the box's
status, read into the run's report: the summary's API key line, ``check-key-masking``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MaskReport:
    """What the relay saw of Cursor's service: connections terminated, TLS handshakes the
    agent's side refused (its client did not trust the run's CA), requests that reached
    Cursor, exchanges rewritten, and the first failure of the exchange ("" when none)."""

    terminated: int = 0
    certificate_refused: int = 0
    requests: int = 0
    exchanges: int = 0
    exchange_error: str = ""
    ca_error: str = ""

    @property
    def may_fall_back(self) -> bool:
        """The CLI refused the certificate and nothing reached Cursor."""
        return self.certificate_refused > 0 and self.requests == 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MaskReport:
        return cls(int(data.get("terminated", 0)), int(data.get("certificate_refused", 0)),
                   int(data.get("requests", 0)), int(data.get("exchanges", 0)),
                   str(data.get("exchange_error", ""))[:500], str(data.get("ca_error", ""))[:500])
