"""HTTP/2 to Cursor's service, terminated (:mod:`.terminate`): the agent's connection and the
relay's to Cursor are two h2 connections; each request's headers (HPACK decoded by h2) are
checked, swapped and encoded anew on the other; bodies (ConnectRPC unary calls and streams)
flow frame by frame through a :class:`~.swap.Rewriter` per stream and direction, within each
side's flow control (a frame is acknowledged to its sender once it went on: the relay holds no
more than the windows allow).

Refused, with no credential sent: a request whose ``:authority`` (or ``host``) is not the TLS
name (HTTP/2 coalescing, a fronted name: 421, which makes clients open a connection of its
own), ``CONNECT`` (and extended CONNECT: 405). The relay's client side refuses server push.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
import hyperframe.frame

from cursor_agent_action.agent.contain.box.net.codings import coded, upstream
from cursor_agent_action.agent.contain.box.net.credentials import EXCHANGE_PATH
from cursor_agent_action.agent.contain.box.net.h1swap import (
    MAX_EXCHANGE_ANSWER,
    Session,
    exchange_answer,
    misdirected,
)
from cursor_agent_action.agent.contain.box.net.swap import (
    DOWN,
    UP,
    Rewriter,
    request_body,
    response_body,
)
from cursor_agent_action.agent.contain.box.net.tlspipe import TlsPipe


def _quiet_data_repr() -> None:
    """h2 formats every frame it receives for a debug line it writes only to a logger it was
    given (``repr(frame)`` in ``H2Connection._receive_frame``), and hyperframe's repr of a DATA
    frame copies the payload and hex-dumps all of it to show its first 10 bytes: a third of the
    relay's CPU on a stream. The same text from the first 11 bytes of an unpadded frame (once
    a process; a hyperframe whose DATA frames repr themselves is left alone)."""
    data_frame = hyperframe.frame.DataFrame
    shown = getattr(hyperframe.frame, "_raw_data_repr", None)
    if shown is None or "_body_repr" in vars(data_frame):
        return
    whole = data_frame._body_repr

    def quiet(frame: hyperframe.frame.DataFrame) -> str:
        if "PADDED" in frame.flags:
            return str(whole(frame))
        return str(shown(frame.data[:11]))

    data_frame._body_repr = quiet  # type: ignore[method-assign, assignment]


_quiet_data_repr()

WINDOW = 1 << 20
"""Each stream's and each connection's receive window (bytes held per direction at most)."""
MAX_STREAMS = 100
Headers = list[tuple[bytes, bytes]]


@dataclass
class _Way:
    """One direction of one stream: what waits for the receiver's window, then its end."""

    rewriter: Rewriter
    queue: deque[tuple[bytes, int]] = field(default_factory=deque)  # data, bytes to ack
    ending: bool = False
    trailers: Headers | None = None
    done: bool = False


@dataclass
class _Stream:
    agent_id: int
    far_id: int
    up: _Way
    down: _Way
    exchange: bool = False
    exchange_head: Headers | None = None
    exchange_body: bytearray = field(default_factory=bytearray)


