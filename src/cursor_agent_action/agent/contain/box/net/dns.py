"""The box's resolver: DNS queries parsed and answered from the policy, never forwarded.

An A query for an allowed name gets an address of its own from :data:`POOL` (inside
127.0.0.0/8, so it is the box's loopback, where the relay listens); the relay later reads the
name back from the address the agent dialed. Other types for an allowed name get an empty
NOERROR answer (the agent then uses IPv4); a name no rule allows gets REFUSED and is recorded.
Nothing a query holds ever leaves the box: a name cannot carry data out through DNS.

The parser reads RFC 1035 queries only: a 12-byte header, exactly one question, its name as
plain labels (a compression pointer in a query is malformed). It never raises anything but
:class:`DnsError` and reads at most :data:`MAX_MESSAGE` bytes.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

from cursor_agent_action.agent.contain.box.net.policy import NetPolicy, normalise, valid_name

POOL = ipaddress.ip_network("127.77.0.0/16")
POOL_SIZE = POOL.num_addresses - 2
MAX_MESSAGE = 4096
TTL_S = 300
TYPE_A = 1
CLASS_IN = 1
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP, REFUSED = 0, 1, 2, 3, 4, 5
_HEADER = struct.Struct("!HHHHHH")


class DnsError(Exception):
    """A message that is not a query we can read."""


@dataclass(frozen=True)
class Query:
    ident: int
    recursion: bool  # RD, echoed
    name: str  # as sent, lower case, labels joined by "." (other bytes, "." too, as \xNN)
    qtype: int
    qclass: int
    question: bytes  # the question section, echoed in the answer


def parse_query(data: bytes) -> Query:
    """The one question of a DNS query. Raises :class:`DnsError`."""
    if len(data) < _HEADER.size or len(data) > MAX_MESSAGE:
        raise DnsError("not a DNS message (size)")
    ident, flags, qdcount, _an, _ns, _ar = _HEADER.unpack_from(data)
    if flags & 0x8000:
        raise DnsError("a response, not a query")
    if (flags >> 11) & 0xF != 0:
        raise DnsError("not a standard query (opcode)")
    if qdcount != 1:
        raise DnsError("not exactly one question")
    labels: list[str] = []
    offset = _HEADER.size
    for _ in range(128):  # at most 127 labels fit in 255 bytes
        if offset >= len(data):
            raise DnsError("the name runs past the end")
        length = data[offset]
        offset += 1
        if length == 0:
            break
        if length > 63:
            raise DnsError("a compressed or extended label in a query")
        label = data[offset : offset + length]
        if len(label) != length:
            raise DnsError("a label runs past the end")
        shown = (chr(b) if 0x21 <= b < 0x7F and b != 0x2E else f"\\x{b:02x}" for b in label.lower())
        labels.append("".join(shown))
        offset += length
        if offset - _HEADER.size > 255:
            raise DnsError("the name is longer than 255 bytes")
    else:
        raise DnsError("too many labels")
    if offset + 4 > len(data):
        raise DnsError("the question has no type and class")
    qtype, qclass = struct.unpack_from("!HH", data, offset)
    return Query(ident, bool(flags & 0x0100), ".".join(labels), qtype, qclass,
                 data[_HEADER.size : offset + 4])


def response(query: Query, rcode: int, address: str = "") -> bytes:
    """The answer to ``query``: ``rcode`` and, with ``address``, one A record."""
    flags = 0x8000 | 0x0400 | 0x0080 | (0x0100 if query.recursion else 0) | rcode  # QR AA RA
    answer = b""
    if address:
        answer = struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL_S, 4)
        answer += ipaddress.IPv4Address(address).packed
    header = _HEADER.pack(query.ident, flags, 1, 1 if address else 0, 0, 0)
    return header + query.question + answer


def error_response(data: bytes, rcode: int) -> bytes | None:
    """A header-only answer to an unreadable message (None: too short to answer)."""
    if len(data) < _HEADER.size:
        return None
    ident, flags = struct.unpack_from("!HH", data)
    if flags & 0x8000:
        return None  # never answer a response: no loops
    return _HEADER.pack(ident, 0x8000 | (flags & 0x7900) | 0x0080 | rcode, 0, 0, 0, 0)


@dataclass(frozen=True)
class Refusal:
    name: str
    reason: str


class Resolver:
    """Answers queries from the policy and keeps the pool: one address per allowed name."""

    def __init__(self, policy: NetPolicy) -> None:
        self.policy = policy
        self._by_name: dict[str, str] = {}
        self._by_address: dict[str, str] = {}
        self._first = int(POOL.network_address) + 1

    def address_for(self, name: str) -> str | None:
        """The pool address of an allowed ``name`` (allocated on first use); None when the
        pool is used up."""
        name = normalise(name)
        if name in self._by_name:
            return self._by_name[name]
        if len(self._by_name) >= POOL_SIZE:
            return None
        address = str(ipaddress.IPv4Address(self._first + len(self._by_name)))
        self._by_name[name] = address
        self._by_address[address] = name
        return address

    def name_for(self, address: str) -> str | None:
        """The name a pool address was given to (None: not ours, e.g. an IP literal)."""
        return self._by_address.get(address)

    def handle(self, data: bytes) -> tuple[bytes | None, Refusal | None]:
        """The answer to one message (None: none is sent), and the refusal to record."""
        try:
            query = parse_query(data)
        except DnsError:
            return error_response(data, FORMERR), None
        name = normalise(query.name)
        if name == "arpa" or name.endswith(".arpa"):  # reverse lookups: nothing to say
            return response(query, NXDOMAIN), None
        if query.qclass != CLASS_IN:
            return response(query, REFUSED), Refusal(name, "not an Internet-class query")
        if not valid_name(name):
            return response(query, REFUSED), Refusal(name, "not a host name")
        if not self.policy.allows_name(name):
            return response(query, REFUSED), Refusal(name, "no rule allows this name")
        if query.qtype != TYPE_A:
            return response(query, NOERROR), None  # IPv6 and the rest: none, use IPv4
        address = self.address_for(name)
        if address is None:
            return response(query, SERVFAIL), Refusal(name, "the resolver's pool is used up")
        return response(query, NOERROR, address), None
