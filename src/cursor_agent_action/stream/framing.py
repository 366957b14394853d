"""Bytes to lines: the first stage of bytes -> events -> the stream result -> the run report ->
log / summary / outputs.

The stream is newline-delimited JSON, but we accept any bytes: a UTF-8 byte-order mark at the
start is dropped, ``\\r\\n`` line ends work (the ``\\r`` is JSON whitespace, left for the parser),
and a last line without ``\\n`` is still delivered by :meth:`LineSplitter.close`. Each complete
line keeps its ``\\n`` (JSON whitespace too): the lines are cut by ``BytesIO.readlines``, which
finds line ends with ``memchr``, three times as fast as ``bytes.split``, which cannot keep them.
A line is held only until its ``\\n`` arrives, in one ``bytearray`` grown in place, so a 50 MiB
line costs about 50 MiB and the rest of the stream is never buffered.
"""

from __future__ import annotations

import io

BOM = b"\xef\xbb\xbf"
CHUNK_SIZE = 1024 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024
"""A longer line is cut: its first :data:`CUT_KEPT_BYTES` are kept (as a :class:`CutLine`, which
the engine reports as malformed) and the rest is dropped as it arrives, so no input, however
long its lines, grows the helper by more than this."""
CUT_KEPT_BYTES = 4096


class CutLine(bytes):
    """The start of a line longer than :data:`MAX_LINE_BYTES`; ``size`` is its whole length."""

    size: int = 0


def _cut(head: bytes | bytearray, size: int) -> CutLine:
    line = CutLine(bytes(head[:CUT_KEPT_BYTES]) + b" ...")  # never ends like an event
    line.size = size
    return line


Line = bytes | bytearray


class LineSplitter:
    """Incremental splitter for live pipes: ``feed`` any chunk, get the lines it completes."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._pending = bytearray()
        self._at_start = True
        self._max_line = max_line
        self._dropping = 0  # bytes of an over-long line dropped so far (0: not dropping)
        self._kept = b""  # its start

    def _drop(self, chunk: bytes) -> tuple[list[Line], bytes]:
        """While an over-long line is being dropped: its CutLine once it ends, and the rest."""
        end = chunk.find(b"\n")
        if end < 0:
            self._dropping += len(chunk)
            return [], b""
        size = self._dropping + end
        self._dropping, kept, self._kept = 0, self._kept, b""
        return [_cut(kept, size)], chunk[end + 1 :]

    def feed(self, chunk: bytes) -> list[Line]:
        """The complete lines (each ending in its ``\\n``) that ``chunk`` finishes, in order."""
        if self._dropping:
            done, chunk = self._drop(chunk)
            return done + self.feed(chunk) if chunk else done
        lines = self._feed(chunk)
        if len(self._pending) > self._max_line:  # the line so far is already too long
            self._kept = bytes(self._pending[:CUT_KEPT_BYTES])
            self._dropping = len(self._pending)
            self._pending = bytearray()
        # Only the first line can have grown past the cap (it joins what was pending), unless
        # the chunk itself is longer than the cap. The cap is on a line's bytes before its \n.
        limit = self._max_line + 1
        if lines and (len(lines[0]) > limit or len(chunk) > limit):
            lines = [_cut(line, len(line) - 1) if len(line) > limit else line for line in lines]
        return lines

    def _feed(self, chunk: bytes) -> list[Line]:
        if self._at_start:
            head = bytes(self._pending) + chunk
            if len(head) < len(BOM) and BOM.startswith(head):
                self._pending = bytearray(head)  # maybe a BOM cut across chunks: wait
                return []
            self._at_start = False
            self._pending = bytearray()
            chunk = head[len(BOM) :] if head.startswith(BOM) else head
        lines: list[Line] = io.BytesIO(chunk).readlines()  # type: ignore[assignment]
        tail = lines.pop() if lines and not lines[-1].endswith(b"\n") else b""
        if lines and self._pending:
            self._pending += lines[0]
            lines[0] = self._pending
            self._pending = bytearray()
        if tail:
            self._pending += tail
        return lines

    def close(self) -> list[Line]:
        """The last line when the stream did not end with ``\\n`` (without one, then)."""
        if self._dropping:
            size, kept = self._dropping, self._kept
            self._dropping, self._kept = 0, b""
            return [_cut(kept, size)]
        tail, self._pending = self._pending, bytearray()
        return [tail] if tail else []
