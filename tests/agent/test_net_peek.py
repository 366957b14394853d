"""The name a connection's first bytes claim (TLS SNI, HTTP Host): real ClientHellos from
Python's ssl module, HTTP heads, and arbitrary bytes that must never crash the reader."""

from __future__ import annotations

import contextlib
import ssl

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor_agent_action.agent.box.net import httpflow, peek


def client_hello(server_name: str | None) -> bytes:
    """The first flight of a real TLS client (Python's ssl with memory BIOs)."""
    context = ssl.create_default_context()
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


def test_http_host_and_absolute_and_connect_forms() -> None:
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: A.example:80\r\n\r\n") == peek.Claim(
        peek.DONE, "a.example", proxy_port=80, http=True)  # a port the Host names is checked
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n").proxy_port == 0
    assert peek.claim(b"GET http://b.example/x HTTP/1.1\r\nHost: b.example\r\n\r\n").name == (
        "b.example")
    assert peek.claim(b"GET http://b.example/ HTTP/1.1\r\nHost: c.example\r\n\r\n").status == (
        peek.BAD)  # two different claims
    assert peek.claim(b"CONNECT d.example:443 HTTP/1.1\r\nHost: d.example:443\r\n\r\n") == (
        peek.Claim(peek.DONE, "d.example", proxy_port=443, http=True, connect=True))
    assert peek.claim(b"CONNECT d.example HTTP/1.1\r\n\r\n").status == peek.BAD  # no port
    assert peek.claim(b"GET https://e.example/x HTTP/1.1\r\n\r\n").proxy_port == 443
    assert peek.claim(b"GET http://[::1]:8080/ HTTP/1.1\r\n\r\n") == peek.Claim(
        peek.DONE, "::1", proxy_port=8080, http=True)
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").status == peek.BAD
    # No Host: a proxy would make one up (node reads "undefined"): refused (fourth round).
    assert peek.claim(b"GET / HTTP/1.0\r\n\r\n").status == peek.BAD
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: a").status == peek.MORE
    assert peek.claim(b"GE").status == peek.MORE
    assert peek.claim(b"SSH-2.0-OpenSSH_9.6\r\n").status == peek.OTHER
    assert peek.claim(b"GET " + b"x" * peek.MAX_PEEK).status == peek.BAD


@pytest.mark.parametrize(("data", "name"), [
    # HTTP is known by its shape: any method, empty lines first (servers skip them)
    (b"\r\nCONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n",
     "evil.example"),
    (b"\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example"),
    (b"PROPFIND http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example"),
    (b"X-ANY / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example"),
])
def test_any_method_after_any_empty_lines_is_read_as_http(data: bytes, name: str) -> None:
    claimed = peek.claim(data)
    assert (claimed.status, claimed.name, claimed.http) == (peek.DONE, name, True)


@pytest.mark.parametrize("data", [
    b"\nCONNECT evil.example:443 HTTP/1.1\r\n\r\n",  # a bare LF before it
    b"GET http://evil.example/\r\n\r\n",  # HTTP/0.9 to a proxy
    b"PROPFIND http://evil.example/ HTTP/1.1\x00\r\n\r\n",
    b"GET / HTTP/1.1\nHost: evil.example\n\n",  # bare LFs
    b"GET / HTTP/1.1\r\nHost : evil.example\r\n\r\n",
    b"GET / HTTP/1.1\r\nX: y\r\n folded\r\n\r\n",
    b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
])
def test_almost_http_is_refused(data: bytes) -> None:
    assert peek.claim(data).status == peek.BAD


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
    assert peek.claim(data).status == peek.BAD


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_never_crash(data: bytes) -> None:
    for start in (b"", b"\x16\x03\x01", b"GET / HTTP/1.1\r\n"):
        assert peek.claim(start + data).status in (peek.MORE, peek.DONE, peek.OTHER, peek.BAD)


@settings(max_examples=300, deadline=None)
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
    assert peek.claim(b"GET / HTTP/1.1\r\n").need == peek.HEAD
    assert peek.claim(b"GET / HTT").need == peek.LINE
    assert peek.claim(b"PO").need == peek.LINE


def test_a_client_hello_in_many_tiny_records_is_refused() -> None:
    body = client_hello("tiny.example")[5:]
    records = b"".join(b"\x16\x03\x01\x00\x01" + body[i : i + 1] for i in range(len(body)))
    assert peek.claim(records).status == peek.BAD


def test_a_method_in_another_case_is_read_as_a_lenient_reader_would() -> None:
    """``connect`` is CONNECT to some proxies: its target is the claim (the relay then refuses
    it unless the rules allow it)."""
    assert peek.claim(b"connect evil.example:443 HTTP/1.1\r\n\r\n") == peek.Claim(
        peek.DONE, "evil.example", proxy_port=443, http=True, connect=True)
    assert peek.claim(b"FOO evil.example:443 HTTP/1.1\r\n\r\n").status == peek.BAD


@pytest.mark.parametrize("data", [
    # what ordinary clients send (a fourth red-team round found these refused)
    b"POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 13\r\n\r\n{\n  \"a\": 1\n}\n",
    b"GET /login?next=http://a.example/home HTTP/1.1\r\nHost: a.example\r\n\r\n",
])
def test_what_ordinary_clients_send_is_read_as_they_mean_it(data: bytes) -> None:
    claimed = peek.claim(data)
    assert (claimed.status, claimed.name) == (peek.DONE, "a.example")


def test_a_line_end_split_between_its_cr_and_lf_waits_for_the_lf() -> None:
    assert peek.claim(b"GET / HTTP/1.1\r") == peek.Claim(peek.MORE, need=peek.LINE)
    assert peek.claim(b"GET / HTTP/1.1\r\nHost: a.example\r\n\r\n").name == "a.example"



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
    assert peek.claim(data).status == peek.BAD


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
    assert peek.claim(data).status == peek.BAD
    assert httpflow.may_be_request(data.split(b" ")[0])
