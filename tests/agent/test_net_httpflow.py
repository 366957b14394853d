"""httpflow.Requests: the agent's side of a plain HTTP connection framed request by request,
whatever the chunking; bytes that no strict reader takes for a request are refused."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor_agent_action.agent.box.net import httpflow

_HOST = st.sampled_from(["a.example", "b.example:8080", "evil.example"])
_TEXT = st.binary(max_size=40)


@st.composite
def request(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from([b"GET", b"POST", b"PUT", b"PROPFIND", b"X-ANY"]))
    target = draw(st.sampled_from([b"/", b"/x?y=1", b"http://evil.example/p"]))
    head = method + b" " + target + b" HTTP/1.1\r\nHost: " + draw(_HOST).encode() + b"\r\n"
    kinds = ["none"] if method == b"GET" else ["none", "length", "chunked"]  # GET: no body
    kind = draw(st.sampled_from(kinds))
    body = draw(_TEXT)
    if kind == "length":
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    if kind == "chunked":
        chunks = b"".join(b"%x\r\n" % len(part) + part + b"\r\n"
                          for part in (body[:7], body[7:]) if part)
        return head + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    return head + b"\r\n"


def feed_in_pieces(data: bytes, cuts: list[int]) -> tuple[bytes, list[httpflow.Head]]:
    flow = httpflow.Requests()
    out, heads = b"", []
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for start, end in itertools.pairwise(edges):
        for piece, head in flow.feed(data[start:end]):
            out += piece
            if head is not None:
                heads.append(head)
    return out, heads


@settings(max_examples=300, deadline=None)
@given(st.lists(request(), min_size=1, max_size=4), st.lists(st.integers(0, 10_000)))
def test_any_chunking_frames_the_same_requests(requests: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(requests)
    whole, heads = feed_in_pieces(stream, [])
    pieces, heads_cut = feed_in_pieces(stream, cuts)
    assert whole == pieces == stream
    assert heads == heads_cut
    assert len(heads) == len(requests)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.lists(st.integers(0, 1000), max_size=5))
def test_any_bytes_are_framed_or_refused_never_a_crash(data: bytes, cuts: list[int]) -> None:
    try:
        out, _ = feed_in_pieces(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n" + data, cuts)
    except httpflow.BadRequest:
        return
    assert (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n" + data).startswith(out)


def test_a_request_hidden_in_a_body_is_body() -> None:
    inner = b"CONNECT evil.example:443 HTTP/1.1\r\n\r\n"
    data = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % len(inner) + inner
    out, heads = feed_in_pieces(data, [])
    assert out == data
    assert [h.method for h in heads] == ["POST"]


@pytest.mark.parametrize("data", [
    b"GET / HTTP/1.1\r\nHost: a\r\n\r\nCONNECT b:443 HTTP/1.1\r\n\r\n",  # a tunnel not first
    b"GET / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"GET / HTTP/2.0\r\n\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
    # a third red-team round: what node's or Python's reader takes otherwise
    b"GET //evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n",  # WHATWG: a URL with a host
    b"GET /\\evil.example/ HTTP/1.1\r\nHost: a\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",  # a body not read
    b"GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n",
])
def test_what_a_far_end_could_read_otherwise_is_refused(data: bytes) -> None:
    with pytest.raises(httpflow.BadRequest):
        feed_in_pieces(data, [])


def test_after_a_tunnel_request_nothing_more_is_read_until_its_answer() -> None:
    flow = httpflow.Requests()
    [(_head_bytes, head)] = flow.feed(b"CONNECT a.example:443 HTTP/1.1\r\n\r\n\x16\x03\x01")
    assert head is not None
    assert head.tunnel
    assert flow.rest() == b"\x16\x03\x01"
    with pytest.raises(httpflow.BadRequest):
        flow.feed(b"more")
    assert httpflow.tunnel_opens(head, 200)
    assert not httpflow.tunnel_opens(head, 407)
    assert httpflow.response_status(b"HTTP/1.1 407 Proxy Authentication Required") == 407
    assert httpflow.response_status(b"garbage") == -1


@pytest.mark.parametrize(("line", "held"), [
    (b"", True), (b"G", True), (b"GE", True), (b"get", True), (b"  GET", True),
    (b"GET http://evil.example/ HTTP/1.1", True), (b"propfind /", True),
    (b"hello", False), (b"ping 0", False), (b"SSH-2.0-OpenSSH_9.6", False), (b"\x00\x01", False),
])
def test_a_first_line_that_may_become_a_request_is_held_back(line: bytes, held: bool) -> None:
    """Python's reader acts on a line the connection's end cuts short: such a line is never
    sent before its line end (the relay's first-line mode)."""
    assert httpflow.may_be_request(line) is held
