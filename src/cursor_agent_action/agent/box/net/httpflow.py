"""HTTP/1 through the relay, request by request: what each request of a plain-text connection
asks for, so a second request on a kept-alive connection is checked like the first.

The relay checks the first bytes of every connection (:mod:`.peek`). Over TLS the rest is
opaque, but plain HTTP to an allowed name can carry more requests on the same connection; to an
allowed *proxy*, each one can name another host (``CONNECT``, an absolute URL). So the relay
reads the agent's side of a plain HTTP connection with :class:`Requests`, which frames every
request (its head, then a ``Content-Length`` or chunked body) and hands each head to the relay
to check before any of its bytes go on.

The reading is strict where a lenient far end could read the same bytes otherwise (request
smuggling): a head must use CRLF line ends, no folded or control-character fields, no space
before a colon; both ``Transfer-Encoding`` and ``Content-Length``, a coding other than
``chunked``, or two lengths are refused. A ``CONNECT`` or ``Upgrade`` request turns the
connection into a tunnel; it must be the connection's first request, and the tunnel opens only
when the far end's answer says so (:func:`tunnel_opens`): 2xx to ``CONNECT``, 101 to an upgrade.
Anything else closes the connection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_HEAD = 64 * 1024
MAX_LINE = 4096  # a chunk-size or trailer line
_TCHAR = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]"
_REQUEST_LINE = re.compile(rb"(" + _TCHAR + rb"+) ([\x21-\x7e]+) HTTP/(\d)\.(\d)")
_FIELD = re.compile(rb"(" + _TCHAR + rb"+):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*")
_STATUS_LINE = re.compile(rb"HTTP/\d\.\d (\d{3})(?: [^\x00-\x08\x0a-\x1f\x7f]*)?")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})(?:;[^\x00-\x08\x0a-\x1f\x7f]*)?")
_METHOD_NAMES = (
    "GET HEAD POST PUT DELETE CONNECT OPTIONS TRACE PATCH COPY LOCK MKCOL MOVE PROPFIND "
    "PROPPATCH SEARCH UNLOCK BIND REBIND UNBIND ACL REPORT MKACTIVITY CHECKOUT MERGE M-SEARCH "
    "NOTIFY SUBSCRIBE UNSUBSCRIBE PURGE MKCALENDAR LINK UNLINK SOURCE PRI QUERY "
    # RTSP's, which node's reader (llhttp) takes for HTTP's too (a sixth red-team round)
    "DESCRIBE ANNOUNCE SETUP PLAY PAUSE TEARDOWN GET_PARAMETER SET_PARAMETER REDIRECT RECORD "
    "FLUSH")
KNOWN_METHODS = frozenset(name.encode() for name in _METHOD_NAMES.split(" "))
"""Methods some HTTP reader knows (node's llhttp's whole list: HTTP's, WebDAV's, RTSP's, HTTP/2's
preface): a first line starting with one is held back whole until it is read."""
NO_BODY = frozenset({"GET", "HEAD", "OPTIONS", "TRACE", "DELETE", "CONNECT"})
"""Methods whose body a far end may not read (Python's http.server never reads one by itself):
a request of these with a body is refused, or its body would be read as the next request."""


class BadRequest(Exception):
    """The bytes are not a request this reading accepts (the connection is refused)."""


@dataclass(frozen=True)
class Head:
    """One request's head, as far as the relay needs it."""

    method: str
    target: str
    hosts: tuple[str, ...]  # the Host field(s), as written
    tunnel: bool  # CONNECT, or an Upgrade request: the rest of the connection is a tunnel
    body: int  # bytes of body (Content-Length); -1: chunked


def request_line(line: bytes) -> tuple[str, str] | None:
    """Method and target of an HTTP/1 request line (without its CRLF), or None."""
    match = _REQUEST_LINE.fullmatch(line)
    if match is None or match.group(3) != b"1":
        return None
    return match.group(1).decode(), match.group(2).decode("ascii")


def may_be_request(line: bytes) -> bool:
    """Whether the first line so far (no line end yet) may become a request some reader acts
    on at the connection's end, before any line end: white space alone so far, or a first
    word that is, or may still become, a method."""
    text = line.decode("latin-1").lstrip()  # every blank Python's reader splits on (\x1c, \x85)
    if not text:
        return True
    word, *rest = text.split(maxsplit=1)
    if rest or text[len(word):]:  # the word is whole
        return is_method(word)
    upper = word.upper().encode("latin-1", "replace")
    return any(method.startswith(upper) for method in KNOWN_METHODS)


def is_method(word: str) -> bool:
    """Whether some reader takes ``word`` (in any case) for a method."""
    return word.upper().encode("latin-1", "replace") in KNOWN_METHODS


def parse_head(raw: bytes) -> Head:
    """The head ``raw`` (without its final empty line); raises :class:`BadRequest`."""
    if b"\n" in raw.replace(b"\r\n", b""):
        raise BadRequest("a line of the head does not end in CRLF")
    line, *fields = raw.split(b"\r\n")
    request = request_line(line)
    if request is None:
        raise BadRequest("not an HTTP/1 request line")
    method, target = request
    hosts: list[str] = []
    lengths: set[bytes] = set()
    codings: list[bytes] = []
    upgrade = False
    for field in fields:
        match = _FIELD.fullmatch(field)
        if match is None:
            raise BadRequest("a malformed header field")
        name, value = match.group(1).lower(), match.group(2)
        if name == b"host":
            hosts.append(value.decode("latin-1"))
        elif name == b"content-length":
            lengths.update(v.strip() for v in value.split(b","))
        elif name == b"transfer-encoding":
            codings += [v.strip().lower() for v in value.split(b",")]
        elif name == b"upgrade":
            upgrade = True
    if codings and lengths:
        raise BadRequest("both Transfer-Encoding and Content-Length")
    if codings and codings != [b"chunked"]:
        raise BadRequest("a transfer coding other than chunked")
    if len(lengths) > 1 or any(not n.isdigit() or len(n) > 18 for n in lengths):
        raise BadRequest("a Content-Length that is not one number")
    body = -1 if codings else int(lengths.pop()) if lengths else 0
    if body and method.upper() in NO_BODY:
        raise BadRequest(f"a body on {method.upper()}, which a far end may not read")
    connect = method.upper() == "CONNECT"  # a lenient reader may take any case
    if not (connect or target.startswith("/") or "://" in target or target == "*"):
        raise BadRequest("a request target of no known form")
    if target.startswith("//") or "\\" in target:  # a URL's host to WHATWG readers (node)
        raise BadRequest("a request target that URL readers take for another host")
    if not hosts and not (connect or ("://" in target and not target.startswith("/"))):
        raise BadRequest("no Host (a proxy would make up a name)")
    return Head(method.upper() if connect else method, target, tuple(hosts), connect or upgrade,
                body)


def tunnel_opens(head: Head, status: int) -> bool:
    """Whether the far end's ``status`` to the tunnel request ``head`` opens the tunnel."""
    return 200 <= status < 300 if head.method == "CONNECT" else status == 101


def response_status(raw: bytes) -> int:
    """The status code of a response head (``raw`` up to its empty line); -1 if malformed."""
    match = _STATUS_LINE.fullmatch(raw.split(b"\r\n", 1)[0])
    return int(match.group(1)) if match else -1


class Requests:
    """The agent's side of a plain HTTP connection, fed as it arrives (see the module
    docstring). :meth:`feed` returns the bytes that may go on and the heads they start; the
    caller checks each head before sending what follows it."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._state = "head"
        self._left = 0  # body bytes or chunk bytes still to pass
        self._scanned = 0  # how far an unfinished head was searched
        self.requests = 0
        self.tunnel: Head | None = None  # a tunnel request was sent: nothing more is read

    def feed(self, data: bytes) -> list[tuple[bytes, Head | None]]:
        """``data`` read: pieces to send in order, each with the head it starts (None for a
        body's bytes). Raises :class:`BadRequest`."""
        if self.tunnel is not None:
            raise BadRequest("bytes after a tunnel request before its answer")
        self._buffer += data
        out: list[tuple[bytes, Head | None]] = []
        while self._buffer and self.tunnel is None:
            piece = self._step()
            if piece is None:
                break
            out.append(piece)
        return out

    def rest(self) -> bytes:
        """What came after a tunnel request (sent once the tunnel opens)."""
        return self._take(len(self._buffer))

    def _take(self, count: int) -> bytes:
        taken = bytes(self._buffer[:count])
        del self._buffer[:count]
        return taken

    def _line(self) -> bytes | None:
        end = self._buffer.find(b"\r\n")
        if end < 0:
            if len(self._buffer) > MAX_LINE:
                raise BadRequest("a chunk line over 4 KiB")
            return None
        return self._take(end + 2)

    def _step(self) -> tuple[bytes, Head | None] | None:
        if self._state == "head":
            return self._head()
        if self._state in ("body", "chunk"):
            piece = self._take(min(self._left, len(self._buffer)))
            self._left -= len(piece)
            if self._left == 0:
                self._state = "head" if self._state == "body" else "chunk-end"
            return piece, None
        line = self._line()
        if line is None:
            return None
        if self._state == "chunk-end":
            if line != b"\r\n":
                raise BadRequest("a chunk not followed by CRLF")
            self._state = "size"
        elif self._state == "size":
            size = _CHUNK_SIZE.fullmatch(line[:-2])
            if size is None:
                raise BadRequest("a malformed chunk size")
            self._left = int(size.group(1), 16)
            self._state = "chunk" if self._left else "trailer"
        elif line == b"\r\n":  # the trailer's end: the next request
            self._state = "head"
        elif _FIELD.fullmatch(line[:-2]) is None:
            raise BadRequest("a malformed trailer field")
        return line, None

    def _head(self) -> tuple[bytes, Head | None] | None:
        blank = 0  # empty lines before a request are ignored by servers: pass them on
        while self._buffer[blank : blank + 2] == b"\r\n":
            blank += 2
        # Only what came since the last look is searched (a byte at a time stays linear).
        start = max(blank, self._scanned - 3)
        end = self._buffer.find(b"\r\n\r\n", start)
        if end < 0:
            lf = self._buffer.find(b"\n", max(blank, self._scanned))
            while lf >= 0:
                if lf == blank or self._buffer[lf - 1] != 0x0D:
                    raise BadRequest("a request head with a bare LF")
                lf = self._buffer.find(b"\n", lf + 1)
            if len(self._buffer) > MAX_HEAD:
                raise BadRequest("a request head over 64 KiB")
            self._scanned = len(self._buffer)
            return None
        self._scanned = 0
        head = parse_head(bytes(self._buffer[blank:end]))
        if head.tunnel and self.requests:
            raise BadRequest("a tunnel request after another request on the connection")
        self.requests += 1
        raw = self._take(end + 4)
        if head.tunnel:
            self.tunnel = head
        elif head.body:
            self._state, self._left = ("size", 0) if head.body < 0 else ("body", head.body)
        return raw, head
