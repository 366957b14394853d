"""The network exit, red-team round on the terminating relay (issue 33): each test failed on the
code before its fix. Driven for real (see tests/support/netbox.py).

Finding: the relay re-composes a plain HTTP request that carried both ``Content-Length`` and
``Transfer-Encoding: chunked`` with BOTH fields (compose keeps Content-Length, adds chunked).
RFC 9112 6.2: a sender MUST NOT send Content-Length with Transfer-Encoding. A far-end reader
that frames by Content-Length reads the relay's chunked body as a second request the relay
did not compose (request smuggling through the terminating relay).
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

import pytest

from cursor_agent_action.agent.contain.box.net.policy import build_policy
from tests.support.netbox import PREFIX, Emit, connect_by_name, fixed_resolver, run_boxed, servers

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not sys.platform.startswith("linux"),
                                reason="network namespaces: root on Linux")
WEB = f"{PREFIX}web.example"
LOOPBACK = {WEB: ["127.0.0.1"]}
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: evil.example\r\nX-Pad: " + b"p" * 20 + b"\r\n\r\n"


def _record_all(conn: socket.socket, server: Any) -> None:
    """A far end that records what it is sent until the chunked end, then answers."""
    data = b""
    while not data.endswith(b"0\r\n\r\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    server.record(data)
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")


def test_a_request_with_content_length_and_chunked_is_not_sent_on_with_both() -> None:
    assert 0x10 <= len(SMUGGLED) <= 0xFF  # its chunk-size line is "xx\r\n": 4 bytes
    with servers(_record_all) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            with connect_by_name(WEB, web.port) as sock:
                sock.sendall(b"POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 4\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
                             % (WEB.encode(), web.port, len(SMUGGLED), SMUGGLED))
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
                return data.decode("latin-1")

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    sent = bytes(web.received)
    head, _, body = sent.partition(b"\r\n\r\n")
    fields = {line.split(b":", 1)[0].strip().lower() for line in head.split(b"\r\n")[1:]}
    assert run.result.startswith("HTTP/1.1 200")
    # Before: both fields went on, and a reader framing by Content-Length took 4 bytes
    # ("4b\r\n") as the body and read GET /smuggled (Host: evil.example) as the next request.
    assert b"transfer-encoding" in fields
    assert b"content-length" not in fields, repr(head)
    assert body.startswith(b"%x\r\n" % len(SMUGGLED))  # the smuggled bytes are body, chunked


def _head_then_wait(conn: socket.socket, server: Any) -> None:
    conn.settimeout(3)
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except OSError:
        pass
    server.record(data)


def test_a_connection_field_naming_content_length_is_refused_and_reported() -> None:
    """``Connection: content-length`` makes compose drop the body's framing: h11 then raises
    LocalProtocolError (not BadRequest) while the body goes on. The far end has already read
    the head of a body-less POST; the agent's connection just ends; nothing is reported."""
    with servers(_head_then_wait) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            with connect_by_name(WEB, web.port) as sock:
                sock.sendall(b"POST /x HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: 4\r\n"
                             b"Connection: content-length\r\n\r\nabcd" % (WEB.encode(), web.port))
                sock.settimeout(10)
                data = b""
                while chunk := sock.recv(65536):
                    data += chunk
                return data.decode("latin-1")

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    sent = bytes(web.received)
    print(sent, run.report)
    # Either the relay refuses it (nothing leaves, a refusal is reported) or it sends it whole.
    refused = run.report.refused
    assert (sent == b"" and refused) or sent.endswith(b"abcd"), (sent, run.report)


def test_a_local_use_nat64_address_of_a_48_prefix_is_judged_by_what_it_carries() -> None:
    """RFC 6052 2.2: under a /48 NAT64 prefix (64:ff9b:1::/48 is RFC 8215's local-use block)
    the IPv4 address sits in bits 48-63 and 72-87, not in the last 32 bits. judge() reads the
    last 32 bits only: 169.254.169.254 carried so, with 8.8.8.8 as suffix, is 'global'. Needs
    an allowed wildcard name with this AAAA and a runner whose NAT64 uses a /48 local prefix
    (exotic; not reachable on loopback, so a unit check)."""
    from cursor_agent_action.agent.contain.box.net.addresses import NEVER_REACHED, judge

    assert judge("64:ff9b:1:a9fe:a9:fe00:808:808") == NEVER_REACHED


def test_a_client_hello_without_sni_is_refused(tmp_path: Any) -> None:
    """docs/network.md: "every ClientHello on the connection must name the dialed host in its
    SNI". A hello without server_name claims "" and check_claim lets "" pass: an SNI-routing
    far end (a CDN, sniproxy/haproxy with a default backend) serves its default host."""
    import ssl

    from tests.support.netbox import self_signed

    cert_file, key_file = self_signed(tmp_path, WEB)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_file, key_file)
    seen_sni: list[str | None] = []

    def tls_echo(conn: socket.socket, server: Any) -> None:
        server_context.sni_callback = lambda _s, name, _c: seen_sni.append(name)
        with server_context.wrap_socket(conn, server_side=True) as tls:
            while data := tls.recv(65536):
                server.record(data)
                tls.sendall(data)

    with servers(tls_echo) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            try:
                with connect_by_name(WEB, web.port) as sock, context.wrap_socket(sock) as tls:
                    tls.sendall(b"no sni")
                    return tls.recv(100).decode()
            except OSError as exc:
                return f"refused: {exc}"

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    print(seen_sni, run.result, run.report.refused)
    assert seen_sni == [], f"a hello without SNI reached the far end: {run.result!r}"
    assert run.refused("sni-mismatch")
