"""The name a connection's first bytes claim: the TLS ClientHello's SNI or the HTTP Host.

The relay compares it with the name the agent resolved (the address it dialed): a client that
dials an allowed name but asks the far end for another one (domain fronting, a shared CDN) is
refused. Only the first flight is read, at most :data:`MAX_PEEK` bytes; a protocol that is
neither TLS nor HTTP/1 passes unchecked (the name and port were checked already). HTTP is
known by its shape, not a list of methods: empty lines first (servers skip them), any method,
a target, ``HTTP/1.x``; a first line that is almost HTTP (a known method, ``HTTP/`` or a URL in
it, but not a request line) is refused. The rest of a plain HTTP connection is read request by
request by :mod:`.httpflow`.
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

from cursor_agent_action.agent.box.net import httpflow

MAX_PEEK = 64 * 1024
MORE = "more"  # not enough bytes yet: ``need`` says how many, or HEAD
HEAD = -1  # ``need`` of an HTTP head: more bytes up to its blank line
LINE = -2  # ``need`` of a first line that may be HTTP's: more bytes up to its line end
MAX_RECORDS = 8  # a ClientHello in more TLS records than this is refused (real ones use 1-2)
DONE = "done"  # read: ``name`` is the claimed name, or "" when none is claimed
OTHER = "other"  # neither TLS nor HTTP/1: nothing to check
BAD = "bad"  # claims to be TLS or HTTP/1 but is malformed (or too long): refuse


class Claim(NamedTuple):
    status: str
    name: str = ""
    need: int = 0  # with MORE: parse again once this many bytes are in (HEAD: a blank line)
    proxy_port: int = 0  # a proxy request (CONNECT, absolute URL): the port it asks for
    http: bool = False  # an HTTP/1 request: the rest is read by httpflow.Requests
    connect: bool = False  # a CONNECT request
    ech: bool = False  # a ClientHello with encrypted_client_hello: its inner name is hidden


def claim(data: bytes) -> Claim:
    """What ``data`` (the start of a stream) claims; :data:`MORE` asks for more bytes."""
    if not data:
        return Claim(MORE, need=1)
    if data[0] == 0x16:
        return _tls(data)
    if data[0] not in _MAY_START:  # no HTTP reader takes it for a request's start
        return Claim(OTHER)
    rest = data.lstrip(b"\r\n")
    blank = data[: len(data) - len(rest)]
    ends = [i for i in (rest.find(b"\r"), rest.find(b"\n")) if i >= 0]
    if not ends:  # a first line still open (a lenient reader may end it at a lone CR too)
        if len(data) < MAX_PEEK:
            return Claim(MORE, need=LINE)
        return Claim(BAD) if near_http(rest) else Claim(OTHER)
    line = rest[: min(ends)]
    if b"\n" not in rest and len(data) < MAX_PEEK and httpflow.may_be_request(line):
        # A lone CR after white space or a method: a CRLF's first half, or a blank to a reader
        # that reads up to the LF (Python's): the line is judged once its LF is in.
        return Claim(MORE, need=LINE)
    to_lf = rest.split(b"\n", 1)[0]  # the line as Python's reader sees it (a CR is a blank)
    strict = (httpflow.request_line(line) is not None and rest[len(line) : len(line) + 2] == b"\r\n"
              and blank == b"\r\n" * (len(blank) // 2))
    if not strict:
        # Not a request line we read, but one a lenient server or proxy might (other blanks,
        # a lone CR, HTTP/0.9): refused. Anything else is another protocol.
        return Claim(BAD) if near_http(to_lf) or (blank and near_http(rest)) else Claim(OTHER)
    head_end = rest.find(b"\r\n\r\n")
    head = rest if head_end < 0 else rest[:head_end]  # a body's bytes are the body's own
    if b"\n" in head.replace(b"\r\n", b""):
        return Claim(BAD)  # lines that do not end in CRLF: a far end may read them otherwise
    return _http(rest)


_MAY_START = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0")
"""A first byte that may start a request to some HTTP reader (a letter of a method, or white
space Python's reader skips); a connection starting with another is another protocol."""


def near_http(line: bytes) -> bool:
    """Whether some HTTP reader could take ``line`` for a request (or a proxy request): it
    names a version (``HTTP/``, or ``RTSP/`` and ``ICE/``, which node's reader takes too), a
    URL (``://``), or starts (after any white space, as Python's reader splits it) with a
    method."""
    text = line.decode("latin-1")
    words = text.split()
    upper = text.upper()
    return (any(version in upper for version in ("HTTP/", "RTSP/", "ICE/")) or "://" in text
            or (bool(words) and httpflow.is_method(words[0])))


# host[:port]: a name or IPv4 address, or [IPv6]; nothing else (no user, no %, no \ or ?).
_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?")
_ABSOLUTE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)(.*)", re.S)


