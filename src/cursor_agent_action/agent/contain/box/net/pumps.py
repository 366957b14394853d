"""The relay's two directions of one connection: bytes copied as they come, with backpressure;
for TLS, the agent's records held until each handshake message is checked (:mod:`.tls`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from cursor_agent_action.agent.contain.box.net import peek, tls

CHUNK = 64 * 1024
Check = Callable[[peek.Claim], None]
"""Raises to refuse what a request (or the first bytes) claims."""


class Flow:
    """What the two directions of one connection share: bytes moved, the time of the last
    one, whether the relay refused it, and a TLS connection's handshake."""

    def __init__(self) -> None:
        self.moved = [0, 0]  # agent to far end, far end to agent
        self.last = time.monotonic()
        self.refused = False  # the relay refused it: the far end gets a reset, not an end
        self.tls: tls.Handshake | None = None  # a TLS connection's handshake, followed
        self.answered = asyncio.Event()  # the far end's TLS answer changed


async def copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flow: Flow,
               index: int) -> None:
    """Copy until EOF (passed on as a half-close); ``drain`` waits while the other side is
    slow, so at most about the buffer's worth is held per direction."""
    while data := await reader.read(CHUNK):
        writer.write(data)
        flow.moved[index] += len(data)
        flow.last = time.monotonic()
        await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()


async def down(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flow: Flow) -> None:
    """Far end to agent: copied, and for TLS watched until the handshake is decided."""
    while data := await reader.read(CHUNK):
        flow.moved[1] += len(data)
        flow.last = time.monotonic()
        if flow.tls is not None and flow.tls.down(data):
            flow.answered.set()
        writer.write(data)
        await writer.drain()
    if flow.tls is not None:
        flow.tls.ended()
        flow.answered.set()
    if writer.can_write_eof():
        writer.write_eof()


async def up_tls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flow: Flow,
                 first: bytes, check: Check) -> None:
    """Agent to far end on a TLS connection: its records read until the handshake is decided
    (every ClientHello through ``check``, see :mod:`.tls`), then copied. Raises
    :class:`tls.BadTls` on bytes that are not the TLS a server would read."""
    handshake = flow.tls = tls.Handshake(check)
    data = first
    while True:
        try:
            out = handshake.up(data)
        except tls.NoServer:  # the far end gave up: nothing more goes to it
            if writer.can_write_eof():
                writer.write_eof()
            return
        if out:
            writer.write(out)
            flow.moved[0] += len(out)
            await writer.drain()
        if handshake.passing:
            break
        if handshake.waiting():  # a change of cipher before the far end's answer
            flow.answered.clear()
            await flow.answered.wait()
            data = b""
            continue
        data = await reader.read(CHUNK)
        if not data:
            if writer.can_write_eof():
                writer.write_eof()
            return
        flow.last = time.monotonic()
    await copy(reader, writer, flow, 0)
