"""The relay's checks of what the agent sends: the first bytes of a connection (a TLS SNI, an
HTTP head, a first line still open), every request of a plain HTTP connection, and what goes
inside a tunnel, each against the name the agent dialed (:mod:`.relay` drives them; the
framing is :mod:`.httpflow`'s, the copying :mod:`.pumps`')."""

from __future__ import annotations

import asyncio

from cursor_agent_action.agent.box.net import httpflow, peek, pumps, tls
from cursor_agent_action.agent.box.net.ledger import Ledger
from cursor_agent_action.agent.box.net.policy import NetPolicy


class Refused(Exception):
    """A connection the rules refuse: its kind, destination and why (for the ledger)."""

    def __init__(self, kind: str, destination: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.destination, self.detail = kind, destination, detail


class Checks:
    """The checks of one wall: its policy and its ledger of refusals."""

    def __init__(self, policy: NetPolicy, ledger: Ledger) -> None:
        self.policy = policy
        self.ledger = ledger

    async def first_bytes(self, reader: asyncio.StreamReader, name: str,
                          initial: bytes = b"") -> tuple[bytes, peek.Claim]:
        """The client's first bytes (``initial``, then what it sends), read until their claim
        is clear however late they come (the idle timeout bounds the wait); a TLS or HTTP
        claim of another name raises :class:`Refused`. Nothing before the agent's end:
        nothing to check."""
        data = bytearray(initial)
        claim = peek.claim(initial)
        while claim.status == peek.MORE:
            chunk = await reader.read(peek.MAX_PEEK - len(data))
            if not chunk:
                break
            data += chunk
            # Parse again only when it can tell more: one byte at a time costs no more.
            if claim.need == peek.HEAD:
                ready = b"\r\n\r\n" in data[-len(chunk) - 3 :]
            elif claim.need == peek.LINE:
                ready = b"\n" in chunk or b"\r" in chunk
            else:
                ready = len(data) >= claim.need
            if ready or len(data) >= peek.MAX_PEEK:
                claim = peek.claim(bytes(data))
        if claim.status == peek.MORE and data:  # the agent ended its side first
            if claim.need != peek.LINE or peek.near_http(bytes(data)):
                raise Refused("sni-mismatch", name, "an incomplete TLS ClientHello or HTTP head")
            claim = peek.Claim(peek.OTHER)
        self.check_claim(name, claim)
        return bytes(data), claim

    def check_claim(self, name: str, claim: peek.Claim) -> None:
        """Raise :class:`Refused` unless ``claim`` asks for the dialed ``name`` (or, through
        an allowed proxy, for a name and port the rules allow)."""
        if claim.status == peek.BAD:
            raise Refused("sni-mismatch", name, "a malformed TLS ClientHello or HTTP head")
        if claim.ech:
            raise Refused("sni-mismatch", name, "a TLS ClientHello with encrypted_client_hello"
                           " (the name it asks for is hidden)")
        if claim.status != peek.DONE or not claim.name:
            return
        asked = f"{claim.name}{f':{claim.proxy_port}' if claim.proxy_port else ''}"
        # Another name only through an allowed proxy and to a name and port the rules allow
        # (otherwise: fronting); a port named, even on the dialed host, must be allowed too.
        if (claim.name != name and not claim.proxy_port) or (
                claim.proxy_port and not self.policy.allows(claim.name, claim.proxy_port)):
            raise Refused("sni-mismatch", name, f"the connection asks for {asked}")
        if claim.connect and claim.name == name:  # a tunnel to the proxy itself, then anything
            raise Refused("sni-mismatch", name, f"a CONNECT to the proxy itself ({asked})")

    async def up_agent(self, name: str, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter, flow: pumps.Flow,
                       seen: tuple[bytes, peek.Claim]) -> None:
        """The agent's side of a connection to ``name`` whose first bytes and their claim are
        ``seen`` (:meth:`first_bytes`): plain HTTP read request by request (a kept-alive
        connection to an allowed proxy asks for any host in its next request), a first line
        still open read to its end, anything else copied. A refusal is recorded and the far
        end gets a reset."""
        try:
            await self._pass_on(name, reader, writer, flow, seen, tunnels=True)
        except Refused as refusal:
            flow.refused = True
            self.ledger.refused(refusal.kind, refusal.destination, refusal.detail)
            raise
        except httpflow.BadRequest as exc:
            flow.refused = True
            self.ledger.refused("sni-mismatch", name, f"a malformed HTTP request ({exc})")
            raise
        except tls.BadTls as exc:
            flow.refused = True
            self.ledger.refused("sni-mismatch", name, f"a TLS handshake refused ({exc})")
            raise

    async def _pass_on(self, name: str, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter, flow: pumps.Flow,
                       seen: tuple[bytes, peek.Claim], *, tunnels: bool) -> None:
        first, claim = seen

        def check(claim: peek.Claim) -> None:
            self.check_claim(name, claim)

        async def tunnel(request: httpflow.Head, rest: bytes) -> None:
            """Inside an opened tunnel: the agent's bytes as a new connection's to the tunnel's
            far end (its SNI or Host checked against it; no tunnel inside). A proxy's tunnel
            to an allowed port 80 could front another host."""
            target = peek.http_claim(request).name
            inner = await self.first_bytes(reader, target, rest)
            await self._pass_on(target, reader, writer, flow, inner, tunnels=False)

        opened = tunnel if tunnels else None
        if first[:1] == b"\x16":
            await pumps.up_tls(reader, writer, flow, first, check)
        elif claim.http:
            await pumps.up_http(reader, writer, flow, first, check, tunnel=opened)
        else:
            writer.write(first)
            flow.moved[0] += len(first)
            await pumps.copy(reader, writer, flow, 0)
