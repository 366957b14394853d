"""Where the messages of a Connect or gRPC stream end: the relay lets go of what it holds at
each end (:class:`~cursor_agent_action.agent.contain.box.net.swap.EnvelopedRewriter`)."""

from __future__ import annotations

ENVELOPED_TYPES = (b"application/connect+", b"application/grpc")
"""Streams of length-prefixed messages: Connect's streaming and gRPC's (a flag byte, a
four-byte big-endian length, the message)."""
HEADER = 5


class MessageEnds:
    """Reads a stream's envelopes as it goes by, chunk after chunk, in constant memory."""

    def __init__(self) -> None:
        self._head = b""  # the current envelope's header, while it is incomplete
        self._left = -1  # bytes of the current message still to come; -1: in a header

    def cuts(self, data: bytes) -> list[int]:
        """Where in ``data`` a message ends (its envelope complete)."""
        ends: list[int] = []
        at, size = 0, len(data)
        while at < size:
            if self._left < 0:  # reading a header
                take = min(HEADER - len(self._head), size - at)
                self._head += data[at : at + take]
                at += take
                if len(self._head) == HEADER:
                    self._left = int.from_bytes(self._head[1:HEADER], "big")
                    self._head = b""
            if self._left >= 0:
                take = min(self._left, size - at)
                at += take
                self._left -= take
                if self._left == 0:
                    ends.append(at)
                    self._left = -1
        return ends
