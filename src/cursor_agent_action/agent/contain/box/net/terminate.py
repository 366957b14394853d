"""TLS terminated for Cursor's names, so that the relay, not the box, holds the credentials.

For a connection to one of Cursor's names (:func:`Terminator.wants`) whose first bytes are a
ClientHello (its SNI checked against the dialed name by :mod:`.checks`), the relay:

1. reads the ALPN protocols the agent offered (:func:`client_alpn`) and opens real TLS to the
   name over the connection it made (direct, or a tunnel through the runner's proxy), offering
   those protocols and verifying the certificate against the runner's trust store
   (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured as OpenSSL honours them);
2. answers the agent's ClientHello itself with a leaf of the run's CA (:mod:`.ca`) for that
   name, offering the one protocol the far end chose; a handshake the agent's client refuses
   (it does not trust the CA) is counted (:class:`~.credentials.MaskReport`: the run may fall
   back, if nothing reached Cursor);
3. relays HTTP/1.1 (:mod:`.h1swap`, h11) or HTTP/2 (:mod:`.h2swap`, h2), each request read,
   checked (:func:`host_allowed`: its ``Host`` or ``:authority`` must be the TLS name; no
   ``CONNECT``; an absolute URI must name it too), its placeholders swapped for the real values
   (:mod:`.swap`), composed anew; each answer's real values swapped for placeholders.

Every other name is never decrypted: its bytes pass as :mod:`.pumps` copies them.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import struct
import threading

from cursor_agent_action.agent.contain.box.net import h1swap, h2swap, pumps
from cursor_agent_action.agent.contain.box.net.ca import CaError, RunCa
from cursor_agent_action.agent.contain.box.net.credentials import Credentials, Tally
from cursor_agent_action.agent.contain.box.net.ledger import Ledger
from cursor_agent_action.agent.contain.box.net.policy import Rule
from cursor_agent_action.agent.contain.box.net.swap import Vault
from cursor_agent_action.agent.contain.box.net.tlspipe import TlsClosed, TlsPipe

HANDSHAKE_TIMEOUT_S = 30.0
REFUSING_ALERTS = ("UNKNOWN_CA", "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN",
                   "UNSUPPORTED_CERTIFICATE", "CERTIFICATE_EXPIRED", "ACCESS_DENIED",
                   "DECRYPT_ERROR", "HANDSHAKE_FAILURE")
"""TLS alerts a client sends when it does not accept the server's certificate."""


def client_alpn(first: bytes) -> list[str]:
    """The ALPN protocols of the ClientHello at the start of ``first`` ([] when none)."""
    handshake = b""
    offset = 0
    while offset + 5 <= len(first) and first[offset] == 0x16:
        length = struct.unpack_from("!H", first, offset + 3)[0]
        handshake += first[offset + 5: offset + 5 + length]
        offset += 5 + length
    try:
        hello = handshake[4: 4 + int.from_bytes(handshake[1:4], "big")]
        pos = 2 + 32
        pos += 1 + hello[pos]
        pos += 2 + struct.unpack_from("!H", hello, pos)[0]
        pos += 1 + hello[pos]
        end = pos + 2 + struct.unpack_from("!H", hello, pos)[0]
        pos += 2
        while pos + 4 <= end:
            kind, length = struct.unpack_from("!HH", hello, pos)
            body = hello[pos + 4: pos + 4 + length]
            pos += 4 + length
            if kind == 16:
                names, at = [], 2
                while at < len(body):
                    size = body[at]
                    names.append(body[at + 1: at + 1 + size].decode("ascii"))
                    at += 1 + size
                return [name for name in names if name in ("h2", "http/1.1")]
    except (IndexError, struct.error, UnicodeDecodeError):
        return []
    return []


