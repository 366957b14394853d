"""The wall's relay: the box's resolver and the only way out of the box, by name.

The jail (root) drives a :class:`Wall` in three moves (see docs/network.md and
:mod:`.netns`): :meth:`Wall.create` *inside* the box's new network namespace binds the
resolver's UDP and TCP sockets on the box's ``127.0.0.1:53`` and one TCP listener per port on
the box's loopback (sockets keep the namespace they were made in); back in the runner's
namespace, :meth:`Wall.start` runs the relay in a thread; :meth:`Wall.stop` and
:meth:`Wall.report` at the end.

A connection from the box: the address the agent dialed names the destination (the resolver
gave each allowed name its own pool address; any other address is an IP literal: refused); the
name and port are checked; the runner's system resolver resolves the name (in a small thread
pool) and each address is checked (:meth:`~.policy.NetPolicy.address_allowed`); the relay
connects (direct, or through the runner's proxy: :mod:`.upstream`) and copies bytes both ways
once the agent's first bytes tell what they are (:mod:`.checks`): TLS followed until its
handshake is decided, plain HTTP terminated (the far end reads only the relay's requests),
other protocols copied. Bounded: concurrent connections, connect, idle and total
time per connection, bytes buffered per direction (backpressure). If the relay thread ends for
any reason, every listener and connection is closed: the box fails closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

from cursor_agent_action.agent.contain.box.net import peek, plainhttp, pumps, upstream
from cursor_agent_action.agent.contain.box.net.checks import Agent, Checks, Refused
from cursor_agent_action.agent.contain.box.net.dns import Resolver
from cursor_agent_action.agent.contain.box.net.ledger import EventSink, Ledger
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.agent.contain.box.net.terminate import Terminator
from cursor_agent_action.agent.contain.box.net.upstream import RunnerProxy
from cursor_agent_action.stream.wallreport import NetReport

DNS_ADDRESS = "127.0.0.1"
DNS_PORT = 53
WATCH_PORTS = (22, 80, 443, 8080, 8443, 9418)
"""Also listened on, so a refused connection to a common port is reported, not just reset."""
HOSTS_TEXT = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
"""The box's /etc/hosts: only localhost (an entry would reach an address without the wall's
resolver; the runner's entries are nothing the agent needs)."""
Resolve = Callable[[str, int], list[str]]


def system_resolve(name: str, port: int) -> list[str]:
    """The addresses of ``name`` by the runner's own resolver (``getaddrinfo``)."""
    infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class Limits:
    max_connections: int = 1024
    connect_timeout_s: float = 10.0
    resolve_timeout_s: float = 10.0
    peek_timeout_s: float = 10.0  # for each query of a DNS-over-TCP connection
    idle_timeout_s: float = 900.0  # no byte either way for this long: closed
    total_timeout_s: float = 6 * 3600.0  # a job lasts at most 6 hours on GitHub's runners
    buffer_bytes: int = 256 * 1024  # per direction, before the sender is made to wait
    resolver_threads: int = 8