class Relay:
    """One terminated HTTP/2 connection's two h2 connections and streams, driven by
    :func:`relay` (the pipes need only ``write``: the driver reads and drains them)."""

    def __init__(self, session: Session, agent: TlsPipe, far: TlsPipe) -> None:
        self.vault, self.tally, self.refuse = session.vault, session.tally, session.refuse
        self.name, self.port = session.name, session.port
        self.agent_pipe, self.far_pipe = agent, far
        self.agent = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding=None))
        self.far = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding=None))
        self.by_agent: dict[int, _Stream] = {}
        self.by_far: dict[int, _Stream] = {}
        self.closed = False

    def start(self) -> None:
        codes = h2.settings.SettingCodes
        self.agent.initiate_connection()
        self.agent.update_settings({codes.INITIAL_WINDOW_SIZE: WINDOW,
                                    codes.MAX_CONCURRENT_STREAMS: MAX_STREAMS})
        self.far.initiate_connection()
        self.far.update_settings({codes.INITIAL_WINDOW_SIZE: WINDOW, codes.ENABLE_PUSH: 0})
        for conn in (self.agent, self.far):
            conn.increment_flow_control_window(WINDOW - 65535)
        self.flush()

    def flush(self) -> None:
        self.agent_pipe.write(self.agent.data_to_send())
        self.far_pipe.write(self.far.data_to_send())

    # -- the agent's side ----------------------------------------------------------------

    def _refuse_request(self, stream_id: int, status: int, why: str) -> None:
        self.refuse(self.name, why)
        body = f"cursor-agent-action: refused: {why}\n".encode()
        self.agent.send_headers(stream_id, [(b":status", str(status).encode()),
                                            (b"content-type", b"text/plain"),
                                            (b"content-length", str(len(body)).encode())])
        self.agent.send_data(stream_id, body, end_stream=True)

    def on_request(self, event: h2.events.RequestReceived) -> None:
        headers: Headers = [(bytes(k), bytes(v)) for k, v in event.headers or []]
        pseudo = {k: v for k, v in headers if k.startswith(b":")}
        method = pseudo.get(b":method", b"")
        authority = pseudo.get(b":authority")
        hosts = [v.decode("latin-1") for k, v in headers if k == b"host"]
        host = authority.decode("latin-1") if authority is not None else (
            hosts[0] if hosts else None)
        why = misdirected(method, pseudo.get(b":path", b"/"), host, self.name, self.port)
        if not why and any(h != host for h in hosts):
            why = f"a host header {hosts[0]!r} beside :authority {host!r}"
        if not why and b":protocol" in pseudo:
            why = "an extended CONNECT through the connection to Cursor's service"
        if why:
            status = 405 if method.upper() == b"CONNECT" else 421
            self._refuse_request(event.stream_id, status, why)
            return
        path = pseudo.get(b":path", b"/")
        far_id = self.far.get_next_available_stream_id()
        swapped = self.vault.swap_headers(upstream(headers), UP)
        try:
            self.far.send_headers(far_id, swapped, end_stream=event.stream_ended is not None)
        except h2.exceptions.TooManyStreamsError:
            self.agent.reset_stream(event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        stream = _Stream(event.stream_id, far_id, _Way(request_body(self.vault, path)),
                         _Way(Rewriter(self.vault, DOWN)),
                         exchange=path.split(b"?", 1)[0] == EXCHANGE_PATH.encode())
        stream.up.done = event.stream_ended is not None
        self.by_agent[event.stream_id] = stream
        self.by_far[far_id] = stream
        self.tally.count(requests=1)

    def on_agent(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self.on_request(event)
        elif isinstance(event, h2.events.DataReceived):
            stream = self.by_agent.get(event.stream_id)
            if stream is None or stream.up.ending:
                self._ack(self.agent, event.flow_controlled_length, event.stream_id)
                return
            stream.up.queue.append((stream.up.rewriter.feed(event.data),
                                    event.flow_controlled_length))
        elif isinstance(event, h2.events.TrailersReceived):
            stream = self.by_agent.get(event.stream_id)
            if stream is not None:
                stream.up.trailers = self.vault.swap_headers(
                    [(bytes(k), bytes(v)) for k, v in event.headers or []], UP)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self.by_agent.get(event.stream_id)
            if stream is not None and not stream.up.done:
                stream.up.queue.append((stream.up.rewriter.end(), 0))
                stream.up.ending = True
        elif isinstance(event, h2.events.StreamReset):
            stream = self.by_agent.pop(event.stream_id, None)
            if stream is not None:
                self.by_far.pop(stream.far_id, None)
                with contextlib.suppress(h2.exceptions.ProtocolError):
                    self.far.reset_stream(stream.far_id, event.error_code or 0)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.closed = True

    # -- Cursor's side -------------------------------------------------------------------

    def on_far(self, event: h2.events.Event) -> None:
        """One event of Cursor's side: the connection's own, or a stream's (by its kind)."""
        if type(event) is h2.events.DataReceived:  # most of them: straight on
            stream = self.by_far.get(event.stream_id or 0)
            if stream is not None:
                self._far_data(stream, event)
            else:  # one the relay reset or forgot: its bytes are dropped
                self._ack(self.far, event.flow_controlled_length or 0, event.stream_id or 0)
            return
        if isinstance(event, h2.events.PushedStreamReceived):
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.far.reset_stream(event.pushed_stream_id or 0,
                                      h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        if isinstance(event, h2.events.ConnectionTerminated):
            self.closed = True
            return
        stream = self.by_far.get(getattr(event, "stream_id", 0) or 0)
        if stream is None:
            return
        if isinstance(event, (h2.events.ResponseReceived,
                              h2.events.InformationalResponseReceived)):
            self._far_head(stream, event)
        elif isinstance(event, h2.events.TrailersReceived):
            stream.down.trailers = self.vault.swap_headers(
                [(bytes(k), bytes(v)) for k, v in event.headers or []], DOWN)
        elif isinstance(event, h2.events.StreamEnded):
            self._far_ended(stream)
        elif isinstance(event, h2.events.StreamReset):
            self._far_reset(stream, event.error_code or 0)

    def _far_head(self, stream: _Stream, event: h2.events.ResponseReceived
                  | h2.events.InformationalResponseReceived) -> None:
        """An answer's headers (or a 1xx's): refused whole when coded, masked, passed on;
        the exchange's kept until its body is read."""
        raw = [(bytes(k), bytes(v)) for k, v in event.headers or []]
        if coding := coded(raw):
            self.refuse(self.name, f"an answer in a coding the relay cannot read ({coding})")
            if stream.exchange:
                self.tally.exchange_failed(
                    f"Cursor's service answered the key exchange coded ({coding})")
            self._reset(stream)  # none of its bytes go on
            return
        headers = self.vault.swap_headers(raw, DOWN)
        final = isinstance(event, h2.events.ResponseReceived)
        ended = isinstance(event, h2.events.ResponseReceived) and event.stream_ended is not None
        if final:
            stream.down.rewriter = response_body(self.vault, raw)
        if stream.exchange and final:
            stream.exchange_head = headers
            if ended:
                self._exchange_done(stream)
            return
        self.agent.send_headers(stream.agent_id, headers, end_stream=ended)
        if ended:
            stream.down.done = True
            self._forget(stream)

    def _far_data(self, stream: _Stream, event: h2.events.DataReceived) -> None:
        """A DATA frame of an answer: rewritten and queued (the exchange's: kept whole)."""
        data = event.data or b""
        if stream.exchange:
            stream.exchange_body += data
            self._ack(self.far, event.flow_controlled_length, stream.far_id)
            if len(stream.exchange_body) > MAX_EXCHANGE_ANSWER:
                self.tally.exchange_failed("Cursor's service answered the key exchange "
                                           f"with over {MAX_EXCHANGE_ANSWER} bytes")
                self._reset(stream)
            return
        stream.down.queue.append((stream.down.rewriter.feed(data),
                                  event.flow_controlled_length or 0))

    def _far_ended(self, stream: _Stream) -> None:
        """The end of an answer: what the rewriter held goes on, then the end."""
        if stream.exchange:
            self._exchange_done(stream)
            return
        stream.down.queue.append((stream.down.rewriter.end(), 0))
        stream.down.ending = True

    def _far_reset(self, stream: _Stream, code: int) -> None:
        """Cursor reset the stream: so is the agent's."""
        self.by_far.pop(stream.far_id, None)
        self.by_agent.pop(stream.agent_id, None)
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.agent.reset_stream(stream.agent_id, code)

    def _exchange_done(self, stream: _Stream) -> None:
        head = stream.exchange_head or [(b":status", b"502")]
        status = next((int(v) for k, v in head if k == b":status" and v.isdigit()), 0)
        body = exchange_answer(self.vault, self.tally, status, bytes(stream.exchange_body))
        self.agent.send_headers(stream.agent_id, head)
        stream.exchange = False
        stream.down.queue.append((body, 0))
        stream.down.ending = True

    # -- moving data within the windows --------------------------------------------------

    @staticmethod
    def _ack(conn: h2.connection.H2Connection, size: int, stream_id: int) -> None:
        if size > 0:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                conn.acknowledge_received_data(size, stream_id)

    def _reset(self, stream: _Stream) -> None:
        self._forget(stream)
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.far.reset_stream(stream.far_id, h2.errors.ErrorCodes.CANCEL)
        with contextlib.suppress(h2.exceptions.ProtocolError):
            self.agent.reset_stream(stream.agent_id, h2.errors.ErrorCodes.INTERNAL_ERROR)

    def _forget(self, stream: _Stream) -> None:
        if stream.up.done and stream.down.done:
            self.by_agent.pop(stream.agent_id, None)
            self.by_far.pop(stream.far_id, None)

    def _send(self, way: _Way, sender: h2.connection.H2Connection, stream_id: int,
              source: h2.connection.H2Connection, source_id: int) -> None:
        """What ``way`` holds, as far as the receiver's windows allow; what went on is
        acknowledged to its sender at once (one window update, not one a frame)."""
        acked = 0
        window = sender.local_flow_control_window(stream_id) if way.queue else 0
        frame = sender.max_outbound_frame_size
        while way.queue:
            data, ack = way.queue[0]
            if data:
                room = min(window, frame)
                if room <= 0:
                    break
                sender.send_data(stream_id, data[:room] if room < len(data) else data)
                window -= min(room, len(data))
                if room < len(data):
                    way.queue[0] = (data[room:], ack)
                    continue
            way.queue.popleft()
            acked += ack
        self._ack(source, acked, source_id)
        if way.ending and not way.done and not way.queue:
            if way.trailers:
                sender.send_headers(stream_id, way.trailers, end_stream=True)
            else:
                sender.end_stream(stream_id)
            way.done = True

    def pump(self) -> None:
        for stream in list(self.by_agent.values()):
            try:
                self._send(stream.up, self.far, stream.far_id, self.agent, stream.agent_id)
                self._send(stream.down, self.agent, stream.agent_id, self.far, stream.far_id)
            except (h2.exceptions.StreamClosedError, h2.exceptions.FlowControlError):
                self._reset(stream)
                continue
            self._forget(stream)
        self.flush()


async def relay(session: Session, agent: TlsPipe, far: TlsPipe) -> None:
    """One terminated HTTP/2 connection, until either end closes it."""
    state = Relay(session, agent, far)
    state.start()
    await agent.drain()
    await far.drain()

    async def side(pipe: TlsPipe, conn: h2.connection.H2Connection,
                   handle: Callable[[h2.events.Event], None]) -> None:
        while not state.closed:
            data = await pipe.read()
            if not data:
                return
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                state.flush()
                return
            for event in events:
                handle(event)
            state.pump()
            await agent.drain()
            await far.drain()

    tasks = {asyncio.ensure_future(side(agent, state.agent, state.on_agent)),
             asyncio.ensure_future(side(far, state.far, state.on_far))}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        with contextlib.suppress(h2.exceptions.ProtocolError):
            state.agent.close_connection()
            state.far.close_connection()
            state.flush()