def upstream_context(credentials: Credentials, alpn: list[str]) -> ssl.SSLContext:
    """TLS to Cursor: verified (the name too) against the runner's trust store as OpenSSL
    reads it: ``SSL_CERT_FILE`` instead of the default file, ``SSL_CERT_DIR`` instead of the
    default directory."""
    defaults = ssl.get_default_verify_paths()
    cafile = credentials.trust_file or defaults.openssl_cafile
    capath = credentials.trust_dir or defaults.openssl_capath
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    found = [path for path in (cafile, capath) if path and os.access(path, os.R_OK)]
    if found:
        context.load_verify_locations(cafile=cafile if cafile in found else None,
                                      capath=capath if capath in found else None)
    if alpn:
        context.set_alpn_protocols(alpn)
    return context


class Terminator:
    """The relay's TLS termination and credentials (one per wall)."""

    def __init__(self, credentials: Credentials, ca: RunCa, ledger: Ledger,
                 tally: Tally | None = None) -> None:
        self.credentials = credentials
        self.ca = ca
        self.ledger = ledger
        self.vault = Vault(credentials.key, credentials.placeholder)
        self.tally = tally or Tally()
        self.rules = tuple(Rule(pattern, (), "cursor") for pattern in credentials.patterns)
        self._lock = threading.Lock()
        self._contexts: dict[tuple[str, ...], ssl.SSLContext] = {}

    def wants(self, name: str) -> bool:
        """One of Cursor's names: terminated, its credentials swapped."""
        return any(rule.matches(name) for rule in self.rules)

    def refuse(self, name: str, detail: str) -> None:
        """A request passed on without credentials is none: it is refused, and told."""
        self.ledger.refused("sni-mismatch", name, detail)

    def _upstream_context(self, alpn: list[str]) -> ssl.SSLContext:
        key = tuple(alpn)
        with self._lock:
            found = self._contexts.get(key)
        if found is None:
            found = upstream_context(self.credentials, alpn)
            with self._lock:
                self._contexts[key] = found
        return found

    async def serve(self, name: str, port: int, first: bytes, *,
                    agent: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                    far: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                    flow: pumps.Flow) -> None:
        """One connection of the agent's to ``name`` (its ClientHello is ``first``), relayed
        with its credentials swapped (see the module docstring)."""
        destination = f"{name}:{port}"
        offered = client_alpn(first)
        loop = asyncio.get_running_loop()
        upstream = TlsPipe(*far, await loop.run_in_executor(None, self._upstream_context,
                                                            offered), server_hostname=name,
                           flow=flow)
        try:
            await asyncio.wait_for(upstream.handshake(), HANDSHAKE_TIMEOUT_S)
        except (ssl.SSLError, TlsClosed) as exc:
            self.ledger.failed(destination, f"TLS to {name} failed: {exc}")
            return
        chosen = upstream.alpn
        try:
            context = await loop.run_in_executor(None, self.ca.server_context, name,
                                                 [chosen] if chosen else [])
        except (CaError, ssl.SSLError, OSError) as exc:
            self.ledger.failed(destination, f"no certificate for {name}: {exc}")
            return
        downstream = TlsPipe(*agent, context, first=first, flow=flow)
        try:
            await asyncio.wait_for(downstream.handshake(), HANDSHAKE_TIMEOUT_S)
        except ssl.SSLError as exc:
            if any(alert in str(exc).upper() for alert in REFUSING_ALERTS):
                self.tally.count(certificate_refused=1)
            self.ledger.failed(destination, f"the agent's client refused the relay's "
                               f"certificate for {name}: {exc.reason or exc}")
            return
        except TlsClosed:
            # A client that hangs up on a certificate it does not trust, without an alert.
            self.tally.count(certificate_refused=1)
            return
        self.tally.count(terminated=1)
        try:
            session = h1swap.Session(self.vault, self.tally, self.refuse, name, port)
            await (h2swap if chosen == "h2" else h1swap).relay(session, downstream, upstream)
        finally:
            downstream.close()
            upstream.close()
