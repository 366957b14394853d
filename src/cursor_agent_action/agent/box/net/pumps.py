"""The relay's two directions of one connection: bytes copied as they come, with backpressure;
for plain HTTP, the agent's side read request by request (:mod:`.httpflow`), each head checked
before its bytes go on, and a tunnel (``CONNECT``, an upgrade) opened only when the far end's
answer says so."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from cursor_agent_action.agent.box.net import httpflow, peek

CHUNK = 64 * 1024
_DECIDES = 512
"""How much of a first line :func:`httpflow.may_be_request` reads."""
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
    if writer.can_write_eof():
        writer.write_eof()


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


async def up_first_line(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                        flow: Flow, first: bytes, check: Check, *,
                        tunnel: Tunnel | None = None) -> None:
    """Agent to far end while the first line is still open: its bytes go on as they come
    unless it starts with (what may become) a method, the line end and what follows only once
    the line is read: HTTP (checked, then :func:`up_http`), another protocol (copied), or
    almost HTTP (refused by ``check``). A line starting with a method is held back whole (a
    reader may act on a line the connection's end cuts short: Python's does)."""
    buffer = bytearray(first)
    sent = scanned = 0
    line_end = -1
    data = first
    while True:  # the line ends at a CR or an LF: a lenient reader may take a lone CR
        if line_end < 0:  # only the new bytes are searched (a byte at a time stays linear)
            ends = [i for i in (buffer.find(b"\r", scanned), buffer.find(b"\n", scanned))
                    if i >= 0]
            line_end, scanned = (min(ends) if ends else -1), len(buffer)
        ready = line_end >= 0 or len(buffer) >= peek.MAX_PEEK
        # A method is a short word: its first bytes tell (a long blank run is held anyway).
        line = bytes(buffer[: min(line_end if line_end >= 0 else len(buffer), _DECIDES)])
        if httpflow.may_be_request(line):
            keep = sent  # a reader may act on it at the connection's end: held back whole
        else:
            keep = line_end if line_end >= 0 else len(buffer) if not ready else sent
        if keep > sent:
            writer.write(bytes(buffer[sent:keep]))
            flow.moved[0] += keep - sent
            sent = keep
            await writer.drain()
        # Parsed again only when a line ended (a byte at a time costs no more).
        reparse = ready and (b"\n" in data or b"\r" in data or len(buffer) >= peek.MAX_PEEK)
        claim = peek.claim(bytes(buffer)) if reparse else None
        if claim is not None and claim.status != peek.MORE:
            break
        data = await reader.read(CHUNK)
        if not data:  # the end: what is held back (a line end, a head) stays here
            if sent < len(buffer):
                check(peek.Claim(peek.BAD))
            if writer.can_write_eof():
                writer.write_eof()
            return
        buffer += data
        flow.last = time.monotonic()
    check(claim)
    if claim.http:
        await up_http(reader, writer, flow, bytes(buffer), check, skip=sent,
                      tunnel=tunnel)
        return
    writer.write(bytes(buffer[sent:]))
    flow.moved[0] += len(buffer) - sent
    await copy(reader, writer, flow, 0)
