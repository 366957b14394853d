"""What a connection's first bytes are: TLS (its first byte is 0x16; the ClientHello's SNI is
the name it claims), plain HTTP (a first line naming an HTTP version or a URL), or another
protocol.

The relay compares a TLS claim with the name the agent resolved (the address it dialed): a
client that dials an allowed name but asks the far end for another one (domain fronting, a
shared CDN) is refused; every later ClientHello is read by :mod:`.tls`. Plain HTTP is
terminated by :mod:`.plainhttp` (the far end reads only the relay's requests). Another
protocol passes as bytes (the name and port were checked already).
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

MAX_PEEK = 64 * 1024
MORE = "more"  # not enough bytes yet: ``need`` says how many, or LINE
LINE = -2  # ``need`` of a first line that may be HTTP's: more bytes up to its line end
MAX_RECORDS = 8  # a ClientHello in more TLS records than this is refused (real ones use 1-2)
DONE = "done"  # read: ``name`` is the claimed name, or "" when none is claimed
OTHER = "other"  # neither TLS nor HTTP/1: nothing to check
BAD = "bad"  # claims to be TLS or HTTP/1 but is malformed (or too long): refuse


class Claim(NamedTuple):
    status: str
    name: str = ""
    need: int = 0  # with MORE: parse again once this many bytes are in (LINE: a line end)
    http: bool = False  # plain HTTP: read and composed anew by plainhttp
    ech: bool = False  # a ClientHello with encrypted_client_hello: its inner name is hidden


def claim(data: bytes) -> Claim:
    """What ``data`` (the start of a stream) claims; :data:`MORE` asks for more bytes."""
    if not data:
        return Claim(MORE, need=1)
    if data[0] == 0x16:
        return _tls(data)
    if data[0] not in _MAY_START:  # no HTTP reader takes it for a request's start
        return Claim(OTHER)
    rest = data.lstrip(b"\r\n")  # the first line that is not empty (servers skip those)
    end = rest.find(b"\n")
    if end < 0:
        if len(data) < MAX_PEEK:
            return Claim(MORE, need=LINE)
        return Claim(BAD) if near_http(rest) else Claim(OTHER)
    return Claim(DONE, http=True) if near_http(rest[:end]) else Claim(OTHER)


_MAY_START = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0")
"""A first byte that may start a request to some HTTP reader (a letter of a method, or white
space Python's reader skips); a connection starting with another is another protocol."""


_REQUEST_SHAPE = re.compile(r"\s*\S+\s+[/*]")
"""A word, white space, then a path or ``*``: a request line to some reader (HTTP/0.9's
too; node's reads RTSP's methods)."""


def near_http(line: bytes) -> bool:
    """Whether ``line`` (a first line, up to its LF) is HTTP's: it names a version
    (``HTTP/``, or ``RTSP/`` and ``ICE/``, which node's reader takes too), a URL (``://``), or
    has a request's shape. Such a connection is read with h11 (:mod:`.plainhttp`), which
    refuses what it cannot read; any other first line is another protocol's."""
    text = line.decode("latin-1")
    upper = text.upper()
    return (any(version in upper for version in ("HTTP/", "RTSP/", "ICE/")) or "://" in text
            or _REQUEST_SHAPE.match(text) is not None)


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
