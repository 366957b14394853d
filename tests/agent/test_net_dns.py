"""The box's resolver: answers from the policy only; its parser never crashes on any bytes."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.agent.contain.box.net import dns
from cursor_agent_action.agent.contain.box.net.policy import build_policy
from tests.support.netbox import dns_query

POLICY = build_policy(["allowed.example", "*.wild.example"])


def _rcode(reply: bytes) -> int:
    return reply[3] & 0xF


def _answers(reply: bytes) -> int:
    return int(struct.unpack_from("!H", reply, 6)[0])


def test_an_allowed_name_gets_its_own_pool_address_and_keeps_it() -> None:
    resolver = dns.Resolver(POLICY)
    first, refusal = resolver.handle(dns_query("Allowed.Example.", ident=7))
    assert refusal is None
    assert first is not None
    assert struct.unpack_from("!H", first)[0] == 7
    assert _rcode(first) == dns.NOERROR
    assert _answers(first) == 1
    address = ".".join(str(b) for b in first[-4:])
    assert address.startswith("127.77.")
    assert resolver.name_for(address) == "allowed.example"
    other, _ = resolver.handle(dns_query("a.wild.example"))
    assert other is not None
    assert other[-4:] != first[-4:]
    again, _ = resolver.handle(dns_query("allowed.example"))
    assert again is not None
    assert again[-4:] == first[-4:]
    assert resolver.name_for("127.0.0.1") is None


def test_a_refused_name_gets_refused_and_is_recorded_and_aaaa_gets_nothing() -> None:
    resolver = dns.Resolver(POLICY)
    reply, refusal = resolver.handle(dns_query("secret-value.example.test"))
    assert reply is not None
    assert _rcode(reply) == dns.REFUSED
    assert _answers(reply) == 0
    assert refusal == dns.Refusal("secret-value.example.test", "no rule allows this name")
    reply, refusal = resolver.handle(dns_query("allowed.example", qtype=28))
    assert reply is not None
    assert _rcode(reply) == dns.NOERROR
    assert _answers(reply) == 0
    assert refusal is None
    reply, refusal = resolver.handle(dns_query("1.0.0.127.in-addr.arpa", qtype=12))
    assert reply is not None
    assert _rcode(reply) == dns.NXDOMAIN
    assert refusal is None


def test_malformed_queries_get_formerr_and_responses_are_never_answered() -> None:
    resolver = dns.Resolver(POLICY)
    query = dns_query("allowed.example")
    reply, _ = resolver.handle(query[:-3])
    assert reply is not None
    assert _rcode(reply) == dns.FORMERR
    as_response = query[:2] + b"\x81\x00" + query[4:]
    assert resolver.handle(as_response) == (None, None)
    assert resolver.handle(b"\x00\x01") == (None, None)
    pointer = query[:12] + b"\xc0\x0c" + query[-4:]
    reply, _ = resolver.handle(pointer)
    assert reply is not None
    assert _rcode(reply) == dns.FORMERR


def test_the_pool_is_bounded() -> None:
    resolver = dns.Resolver(POLICY)
    resolver._by_name = {f"h{i}": "x" for i in range(dns.POOL_SIZE)}  # a full pool
    reply, refusal = resolver.handle(dns_query("new.wild.example"))
    assert reply is not None
    assert _rcode(reply) == dns.SERVFAIL
    assert refusal is not None
    assert "pool" in refusal.reason


@given(st.binary(max_size=600))
def test_any_bytes_never_crash_and_the_answer_is_bounded(data: bytes) -> None:
    reply, _ = dns.Resolver(POLICY).handle(data)
    assert reply is None or len(reply) <= len(data) + 16


@given(st.lists(st.binary(min_size=1, max_size=70), min_size=1, max_size=8),
       st.integers(0, 0xFFFF), st.integers(0, 0xFFFF), st.binary(max_size=40))
def test_query_shaped_bytes_never_crash(labels: list[bytes], qtype: int, flags: int,
                                        tail: bytes) -> None:
    name = b"".join(bytes([min(len(lb), 255)]) + lb for lb in labels) + b"\0"
    data = struct.pack("!HHHHHH", 1, flags, 1, 0, 0, 0) + name + struct.pack("!HH", qtype, 1)
    try:
        query = dns.parse_query(data + tail)
    except dns.DnsError:
        return
    assert len(query.name) <= 4 * 255
    reply, _ = dns.Resolver(POLICY).handle(data + tail)
    assert reply is not None
    assert len(reply) <= len(data) + 16


def test_control_bytes_and_dots_inside_a_label_are_escaped_and_refused() -> None:
    """A label "api2.cursor" + "sh" must not pass as api2.cursor.sh, and a newline in a name
    must never reach the log or the summary raw."""
    query = dns_query("x.example")
    crafted = query[:12] + b"\x0bapi2.cursor\x02sh\x00" + query[-4:]
    reply, refusal = dns.Resolver(build_policy([])).handle(crafted)
    assert reply is not None
    assert _rcode(reply) == dns.REFUSED
    assert refusal == dns.Refusal("api2\\x2ecursor.sh", "not a host name")
    crafted = query[:12] + b"\x03a\nb\x07example\x00" + query[-4:]
    _, refusal = dns.Resolver(POLICY).handle(crafted)
    assert refusal is not None
    assert refusal.name == "a\\x0ab.example"
