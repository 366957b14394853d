"""Content codings on the connections to Cursor's service that the relay terminates.

The relay swaps values only in bytes it can read. A compressed answer (``Content-Encoding:
gzip``, a Connect or gRPC message compressed inside its envelope) would carry the real key, or
a token Cursor hands back, past the swap into the box. So every request goes up asking for no
coding (the agent's ``Accept-Encoding``, ``Connect-Accept-Encoding`` and
``Grpc-Accept-Encoding`` are dropped, ``Accept-Encoding: identity`` is sent), and an answer
that comes back coded all the same is refused whole, never passed on (:func:`coded`).
"""

from __future__ import annotations

from collections.abc import Iterable

ACCEPTS = frozenset({b"accept-encoding", b"connect-accept-encoding", b"grpc-accept-encoding"})
"""What a client sends to be answered in a coding: dropped on the way up."""
CODINGS = (b"content-encoding", b"connect-content-encoding", b"grpc-encoding")
"""How an answer says it is coded: anything but ``identity`` is refused."""


def upstream(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The request's headers without the agent's asks for a coding, asking for none."""
    kept = [(name, value) for name, value in headers if name.lower() not in ACCEPTS]
    return [*kept, (b"accept-encoding", b"identity")]


def coded(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The coding an answer's headers name (``"content-encoding: gzip"``), or "" for none."""
    for name, value in headers:
        lowered = name.lower()
        if lowered in CODINGS and value.strip().lower() not in (b"", b"identity"):
            return f"{lowered.decode('latin-1')}: {value.decode('latin-1')[:40]}"
    return ""