class Wall:
    """The resolver and relay of one box (see the module docstring)."""

    def __init__(self, policy: NetPolicy, listeners: list[socket.socket], dns_udp: socket.socket,
                 *, limits: Limits, resolve: Resolve, on_event: EventSink | None) -> None:
        self.policy = policy
        self.limits = limits
        self._listeners = listeners
        self._udp = dns_udp
        self._resolve = resolve
        self._resolver = Resolver(policy)
        self.ledger = Ledger(policy, on_event)
        self.checks = Checks(policy, self.ledger)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._clients = 0
        self._ready = threading.Event()
        self.terminator: Terminator | None = None  # set: Cursor's names terminated (jailside)

    @classmethod
    def create(cls, policy: NetPolicy, *, limits: Limits | None = None,
               resolve: Resolve = system_resolve, on_event: EventSink | None = None) -> Wall:
        """Bind the wall's sockets in the *current* network namespace (the box's)."""
        made: list[socket.socket] = []
        try:
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            made.append(udp)
            udp.bind((DNS_ADDRESS, DNS_PORT))
            for port in sorted({*policy.ports(), *WATCH_PORTS, DNS_PORT}):
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                made.append(listener)
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind(("0.0.0.0", port))  # noqa: S104 - the box's loopback is all it has
                listener.listen(1024)
                listener.setblocking(False)
            udp.setblocking(False)
        except BaseException:
            for sock in made:
                sock.close()
            raise
        return cls(policy, made[1:], udp, limits=limits or Limits(), resolve=resolve,
                   on_event=on_event)

    @staticmethod
    def resolv_conf_text() -> str:
        """The box's /etc/resolv.conf: our resolver only, no search domains."""
        return f"nameserver {DNS_ADDRESS}\noptions ndots:1 attempts:1 timeout:2\n"

    # -- life -----------------------------------------------------------------------------

    def start(self) -> None:
        """Run the relay in a thread of the *current* namespace (the runner's)."""
        self._thread = threading.Thread(target=self._run, name="network-wall", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the relay; every listener and connection is closed (also when never started)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._close_sockets()

    def report(self) -> NetReport:
        return self.ledger.report()

    def close_in_child(self) -> None:
        """In a process forked after :meth:`create` (the agent's namespace init): close its
        copies of the wall's sockets at once. A copy kept open would keep a listener alive in
        the box after the relay stopped, and the box would no longer fail closed."""
        self._close_sockets()

    def _close_sockets(self) -> None:
        for sock in [self._udp, *self._listeners]:
            sock.close()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        # Nothing on stderr: in the jail it is the agent's, passed through to the report.
        loop.set_exception_handler(lambda _loop, _context: None)
        self._loop = loop
        executor = ThreadPoolExecutor(self.limits.resolver_threads, "network-wall-resolve")
        loop.set_default_executor(executor)
        try:
            loop.run_until_complete(self._main())
        except BaseException as exc:  # whatever it was, the box fails closed
            self.ledger.broke(f"the relay stopped: {type(exc).__name__}: {exc}")
        finally:
            self._close_sockets()
            for writer in list(self._writers):
                writer.transport.abort()
            loop.close()
            executor.shutdown(wait=False, cancel_futures=True)
            self._ready.set()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _DnsUdp(self), sock=self._udp)
        servers = [
            await asyncio.start_server(self._accept, sock=sock, limit=self.limits.buffer_bytes)
            for sock in self._listeners
        ]
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            transport.close()
            for server in servers:
                server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

    # -- DNS ------------------------------------------------------------------------------

    def answer(self, data: bytes) -> bytes | None:
        reply, refusal = self._resolver.handle(data)
        if refusal is not None:
            self.ledger.refused("dns", refusal.name, refusal.reason)
        return reply

    async def _dns_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(100):  # queries on one connection
            head = await asyncio.wait_for(reader.readexactly(2), self.limits.peek_timeout_s)
            data = await asyncio.wait_for(reader.readexactly(int.from_bytes(head, "big")),
                                          self.limits.peek_timeout_s)
            reply = self.answer(data)
            if reply is None:
                return
            writer.write(len(reply).to_bytes(2, "big") + reply)
            await writer.drain()

    # -- TCP ------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        self._clients += 1
        try:
            address, port = writer.get_extra_info("sockname")[:2]
            if self._clients > self.limits.max_connections:  # DNS over TCP counts too
                raise Refused("limit", f"{address}:{port}", f"over {self.limits.max_connections}"
                               " connections at once")
            if address == DNS_ADDRESS and port == DNS_PORT:
                await self._dns_tcp(reader, writer)
                return
            name = self._resolver.name_for(address)
            if name is None:
                raise Refused("ip-literal", f"{address}:{port}",
                               "an address dialed without a name from the box's resolver")
            destination = f"{name}:{port}"
            if not self.policy.allows(name, port):
                raise Refused("port", destination, f"no rule allows port {port} for {name}")
            await self._relay(name, port, reader, writer)
        except Refused as refusal:
            self.ledger.refused(refusal.kind, refusal.destination, refusal.detail)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError,
                asyncio.CancelledError):  # cancelled: the wall stops (3.11 would log it)
            pass
        finally:
            self._clients -= 1
            self._writers.discard(writer)
            writer.transport.abort()

    async def _addresses(self, name: str, port: int, *, report: bool = True) -> list[str]:
        """The addresses of ``name`` the rules let the relay connect to; raises
        :class:`Refused` when there are none (``report``: a failed resolution too)."""
        loop = asyncio.get_running_loop()
        destination = f"{name}:{port}"
        try:
            addresses = await asyncio.wait_for(loop.run_in_executor(
                None, self._resolve, name, port), self.limits.resolve_timeout_s)
        except (OSError, asyncio.TimeoutError, UnicodeError) as exc:
            if report:
                self.ledger.failed(destination, f"{name} did not resolve: {exc}")
            raise
        allowed = [a for a in addresses if self.policy.address_allowed(a, name)]
        if not allowed:
            raise Refused("address", destination,
                           f"{name} resolves to {', '.join(addresses[:4]) or 'nothing'}")
        return allowed

    async def _open(self, destination: str, addresses: list[str],
                    port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        error: BaseException | None = None
        for address in addresses[:4]:
            try:
                return await asyncio.wait_for(asyncio.open_connection(
                    address, port, limit=self.limits.buffer_bytes), self.limits.connect_timeout_s)
            except (OSError, asyncio.TimeoutError) as exc:
                error = exc
        self.ledger.failed(destination, f"connecting to {', '.join(addresses[:4])} failed: "
                           f"{error}")
        raise ConnectionError(str(error))

    async def _connect(self, name: str, port: int) -> plainhttp.Upstream:
        """A connection to ``name:port``, direct."""
        addresses = await self._addresses(name, port)
        return plainhttp.Upstream(*await self._open(f"{name}:{port}", addresses, port))

    async def _via(self, name: str, port: int, via: RunnerProxy,
                   peeking: asyncio.Future[tuple[bytes, peek.Claim]]) -> plainhttp.Upstream:
        """A connection to ``name:port`` through the runner's proxy, once the agent's first
        bytes tell which: plain HTTP to the HTTP proxy (absolute form) when it takes no
        credentials, else tunnelled like the rest (credentials on our CONNECT only). A name
        the runner resolves is refused as it would be direct (its addresses are checked)."""
        destination = f"{name}:{port}"
        _, claim = await peeking
        proxy = via.http if claim.http else via.https
        if proxy is None:
            return await self._connect(name, port)
        with contextlib.suppress(OSError, asyncio.TimeoutError, UnicodeError):
            await self._addresses(name, port, report=False)  # Refused: its addresses are
        loop = asyncio.get_running_loop()
        try:
            found = await asyncio.wait_for(loop.run_in_executor(
                None, system_resolve, proxy.host, proxy.port), self.limits.resolve_timeout_s)
        except (OSError, asyncio.TimeoutError, UnicodeError) as exc:
            self.ledger.failed(destination, f"the runner's proxy {proxy.host} did not "
                               f"resolve: {exc}")
            raise
        reader, writer = await self._open(destination, found, proxy.port)
        if claim.http and not proxy.authorization:
            return plainhttp.Upstream(reader, writer, upstream.forward_prefix(name, port))
        try:
            await asyncio.wait_for(upstream.tunnel(reader, writer, proxy, name, port),
                                   self.limits.connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            writer.transport.abort()
            self.ledger.failed(destination, str(exc) or "the runner's proxy did not answer")
            raise
        return plainhttp.Upstream(reader, writer)

    async def _relay(self, name: str, port: int, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        """Connect and peek at once; the far end's bytes flow as soon as it is connected (a
        protocol where the server speaks first), the agent's once their claim is checked."""
        destination = f"{name}:{port}"
        peeking = asyncio.ensure_future(self.checks.first_bytes(reader, name))
        via = self.policy.proxy
        connecting = asyncio.ensure_future(
            self._connect(name, port) if via is None or via.direct(name)
            else self._via(name, port, via, peeking))
        tasks: set[asyncio.Future[Any]] = {connecting, peeking}
        up_writer: asyncio.StreamWriter | None = None
        flow = pumps.Flow()
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if peeking in done:
                peeking.result()  # a refusal: raised before the far end hears anything
            far = await connecting
            up_reader, up_writer = far.reader, far.writer
            self._writers.add(up_writer)
            self.ledger.connected(destination)
            if self.terminator is not None and self.terminator.wants(name) and (
                    first := (await self._seen(peeking, flow))[0])[:1] == b"\x16":
                tasks.add(serving := asyncio.ensure_future(self.terminator.serve(  # TLS: swapped
                    name, port, first, agent=(reader, writer), far=(up_reader, up_writer),
                    flow=flow)))
                await self._watch({serving}, flow)
                return
            down = asyncio.ensure_future(pumps.down(up_reader, writer, flow))
            tasks.add(down)

            async def connect() -> plainhttp.Upstream:
                """For plain HTTP: the relay reads the far end's answer itself."""
                down.cancel()
                return far

            agent = Agent(name, port, reader, writer, up_writer)
            up = asyncio.ensure_future(self._up(agent, flow, peeking, connect))
            tasks.add(up)
            await self._watch({up, down}, flow)
        finally:
            for task in tasks:
                task.cancel()
            if connecting.done() and not connecting.cancelled() and not connecting.exception():
                up_writer = connecting.result().writer
            if up_writer is not None:
                self._writers.discard(up_writer)
                if flow.refused:  # a reset: a reader must not take the end for a line end
                    with contextlib.suppress(OSError, AttributeError):
                        up_writer.get_extra_info("socket").setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                up_writer.transport.abort()
            self.ledger.moved(destination, flow.moved[0], flow.moved[1])

    async def _seen(self, peeking: asyncio.Future[tuple[bytes, peek.Claim]],
                    flow: pumps.Flow) -> tuple[bytes, peek.Claim]:
        """The agent's first bytes and their claim (the idle timeout bounds the wait)."""
        try:
            return await peeking
        except Refused as refusal:
            flow.refused = True
            self.ledger.refused(refusal.kind, refusal.destination, refusal.detail)
            raise

    async def _up(self, agent: Agent, flow: pumps.Flow,
                  peeking: asyncio.Future[tuple[bytes, peek.Claim]],
                  connect: plainhttp.Connect) -> None:
        """The agent's side once its first bytes are read."""
        await self.checks.up_agent(agent, flow, await self._seen(peeking, flow), connect)

    async def _watch(self, directions: set[asyncio.Future[None]], flow: pumps.Flow) -> None:
        """Until both directions are done, an error, or the idle or total timeout."""
        started = time.monotonic()
        pending = directions
        tick = min(self.limits.idle_timeout_s, self.limits.total_timeout_s, 30.0) / 4
        try:
            while pending:
                done, pending = await asyncio.wait(pending, timeout=tick,
                                                   return_when=asyncio.FIRST_COMPLETED)
                if any(not task.cancelled() and task.exception() is not None for task in done):
                    return
                now = time.monotonic()
                if (now - flow.last > self.limits.idle_timeout_s
                        or now - started > self.limits.total_timeout_s):
                    return
        finally:
            for task in directions:
                task.cancel()


class _DnsUdp(asyncio.DatagramProtocol):
    def __init__(self, wall: Wall) -> None:
        self.wall = wall
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)  # not a subclass in 3.11

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        reply = self.wall.answer(data)
        if reply is not None and self.transport is not None:
            self.transport.sendto(reply, addr)