def _authority(text: str, default_port: int) -> tuple[str, int] | None:
    """``(host, port)`` of an authority (lower case, no trailing dot, no brackets), or None
    when it is anything but ``host[:port]`` (a user part, a percent sign, a backslash: the
    forms URL readers disagree on)."""
    match = _AUTHORITY.fullmatch(text)
    if match is None:
        return None
    port = int(match.group(2)) if match.group(2) else default_port
    if match.group(2) and not 0 < port < 65536:
        return None
    return match.group(1).strip("[]").rstrip(".").lower(), port


def _http(data: bytes) -> Claim:
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return Claim(BAD) if len(data) >= MAX_PEEK else Claim(MORE, need=HEAD)
    try:
        return http_claim(httpflow.parse_head(data[:end]))
    except (httpflow.BadRequest, UnicodeDecodeError):
        return Claim(BAD)


def http_claim(head: httpflow.Head) -> Claim:
    """The name and port one request's head asks for: its ``Host``, a ``CONNECT`` target, an
    absolute URL's authority (all the same name, or refused). The port is that of the target
    or of a ``Host`` that names one (0: none named)."""
    claimed: set[str] = set()
    port = 0
    for host in head.hosts:
        found = _authority(host.strip(), 0)
        if found is None:
            return Claim(BAD)
        claimed.add(found[0])
        port = found[1] or port
    if head.method == "CONNECT":  # to a proxy: the tunnel's far end is the claim
        found = _authority(head.target, 0)
        if found is None or not found[1]:
            return Claim(BAD)
        claimed.add(found[0])
        port = found[1]
    elif not head.target.startswith("/") and "://" in head.target:  # absolute form: its
        # authority is a claim (a URL in an origin-form target's query is the query's)
        absolute = _ABSOLUTE.fullmatch(head.target)
        if absolute is None or "\\" in head.target:
            return Claim(BAD)
        scheme = absolute.group(1).lower()
        found = _authority(absolute.group(2), 443 if scheme in ("https", "wss") else 80)
        if found is None:
            return Claim(BAD)
        claimed.add(found[0])
        port = found[1]
    if len(head.hosts) > 1 or len(claimed) > 1:
        return Claim(BAD)
    return Claim(DONE, claimed.pop() if claimed else "", proxy_port=port, http=True,
                 connect=head.method == "CONNECT")


def _tls(data: bytes) -> Claim:
    """The SNI of a ClientHello, which may span several records."""
    handshake = b""
    offset = 0
    for _ in range(MAX_RECORDS):
        if len(data) < offset + 5:
            return Claim(BAD) if len(data) >= MAX_PEEK else Claim(MORE, need=offset + 5)
        kind, length = data[offset], struct.unpack_from("!H", data, offset + 3)[0]
        if kind != 0x16 or length == 0 or length > 16384 + 2048:
            return Claim(BAD)
        record = data[offset + 5 : offset + 5 + length]
        handshake += record
        offset += 5 + length
        if len(handshake) >= 4:
            if handshake[0] != 1:  # not a ClientHello
                return Claim(BAD)
            need = 4 + int.from_bytes(handshake[1:4], "big")
            if need > MAX_PEEK:
                return Claim(BAD)
            if len(handshake) >= need:
                return hello_claim(handshake[4:need])
        if len(record) < length:
            return Claim(MORE, need=offset)
    return Claim(BAD)


ECH = 0xFE0D
"""The encrypted_client_hello extension: the name the far end serves is inside, unread."""


def hello_claim(hello: bytes) -> Claim:
    """The server name of a ClientHello body ("" without the extension); with
    encrypted_client_hello, ``ech`` is set (the relay refuses it)."""
    try:
        pos = 2 + 32  # version, random
        pos += 1 + hello[pos]  # session id
        pos += 2 + struct.unpack_from("!H", hello, pos)[0]  # cipher suites
        pos += 1 + hello[pos]  # compression methods
        if pos == len(hello):
            return Claim(DONE, "")  # no extensions
        end = pos + 2 + struct.unpack_from("!H", hello, pos)[0]
        if end > len(hello):
            return Claim(BAD)
        pos += 2
        names: list[str] = []
        ech = False
        while pos + 4 <= end:
            kind, length = struct.unpack_from("!HH", hello, pos)
            body = hello[pos + 4 : pos + 4 + length]
            pos += 4 + length
            if kind == 0:
                names += _server_names(body)
            ech = ech or kind == ECH
        if pos != end or len(names) > 1:
            return Claim(BAD)
        return Claim(DONE, names[0] if names else "", ech=ech)
    except (IndexError, struct.error, UnicodeDecodeError):
        return Claim(BAD)


def _server_names(body: bytes) -> list[str]:
    total = struct.unpack_from("!H", body, 0)[0]
    pos, end, names = 2, 2 + total, []
    if end != len(body):
        raise IndexError("server_name list length")
    while pos < end:
        kind, length = body[pos], struct.unpack_from("!H", body, pos + 1)[0]
        name = body[pos + 3 : pos + 3 + length]
        if len(name) != length:
            raise IndexError("server name length")
        if kind == 0:
            names.append(name.decode("ascii").rstrip(".").lower())
        pos += 3 + length
    return names
