"""What the helper hands the relay so that the box holds no key (:class:`Credentials`, in the
box's spec), and what the relay says back about it (:class:`MaskReport`, in the box's status).

The modes of the ``api-key-masking`` input (:data:`MODES`):

- ``masked`` (the default): the agent gets a placeholder; the relay swaps in the key for
  Cursor's names only. If the CLI refuses the relay's certificate before any request reached
  Cursor (nothing reached the model: the agent did nothing), the run starts once more with the
  key in the box, and the summary and the ``api-key-in-box`` output say so.
- ``masked-or-fail``: the same, without that fallback: such a run fails.
- ``off``: the key in the agent's environment, as before the relay held it.

Where no relay runs (the Landlock tier, uncontained runs, ``network: open``) the key is in the
agent's environment whatever the mode: the summary and the output say so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from cursor_agent_action.stream.keyreport import MaskReport

MASKED, MASKED_OR_FAIL, OFF = "masked", "masked-or-fail", "off"
MODES = (MASKED, MASKED_OR_FAIL, OFF)
EXCHANGE_PATH = "/auth/exchange_user_api_key"
"""Where the CLI trades its key for tokens (api2.cursor.sh; from public reverse engineering)."""

# What the output says held: the agent saw a placeholder, or the key (and why).
HELD_MASKED = "no"
HELD_FALLBACK = "yes-fallback"
HELD_ASKED = "yes-asked"
HELD_NO_RELAY = "yes-no-relay"


@dataclass(frozen=True)
class Credentials:
    """The real key and the agent's placeholder of it (same length and alphabet); the trust
    the relay verifies Cursor's certificates with (the runner's ``SSL_CERT_FILE`` and
    ``SSL_CERT_DIR``, "" for OpenSSL's defaults); Cursor's name patterns (terminated)."""

    key: str
    placeholder: str
    trust_file: str = ""
    trust_dir: str = ""
    patterns: tuple[str, ...] = ()
    fallback: bool = True  # no CA on this runner: the key in the box (False: the run fails)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Credentials:
        return cls(str(data["key"]), str(data["placeholder"]), str(data.get("trust_file", "")),
                   str(data.get("trust_dir", "")),
                   tuple(str(p) for p in data.get("patterns", ())),
                   data.get("fallback") is not False)

    def __repr__(self) -> str:  # never the key in a traceback or a log
        return f"Credentials(patterns={self.patterns!r})"


class Tally:
    """The :class:`MaskReport` as the relay's connections add to it (thread-safe); the first
    failed exchange is told to ``on_exchange_failed`` (the jail stops the agent: the CLI
    would wait for a browser sign-in)."""

    def __init__(self, on_exchange_failed: Callable[[str], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._report = MaskReport()
        self.on_exchange_failed = on_exchange_failed

    def count(self, **changes: int) -> None:
        with self._lock:
            self._report = replace(self._report, **{
                key: getattr(self._report, key) + value for key, value in changes.items()})

    def exchange_failed(self, detail: str) -> None:
        with self._lock:
            first = not self._report.exchange_error
            if first:
                self._report = replace(self._report, exchange_error=detail[:300])
        if first and self.on_exchange_failed is not None:
            self.on_exchange_failed(detail)

    def report(self) -> MaskReport:
        with self._lock:
            return self._report
