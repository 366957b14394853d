"""The relay's checks of what the agent sends, each against the name it dialed: the first
bytes of a connection (a TLS ClientHello's SNI; a first line that makes it plain HTTP), every
ClientHello of a TLS connection (:mod:`.tls`), every request of a plain HTTP connection
(:mod:`.plainhttp`, which composes the far end's requests itself). :mod:`.relay` drives them;
the copying is :mod:`.pumps`'."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from cursor_agent_action.agent.contain.box.net import peek, plainhttp, pumps, tls
from cursor_agent_action.agent.contain.box.net.ledger import Ledger
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy


class Refused(Exception):
    """A connection the rules refuse: its kind, destination and why (for the ledger)."""

    def __init__(self, kind: str, destination: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.destination, self.detail = kind, destination, detail


@dataclass(frozen=True)
class Agent:
    """One connection of the agent's: the name and port it dialed, its reader and writer,
    and the writer of the relay's first connection to the far end."""

    name: str
    port: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    upstream: asyncio.StreamWriter


class Checks:
    """The checks of one wall: its policy and its ledger of refusals."""

    def __init__(self, policy: NetPolicy, ledger: Ledger) -> None:
        self.policy = policy
        self.ledger = ledger

    async def first_bytes(self, reader: asyncio.StreamReader, name: str,
                          initial: bytes = b"") -> tuple[bytes, peek.Claim]:
        """The client's first bytes (``initial``, then what it sends), read until their claim
        is clear however late they come (the idle timeout bounds the wait); a TLS claim of
        another name raises :class:`Refused`. Nothing before the agent's end: nothing to
        check."""
        data = bytearray(initial)
        claim = peek.claim(initial)
        while claim.status == peek.MORE:
            chunk = await reader.read(peek.MAX_PEEK - len(data))
            if not chunk:
                break
            data += chunk
            # Parse again only when it can tell more: one byte at a time costs no more.
            ready = b"\n" in chunk if claim.need == peek.LINE else len(data) >= claim.need
            if ready or len(data) >= peek.MAX_PEEK:
                claim = peek.claim(bytes(data))
        if claim.status == peek.MORE and data:  # the agent ended its side first
            if claim.need != peek.LINE or peek.near_http(bytes(data)):
                raise Refused("sni-mismatch", name, "an incomplete TLS ClientHello or HTTP head")
            claim = peek.Claim(peek.OTHER)
        self.check_claim(name, claim)
        return bytes(data), claim

    def check_claim(self, name: str, claim: peek.Claim) -> None:
        """Raise :class:`Refused` unless ``claim`` asks for the dialed ``name``."""
        if claim.status == peek.BAD:
            raise Refused("sni-mismatch", name, "a malformed TLS ClientHello or HTTP head")
        if claim.ech:
            raise Refused("sni-mismatch", name, "a TLS ClientHello with encrypted_client_hello"
                           " (the name it asks for is hidden)")
        if claim.status == peek.DONE and not claim.http and claim.name != name:
            # a hello without a host name is served whatever the far end's default host is
            raise Refused("sni-mismatch", name, f"the connection asks for {claim.name}"
                          if claim.name else "a TLS ClientHello that names no host (no SNI)")

    async def up_agent(self, agent: Agent, flow: pumps.Flow, seen: tuple[bytes, peek.Claim],
                       connect: plainhttp.Connect) -> None:
        """The agent's side of a connection whose first bytes and their claim are ``seen``
        (:meth:`first_bytes`): TLS followed until its handshake is decided, plain HTTP
        terminated (each request to a new connection from ``connect``), anything else
        copied. A refusal is recorded and the far end gets a reset."""
        first, claim = seen
        name, port, reader, writer = agent.name, agent.port, agent.reader, agent.upstream
        try:
            if first[:1] == b"\x16":
                await pumps.up_tls(reader, writer, flow, first,
                                   lambda claim: self.check_claim(name, claim))
            elif claim.http:
                await plainhttp.serve(plainhttp.Exit(reader, agent.writer, name, port), first,
                                      connect, flow)
            else:
                writer.write(first)
                flow.moved[0] += len(first)
                await pumps.copy(reader, writer, flow, 0)
        except Refused as refusal:
            flow.refused = True
            self.ledger.refused(refusal.kind, refusal.destination, refusal.detail)
            raise
        except plainhttp.OtherHost as exc:
            flow.refused = True
            self.ledger.refused("sni-mismatch", name, str(exc))
            raise
        except plainhttp.BadRequest as exc:
            flow.refused = True
            self.ledger.refused("sni-mismatch", name, f"an HTTP request refused ({exc})")
            raise
        except tls.BadTls as exc:
            flow.refused = True
            self.ledger.refused("sni-mismatch", name, f"a TLS handshake refused ({exc})")
            raise
