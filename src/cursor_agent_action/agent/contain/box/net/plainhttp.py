"""Plain HTTP through the relay, terminated: the far end reads only requests the relay wrote.

Each of the agent's requests is read with h11 (a well-kept HTTP/1.1 implementation), checked
(:func:`check_request`: the ``Host`` names the dialed name, the target is origin-form, no
``CONNECT``, no absolute form, no protocol upgrade: nothing in the box is a proxy), and sent to
the far end as a request the relay composes itself from the parsed parts, with h11's framing,
on a connection of its own marked ``Connection: close``: a far end that ignores a body closes
instead of reading the body as a next request. The answer comes back the same way (parsed,
framed anew for the agent, ``Connection: close`` too: one request a connection).
Hop-by-hop fields (RFC 9110, 7.6.1) are not passed on, nor ``Max-Forwards``: with it a proxy on
the way answers a TRACE or OPTIONS itself. ``TRACE`` and ``TRACK`` are refused: their answer
echoes the request as a proxy on the way received it, credentials included (RFC 9110, 9.3.8).
The runner proxy's credentials never go on a request this module composes: the relay's own
``CONNECT`` (``upstream.tunnel``) is the only request that carries them.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import h11

from cursor_agent_action.agent.contain.box.net.pumps import Flow

MAX_HEAD = 64 * 1024
CHUNK = 64 * 1024
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"expect",
        b"http2-settings",
        b"max-forwards",  # end to end, but it makes a proxy on the way answer itself
    }
)
ECHOING = frozenset({b"TRACE", b"TRACK"})
"""Methods whose answer is the request as received (TRACK: IIS's TRACE)."""
_ORIGIN_FORM = re.compile(rb"/(?!/)[\x21-\x5b\x5d-\x7e]*")
"""A path and query of visible ASCII; not ``//`` first nor a backslash anywhere (WHATWG URL
readers, node's, take ``//host`` and ``/\\host`` for a URL with a host)."""
_AUTHORITY = re.compile(rb"([A-Za-z0-9._-]+)(?::(\d{1,5}))?")


@dataclass(frozen=True)
class Upstream:
    """The relay's connection for the request: to the far end (perhaps through a ``CONNECT``
    tunnel), or to the runner's HTTP proxy when it takes no credentials (then the target gets
    ``prefix``, absolute form)."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    prefix: bytes = b""


Connect = Callable[[], Awaitable[Upstream]]
"""The relay's connection for the request (made when the agent's connection came)."""


class BadRequest(Exception):
    """A request the relay does not pass on (the connection is refused)."""


class OtherHost(BadRequest):
    """A request whose ``Host`` names another host or port than the one dialed."""

    def __init__(self, asked: str) -> None:
        super().__init__(f"the connection asks for {asked}")
        self.asked = asked


def check_request(request: h11.Request, name: str, port: int) -> bytes:
    """The ``Host`` to send for ``request`` on a connection dialed to ``name:port``; raises
    :class:`BadRequest` (:class:`OtherHost`) to refuse it."""
    method = request.method.upper()
    if method == b"CONNECT":
        raise BadRequest("a CONNECT: nothing in the box is a proxy")
    if method in ECHOING:
        raise BadRequest(f"a {method.decode('ascii', 'replace')} request: its answer echoes "
                         "the request as a proxy on the way received it")
    target = request.target
    if not _ORIGIN_FORM.fullmatch(target) and not (target == b"*" and method == b"OPTIONS"):
        if not target.startswith(b"/"):
            raise BadRequest("an absolute-form request: nothing in the box is a proxy")
        raise BadRequest("a request target that is not a plain path (a byte outside visible "
                         "ASCII, a backslash, or // first)")
    upgrades = _tokens(request.headers, b"upgrade")
    if upgrades - {b"h2c"}:  # h2c (curl --http2) is left out: the answer is HTTP/1.1's
        raise BadRequest("a protocol upgrade on plain HTTP (use TLS: wss://, https://)")
    hosts = [value for field, value in request.headers if field == b"host"]
    if len(hosts) > 1:
        raise BadRequest("two Host fields")
    default = name if port == 80 else f"{name}:{port}"
    if hosts:
        match = _AUTHORITY.fullmatch(hosts[0])
        if match is None:
            raise OtherHost(hosts[0].decode("latin-1"))
        host = match.group(1).decode().rstrip(".").lower()
        asked = int(match.group(2)) if match.group(2) else 0
        if host != name or (asked and asked != port):
            raise OtherHost(hosts[0].decode("latin-1"))
        return hosts[0]  # as the agent wrote it: the dialed name, with or without its port
    return default.encode()


def compose(request: h11.Request, host: bytes, prefix: bytes = b"") -> h11.Request:
    """The relay's own request for the agent's ``request`` (checked): its method, target and
    end-to-end fields, the dialed ``host``, ``Connection: close``; h11 frames its body. To the
    runner's proxy: the target after ``prefix`` (absolute form). Never a credential of ours:
    the request carries the agent's method, target and fields."""
    chunked = any(field == b"transfer-encoding" for field, _ in request.headers)
    # Never both lengths (RFC 9112 6.2): h11 read the body as chunked, so a Content-Length
    # beside it would make a far end that frames by it read the body's bytes as a request.
    headers = [(field, value) for field, value in _forwarded(list(request.headers))
               if not (chunked and field == b"content-length")]
    headers += [(b"host", host), (b"connection", b"close")]
    if chunked:
        headers.append((b"transfer-encoding", b"chunked"))  # h11 read no other coding
    return h11.Request(method=request.method, target=prefix + request.target, headers=headers)


