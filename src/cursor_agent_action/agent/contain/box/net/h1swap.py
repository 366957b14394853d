"""HTTP/1.1 to Cursor's service, terminated (:mod:`.terminate`): each of the agent's requests
read with h11, checked, its placeholders swapped for the real values (:mod:`.swap`), composed
anew to Cursor; each answer read with h11, its real values swapped for placeholders, composed
anew to the agent. Bodies stream (a :class:`~.swap.Rewriter` each), except the exchange's
answer, read whole (a few hundred bytes) to mask its tokens however they are shaped.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11

from cursor_agent_action.agent.contain.box.net.codings import coded, upstream
from cursor_agent_action.agent.contain.box.net.credentials import EXCHANGE_PATH, Tally
from cursor_agent_action.agent.contain.box.net.swap import (
    DOWN,
    UP,
    Rewriter,
    Vault,
    request_body,
    response_body,
)
from cursor_agent_action.agent.contain.box.net.tlspipe import TlsPipe

MAX_REQUESTS = 10_000
MAX_HEAD = 64 * 1024
MAX_EXCHANGE_ANSWER = 1 << 20
TOKEN_FIELDS = ("accessToken", "refreshToken", "token", "authToken")
Refuse = Callable[[str, str], None]


@dataclass(frozen=True)
class Session:
    """One terminated connection: the run's values and their tally, how a request is
    refused, and the TLS name and port the agent dialed."""

    vault: Vault
    tally: Tally
    refuse: Refuse
    name: str
    port: int


def target_of(target: bytes, name: str, port: int) -> bytes | None:
    """The origin-form target of a request line (an absolute URI must name ``name``), None
    when it names another host."""
    lowered = target.lower()
    for scheme in (b"https://", b"http://"):
        if lowered.startswith(scheme):
            rest = target[len(scheme):]
            authority, slash, path = rest.partition(b"/")
            if b"@" in authority or not host_named(authority.decode("latin-1"), name, port):
                return None
            return b"/" + path if slash else b"/"
    if target.startswith(b"/") or target == b"*":
        return target
    return None


def host_named(value: str, name: str, port: int) -> bool:
    """A ``Host`` or ``:authority`` that names the TLS name (with its port or none)."""
    host = value.strip().lower()
    for suffix in (f":{port}",):
        if host.endswith(suffix):
            host = host[: -len(suffix)]
    return host.rstrip(".") == name


def misdirected(method: bytes, target: bytes, host: str | None, name: str,
                port: int) -> str:
    """Why a request gets no credentials ("" when it may have them)."""
    if method.upper() == b"CONNECT":
        return "a CONNECT through the connection to Cursor's service"
    if target_of(target, name, port) is None:
        return (f"a request for {target[:100].decode('latin-1')!r} on the TLS connection to "
                f"{name}")
    if host is None or not host_named(host, name, port):
        return f"a request for host {host!r} on the TLS connection to {name}"
    return ""


async def _next(conn: h11.Connection, pipe: TlsPipe) -> Any:
    """The next h11 event of ``conn``, reading ``pipe`` as needed (None: closed or bad)."""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError:
            return None
        if event is h11.NEED_DATA:
            try:
                conn.receive_data(await pipe.read())
            except h11.RemoteProtocolError:
                return None
            continue
        if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return None
        return event


def exchange_answer(vault: Vault, tally: Tally, status: int, body: bytes) -> bytes:
    """The exchange's answer, its tokens masked (whatever their shape); a failed exchange is
    told (the CLI would fall back to a browser sign-in: a hang in CI)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    tokens = [data.get(field) for field in TOKEN_FIELDS] if isinstance(data, dict) else []
    if status != 200 or not any(isinstance(token, str) and token for token in tokens):
        shown = body[:120].decode("utf-8", "replace").replace("\n", " ")
        tally.exchange_failed(f"Cursor's service answered the key exchange with HTTP {status}"
                              + ("" if isinstance(data, dict) else " and no JSON")
                              + (f": {shown}" if shown and status != 200 else ""))
    else:
        tally.count(exchanges=1)
    for token in tokens:
        if isinstance(token, str) and len(token) >= 8:
            vault.mask(token)
    return vault.swap_text(body, DOWN)


async def relay(session: Session, agent: TlsPipe, far: TlsPipe) -> None:
    """Requests on one terminated HTTP/1.1 connection, until either end closes it."""
    vault, tally, name, port = session.vault, session.tally, session.name, session.port
    server = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    client = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    for _ in range(MAX_REQUESTS):
        request = await _next(server, agent)
        if not isinstance(request, h11.Request):
            return
        host = next((v.decode("latin-1") for k, v in request.headers if k == b"host"), None)
        why = misdirected(request.method, request.target, host, name, port)
        if why:
            session.refuse(name, why)
            status = 405 if request.method.upper() == b"CONNECT" else 421
            body = f"cursor-agent-action: refused: {why}\n".encode()
            agent.write(server.send(h11.Response(status_code=status, headers=[
                ("content-type", "text/plain"), ("content-length", str(len(body))),
                ("connection", "close")])) + server.send(h11.Data(data=body))
                + server.send(h11.EndOfMessage()))
            await agent.drain()
            return
        target = target_of(request.target, name, port) or b"/"
        exchange = target.split(b"?", 1)[0] == EXCHANGE_PATH.encode()
        headers = vault.swap_headers(upstream(request.headers), UP)
        far.write(client.send(h11.Request(method=request.method, target=target,
                                          headers=headers)))
        tally.count(requests=1)
        if not await _body(server, agent, client, far, request_body(vault, target)):
            return
        await far.drain()
        if not await _answer(session, (server, agent), (client, far), exchange=exchange):
            return
        if server.our_state is not h11.DONE or client.our_state is not h11.DONE:
            return
        try:
            server.start_next_cycle()
            client.start_next_cycle()
        except h11.LocalProtocolError:
            return


