"""TLS over an asyncio stream pair by hand (``ssl.SSLObject`` and memory BIOs): the relay's TLS
to the agent begins with bytes it has already read (the ClientHello, checked), and its TLS to
Cursor runs over whatever connection it made (direct, or a tunnel through the runner's proxy).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from typing import Protocol

CHUNK = 64 * 1024


class Moved(Protocol):
    """What a pipe tells of the bytes it moved (:class:`~.pumps.Flow`)."""

    moved: list[int]
    last: float


class TlsClosed(ConnectionError):
    """The other end went away during the handshake."""


class TlsPipe:
    """One TLS connection over ``reader``/``writer``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 context: ssl.SSLContext, *, server_hostname: str | None = None,
                 first: bytes = b"", flow: Moved | None = None) -> None:
        self.reader = reader
        self.writer = writer
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self.tls = context.wrap_bio(self._in, self._out, server_side=server_hostname is None,
                                    server_hostname=server_hostname)
        if first:
            self._in.write(first)
        self.flow = flow
        self.server_side = server_hostname is None

    def _flush(self) -> None:
        data = self._out.read()
        if data:
            if self.flow is not None and not self.server_side:
                self.flow.moved[0] += len(data)
            self.writer.write(data)

    async def _fill(self) -> bool:
        data = await self.reader.read(CHUNK)
        if not data:
            self._in.write_eof()
            return False
        if self.flow is not None:
            self.flow.last = time.monotonic()
            if not self.server_side:
                self.flow.moved[1] += len(data)
        self._in.write(data)
        return True

    async def handshake(self) -> None:
        """Raises ``ssl.SSLError`` (a refusal either way) or :class:`TlsClosed`."""
        while True:
            try:
                self.tls.do_handshake()
            except ssl.SSLWantReadError:
                self._flush()
                await self.writer.drain()
                if not await self._fill():
                    raise TlsClosed("the connection ended during the TLS handshake") from None
                continue
            except ssl.SSLError:
                self._flush()  # our alert, when there is one
                raise
            self._flush()
            await self.writer.drain()
            return

    @property
    def alpn(self) -> str:
        return self.tls.selected_alpn_protocol() or ""

    async def read(self) -> bytes:
        """The next plaintext bytes (all that the bytes read so far decrypt to, several TLS
        records at once); b"" at the end (a close_notify or the connection's)."""
        while True:
            try:
                data = self.tls.read(CHUNK)
            except ssl.SSLWantReadError:
                self._flush()  # a key update's answer, a session ticket
                if not await self._fill():
                    return b""
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return b""
            if not data:
                return b""
            more = [data]
            size = len(data)
            while size < CHUNK:  # what else is already here, without waiting
                try:
                    data = self.tls.read(CHUNK - size)
                except (ssl.SSLWantReadError, ssl.SSLZeroReturnError, ssl.SSLEOFError):
                    break
                if not data:
                    break
                more.append(data)
                size += len(data)
            return b"".join(more) if len(more) > 1 else more[0]

    def write(self, data: bytes) -> None:
        if data:
            self.tls.write(data)
            self._flush()

    async def drain(self) -> None:
        await self.writer.drain()

    def close(self) -> None:
        """A close_notify, then the end of the connection (no wait)."""
        with contextlib.suppress(ssl.SSLError):
            self.tls.unwrap()
        self._flush()
        if self.writer.can_write_eof():
            with contextlib.suppress(OSError):
                self.writer.write_eof()