def _forwarded(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The end-to-end fields of ``headers`` (hop-by-hop ones and those ``Connection``
    names dropped; never the body's length, which ``Connection`` cannot take away: the
    request would lose its framing)."""
    dropped = HOP_BY_HOP | (_tokens(headers, b"connection") - {b"content-length"})
    return [(field, value) for field, value in headers if field not in dropped]


def _tokens(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> set[bytes]:
    """The comma-separated tokens of every ``name`` field, trimmed and lower-cased."""
    return {
        token.strip().lower()
        for field, value in headers
        if field == name
        for token in value.split(b",")
    }


async def _next(connection: h11.Connection, reader: asyncio.StreamReader,
                flow: Flow) -> object:
    """The next event of ``connection``, reading ``reader`` as needed."""
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await reader.read(CHUNK)
        flow.last = time.monotonic()
        connection.receive_data(data)


@dataclass(frozen=True)
class Exit:
    """The agent's side of one plain HTTP connection and the name and port it dialed."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    name: str
    port: int


@dataclass(frozen=True)
class Far:
    """One connection of the relay's to the far end, and the h11 reading it."""

    upstream: Upstream
    http: h11.Connection

    @property
    def reader(self) -> asyncio.StreamReader:
        return self.upstream.reader

    @property
    def writer(self) -> asyncio.StreamWriter:
        return self.upstream.writer


async def serve(exit_: Exit, first: bytes, connect: Connect, flow: Flow) -> None:
    """The agent's plain HTTP connection (``first``: its bytes read so far): its request to
    the far end's connection from ``connect``, the answer back, then the end (one request a
    connection). Raises :class:`BadRequest`."""
    agent = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    agent.receive_data(first)
    try:
        request = await _next(agent, exit_.reader, flow)
        if isinstance(request, h11.ConnectionClosed):
            return
        if not isinstance(request, h11.Request):
            raise BadRequest("not a request")
        host = check_request(request, exit_.name, exit_.port)
        upstream = await connect()
        far = Far(upstream, h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD))
        await _exchange(agent, exit_, request, host=host, far=far, flow=flow)
    except h11.RemoteProtocolError as exc:
        raise BadRequest(f"not an HTTP/1.1 request h11 reads ({exc})") from None
    finally:
        if exit_.writer.can_write_eof():
            exit_.writer.write_eof()


async def _exchange(agent: h11.Connection, exit_: Exit, request: h11.Request, *,
                    host: bytes, far: Far, flow: Flow) -> None:
    """One request composed anew to the far end, its answer back."""
    reader, writer = exit_.reader, exit_.writer
    data = far.http.send(compose(request, host, far.upstream.prefix))
    if agent.they_are_waiting_for_100_continue:  # the far end hears no Expect: we answer
        writer.write(agent.send(h11.InformationalResponse(status_code=100, headers=[])))
    far.writer.write(data or b"")
    flow.moved[0] += len(data or b"")
    body = asyncio.ensure_future(_body(agent, reader, far, flow))
    answer = asyncio.ensure_future(_answer(far, agent, writer, flow))
    try:
        # The answer may come before the body ends (a 413): then the connection ends there.
        done, _ = await asyncio.wait({body, answer}, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # a refusal or an error raises here
        if answer not in done:
            await answer
    finally:
        for task in (body, answer):
            task.cancel()


async def _body(agent: h11.Connection, reader: asyncio.StreamReader, far: Far,
                flow: Flow) -> None:
    """The request's body, framed anew (h11: its length, else chunked)."""
    while True:
        event = await _next(agent, reader, flow)
        try:
            if isinstance(event, h11.Data):
                out = far.http.send(h11.Data(data=event.data)) or b""
            elif isinstance(event, h11.EndOfMessage):
                out = far.http.send(h11.EndOfMessage()) or b""
            else:
                return  # the agent's end before the body's: the far end sees an end
        except h11.LocalProtocolError as exc:  # a body the relay's own framing cannot carry
            raise BadRequest(f"a body the relay cannot frame ({exc})") from None
        far.writer.write(out)
        flow.moved[0] += len(out)
        await far.writer.drain()
        if isinstance(event, h11.EndOfMessage):
            return


async def _answer(far: Far, agent: h11.Connection, writer: asyncio.StreamWriter,
                  flow: Flow) -> None:
    """The far end's answer, read with h11 and framed anew for the agent."""
    while True:
        try:
            event = await _next(far.http, far.reader, flow)
        except h11.RemoteProtocolError:
            return  # a far end that does not answer HTTP: the agent's connection ends
        if isinstance(event, h11.Response):
            fields = list(event.headers)
            chunked = any(field == b"transfer-encoding" for field, _ in fields)
            headers = [*((field, value) for field, value in _forwarded(fields)
                         if not (chunked and field == b"content-length")),
                       (b"connection", b"close")]  # one request a connection, as upstream
            out = agent.send(h11.Response(status_code=event.status_code, headers=headers,
                                          reason=event.reason))
        elif isinstance(event, h11.Data):
            out = agent.send(h11.Data(data=event.data))
        elif isinstance(event, h11.EndOfMessage):
            out = agent.send(h11.EndOfMessage())
        elif isinstance(event, h11.InformationalResponse):
            continue  # 100 was ours to send; 101 cannot come (no upgrade is passed on)
        else:
            return  # the far end closed before its answer ended
        writer.write(out or b"")
        flow.moved[1] += len(out or b"")
        await writer.drain()
        if isinstance(event, h11.EndOfMessage):
            return