async def _body(source: h11.Connection, reader: TlsPipe, sink: h11.Connection,
                writer: TlsPipe, rewriter: Rewriter) -> bool:
    """One message's body from ``source`` to ``sink``, rewritten as it streams."""
    while True:
        event = await _next(source, reader)
        if isinstance(event, h11.Data):
            out = rewriter.feed(bytes(event.data))
            if out:
                writer.write(sink.send(h11.Data(data=out)))
                await writer.drain()
        elif isinstance(event, h11.EndOfMessage):
            tail = rewriter.end()
            if tail:
                writer.write(sink.send(h11.Data(data=tail)))
            trailers = rewriter.vault.swap_headers(event.headers, rewriter.direction)
            writer.write(sink.send(h11.EndOfMessage(headers=trailers)))
            await writer.drain()
            return True
        else:
            return False


async def _answer(session: Session, to_agent: tuple[h11.Connection, TlsPipe],
                  to_far: tuple[h11.Connection, TlsPipe], *, exchange: bool) -> bool:
    """Cursor's answer to one request, to the agent (see the module docstring)."""
    vault, tally = session.vault, session.tally
    (server, agent), (client, far) = to_agent, to_far
    while True:
        response = await _next(client, far)
        if isinstance(response, h11.InformationalResponse):
            if response.status_code == 101:  # an upgrade: bytes both ways, still swapped
                agent.write(server.send(response))
                await _switched(vault, server, agent, client, far)
                return False
            agent.write(server.send(h11.InformationalResponse(
                status_code=response.status_code, headers=_down(vault, response.headers),
                reason=response.reason)))
            continue
        if not isinstance(response, h11.Response):
            return False
        break
    headers = _down(vault, response.headers)
    if coding := coded(response.headers):  # its bytes cannot be swapped: none go on
        session.refuse(session.name, f"an answer in a coding the relay cannot read ({coding})")
        said = b"cursor-agent-action: refused: an answer the relay cannot read\n"
        agent.write(server.send(h11.Response(status_code=502, headers=[
            ("content-type", "text/plain"), ("content-length", str(len(said))),
            ("connection", "close")])) + server.send(h11.Data(data=said))
            + server.send(h11.EndOfMessage()))
        await agent.drain()
        if exchange:
            tally.exchange_failed(f"Cursor's service answered the key exchange coded ({coding})")
        return False
    if not exchange:
        agent.write(server.send(h11.Response(status_code=response.status_code, headers=headers,
                                             reason=response.reason)))
        return await _body(client, far, server, agent, response_body(vault, response.headers))
    body = bytearray()
    while True:
        event = await _next(client, far)
        if isinstance(event, h11.Data):
            body += event.data
            if len(body) > MAX_EXCHANGE_ANSWER:
                tally.exchange_failed("Cursor's service answered the key exchange with over "
                                      f"{MAX_EXCHANGE_ANSWER} bytes")
                return False
        elif isinstance(event, h11.EndOfMessage):
            break
        else:
            return False
    masked = exchange_answer(vault, tally, response.status_code, bytes(body))
    agent.write(server.send(h11.Response(status_code=response.status_code, headers=headers,
                                         reason=response.reason)))
    agent.write(server.send(h11.Data(data=masked)) if masked else b"")
    agent.write(server.send(h11.EndOfMessage()))
    await agent.drain()
    return True


def _down(vault: Vault, headers: Any) -> list[tuple[bytes, bytes]]:
    return vault.swap_headers(headers, DOWN)


async def _switched(vault: Vault, server: h11.Connection, agent: TlsPipe,
                    client: h11.Connection, far: TlsPipe) -> None:
    """After a 101: the bytes of both directions, swapped as they stream."""
    await agent.drain()

    async def pump(reader: TlsPipe, writer: TlsPipe, first: bytes, direction: str) -> None:
        rewriter = Rewriter(vault, direction, active=direction == DOWN)
        data = first
        while True:
            out = rewriter.feed(data) if data else b""
            if out:
                writer.write(out)
                await writer.drain()
            data = await reader.read()
            if not data:
                writer.write(rewriter.end())
                return

    up = asyncio.ensure_future(pump(agent, far, bytes(server.trailing_data[0]), UP))
    down = asyncio.ensure_future(pump(far, agent, bytes(client.trailing_data[0]), DOWN))
    try:
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        up.cancel()
        down.cancel()
