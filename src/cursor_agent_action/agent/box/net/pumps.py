"""The relay's two directions of one connection: bytes copied as they come, with backpressure;
for plain HTTP, the agent's side read request by request (:mod:`.httpflow`), each head checked
before its bytes go on, and a tunnel (``CONNECT``, an upgrade) opened only when the far end's
answer says so."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from cursor_agent_action.agent.box.net import httpflow, peek, tls

CHUNK = 64 * 1024
Check = Callable[[peek.Claim], None]
"""Raises to refuse what a request (or the first bytes) claims."""


class Flow:
    """What the two directions of one connection share: bytes moved, the time of the last
    one, and, for plain HTTP, the requests read and whether a tunnel was opened."""

    def __init__(self) -> None:
        self.moved = [0, 0]  # agent to far end, far end to agent
        self.last = time.monotonic()
        self.requests: httpflow.Requests | None = None
        self.decided = asyncio.Event()
        self.opened = False
        self.refused = False  # the relay refused it: the far end gets a reset, not an end
        self.tls: tls.Handshake | None = None  # a TLS connection's handshake, followed
        self.answered = asyncio.Event()  # the far end's TLS answer changed

    def awaits_answer(self) -> httpflow.Head | None:
        """The tunnel request whose answer is not read yet."""
        tunnel = self.requests.tunnel if self.requests is not None else None
        return tunnel if tunnel is not None and not self.decided.is_set() else None

    def decide(self, opened: bool) -> None:
        self.opened = opened
        self.decided.set()


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
    """Far end to agent. The answer to a tunnel request is read whole first: a 2xx to
    ``CONNECT`` (101 to an upgrade) opens the tunnel, anything else ends the connection once
    the answer's head is passed on."""
    head = bytearray()
    while data := await reader.read(CHUNK):
        flow.moved[1] += len(data)
        flow.last = time.monotonic()
        if flow.tls is not None and flow.tls.down(data):
            flow.answered.set()
        tunnel = flow.awaits_answer()
        if tunnel is not None:
            head += data
            end = head.find(b"\r\n\r\n")
            if end < 0 and len(head) <= httpflow.MAX_HEAD:
                continue
            opened = end >= 0 and httpflow.tunnel_opens(
                tunnel, httpflow.response_status(bytes(head[:end])))
            flow.decide(opened)
            if end < 0:  # no answer's head within 64 KiB
                return
            # The answer, whole: a tunnel's first bytes, or a refusal (a 407's body, a 200 to
            # an upgrade not made) after which the agent's side sends nothing more.
            writer.write(bytes(head))
            await writer.drain()
            continue
        writer.write(data)
        await writer.drain()
    flow.decide(False)
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


Tunnel = Callable[[httpflow.Head, bytes], Awaitable[None]]
"""Carries an opened tunnel on: its request and what the agent sent after it."""


async def up_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flow: Flow,
                  first: bytes, check: Check, *, skip: int = 0,
                  tunnel: Tunnel | None = None) -> None:
    """Agent to far end on a plain HTTP connection: each request's head goes through
    ``check`` (which raises to refuse) before any of its bytes go on (``skip``: how many of
    ``first``'s bytes went on already). Raises :class:`httpflow.BadRequest` on bytes that are
    no request. ``tunnel`` carries an opened tunnel on (without one, a tunnel request is
    refused: no tunnel inside a tunnel)."""
    requests = flow.requests = httpflow.Requests()
    data = first
    while True:
        for piece, head in requests.feed(data):
            if head is not None:
                check(peek.http_claim(head))
                if head.tunnel and tunnel is None:
                    raise httpflow.BadRequest("a tunnel request inside a tunnel")
            fresh = piece[skip:]
            skip = max(0, skip - len(piece))
            writer.write(fresh)
            flow.moved[0] += len(fresh)
            await writer.drain()
        if requests.tunnel is not None and tunnel is not None:
            await flow.decided.wait()
            if flow.opened:
                await tunnel(requests.tunnel, requests.rest())
            elif writer.can_write_eof():  # refused: the answer goes back, no more requests
                writer.write_eof()
            return
        data = await reader.read(CHUNK)
        if not data:
            break
        flow.last = time.monotonic()
    if writer.can_write_eof():
        writer.write_eof()
