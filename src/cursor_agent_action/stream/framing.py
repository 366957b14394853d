"""Bytes to lines: the first stage of bytes -> events -> run record -> log / summary / outputs.

The stream is newline-delimited JSON, but we accept any bytes: a UTF-8 byte-order mark at the
start is dropped, ``\\r\\n`` line ends work (the ``\\r`` is JSON whitespace, left for the parser),
and a last line without ``\\n`` is still delivered by :meth:`LineSplitter.close`. A line is held
only until its ``\\n`` arrives, in one ``bytearray`` grown in place, so a 50 MiB line costs about
50 MiB and the rest of the stream is never buffered.
"""

from __future__ import annotations

BOM = b"\xef\xbb\xbf"
CHUNK_SIZE = 1024 * 1024

Line = bytes | bytearray


class LineSplitter:
    """Incremental splitter for live pipes: ``feed`` any chunk, get the lines it completes."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._at_start = True

    def feed(self, chunk: bytes) -> list[Line]:
        """The complete lines (without ``\\n``) that ``chunk`` finishes, in order."""
        if self._at_start:
            head = bytes(self._pending) + chunk
            if len(head) < len(BOM) and BOM.startswith(head):
                self._pending = bytearray(head)  # maybe a BOM cut across chunks: wait
                return []
            self._at_start = False
            self._pending = bytearray()
            chunk = head[len(BOM) :] if head.startswith(BOM) else head
        if b"\n" not in chunk:
            self._pending += chunk
            return []
        lines: list[Line] = chunk.split(b"\n")  # type: ignore[assignment]
        if self._pending:
            self._pending += lines[0]
            lines[0] = self._pending
            self._pending = bytearray()
        tail = lines.pop()
        if tail:
            self._pending += tail
        return lines

    def close(self) -> list[Line]:
        """The last line when the stream did not end with ``\\n``."""
        tail, self._pending = self._pending, bytearray()
        return [tail] if tail else []
