"""The credentials the relay holds for the agent, and their swapping in what goes to and comes
from Cursor's service.

The box holds placeholders only: a key-shaped one for ``CURSOR_API_KEY`` (same length, same
prefix, same alphabet: :func:`key_placeholder`), and one for each credential the service hands
back (:meth:`Vault.mask`: a JWT keeps its header and payload, which clients read for ``exp``,
and gets a random signature of the same length; another token a random value of its length and
alphabet). Towards Cursor each placeholder becomes its real value again; back from Cursor each
real value becomes its placeholder. Every replacement keeps the length, so a
``Content-Length``, an HTTP/2 frame's length and a Connect envelope's length stay right while
bodies stream.

What coming down is recognised as a credential the service hands back (masked on first sight):

- every value the vault already holds (the key, every token masked before), anywhere;
- a JWT, anywhere (JSON, protobuf, text): found where ``eyJ`` starts one;
- in a JSON answer (a ``Content-Type`` naming JSON, a Connect JSON stream, server-sent events):
  the string value of a field whose name says it is a credential (:func:`credential_field`),
  whatever its shape: an opaque token too. In protobuf, which carries no field names, only the
  first two are: an opaque token first handed out inside a protobuf message is not recognised.

A :class:`Rewriter` rewrites one body as it streams. It holds back only what may be the start
of a value the next chunk or frame completes: at most the longest known value's length less
one byte of value characters, an unfinished JWT (at most :data:`MAX_HOLD`), an unfinished
credential field of a JSON answer (at most :data:`MAX_FIELD`). Nothing else is held or copied:
a chunk with nothing to replace goes on as the same bytes object.
"""

from __future__ import annotations

import bisect
import re
import string
import threading
from collections.abc import Iterable

from cursor_agent_action.agent.contain.box.net.envelopes import ENVELOPED_TYPES, MessageEnds
from cursor_agent_action.agent.contain.box.net.placeholders import (
    JWT_WHOLE,
    jwt_placeholder,
    looks_like_jwt,
    random_like,
)

TOKEN_CHARS = (string.ascii_letters + string.digits + "-_.").encode()
"""What JWTs are made of: an unfinished one at the end of a chunk is this run of bytes."""
VALUE_CHARS = TOKEN_CHARS + b"~+/=:"
"""What a credential is made of (base64, base64url, hex, JWTs, ``id:secret`` pairs)."""
MAX_HOLD = 16 * 1024
"""An unfinished JWT longer than this is let go (no token of Cursor's is as long)."""
MAX_VALUE = 4096
"""A JSON credential field's value is masked up to this length (longer: not a credential)."""
MAX_FIELD = MAX_VALUE + 128
_JWT_START = re.compile(rb"eyJ")
"""Where a JWT may start: found by ``re`` (twice as fast as ``bytes.find`` for 3 bytes)."""
_JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{16,}")
_NAME = rb"[A-Za-z0-9_-]{0,64}"
_GAP = rb"[ \t\r\n]{0,16}"
_VALUE = rb"[A-Za-z0-9._~+/=:-]"
_FIELD = re.compile(rb'"(' + _NAME + rb"(?i:token|secret|api[_-]?key|access[_-]?key"
                    rb'|private[_-]?key|password|credentials?))"' + _GAP + b":" + _GAP
                    + rb'"(' + _VALUE + b"{8,%d})" % MAX_VALUE + b'"')
_FIELD_START = re.compile(rb'"' + _NAME + rb'(?:"' + _GAP + rb"(?::" + _GAP + rb'(?:"'
                          + _VALUE + b"{0,%d})?)?)?" % MAX_VALUE)
"""What may be the start of a credential field the next chunk completes."""
NOT_CREDENTIALS = (b"pagetoken", b"continuationtoken")
"""Field names that end like a credential's and are not one (pagination)."""
UP, DOWN = "up", "down"
"""Values are found with ``bytes.find`` (the key, other tokens; where a JWT starts), never by
a regular expression that grows with every token."""
Match = tuple[int, int, bytes | None, int]
"""A value found: its start, its end, its replacement (None: not known yet), and where what
holds it starts (a credential field's name; the value's start for any other)."""


def credential_field(name: str | bytes) -> bool:
    """Whether a JSON field of this name holds a credential: its name, lower-cased without
    ``_`` and ``-``, ends with ``token``, ``secret``, ``apikey``, ``accesskey``,
    ``privatekey``, ``password``, ``credential`` or ``credentials`` (``accessToken``,
    ``refresh_token``, ``sessionToken``, ``clientSecret``, ``X-API-Key``...), and not with
    ``pagetoken`` or ``continuationtoken``."""
    raw = name.encode("latin-1", "replace") if isinstance(name, str) else name
    flat = raw.lower().replace(b"_", b"").replace(b"-", b"")
    return flat.endswith((b"token", b"secret", b"apikey", b"accesskey", b"privatekey",
                          b"password", b"credential", b"credentials")) and not flat.endswith(
        NOT_CREDENTIALS)


class Table:
    """The values to replace going one way, grown as the vault learns them (never rebuilt: a
    new token costs the same after the thousandth as after the first): JWT-shaped ones (found
    where a JWT starts, then looked up by their lengths) and others (each found by itself: the
    key, a token of another shape)."""

    def __init__(self) -> None:
        self.replacements: dict[bytes, bytes] = {}
        self.jwt_lengths: tuple[int, ...] = ()  # longest first
        self.others: tuple[bytes, ...] = ()  # longest first
        self.longest = 0
        self.chars = b""  # every byte any value holds

    def add(self, word: bytes, replacement: bytes) -> None:
        self.replacements[word] = replacement
        if JWT_WHOLE.match(word):
            if len(word) not in self.jwt_lengths:
                self.jwt_lengths = tuple(sorted((*self.jwt_lengths, len(word)), reverse=True))
        else:
            others = list(self.others)
            bisect.insort(others, word, key=lambda w: -len(w))
            self.others = tuple(others)
        self.longest = max(self.longest, len(word))
        if word.strip(self.chars):
            self.chars = bytes(sorted(set(self.chars) | set(word)))


class Vault:
    """The real values and their placeholders (thread-safe; the relay's only)."""

    def __init__(self, key: str, placeholder: str) -> None:
        if len(key) != len(placeholder):
            raise ValueError("a placeholder must be as long as its value")
        self._lock = threading.Lock()
        self._real: dict[bytes, bytes] = {}
        self._tables = {UP: Table(), DOWN: Table()}
        self.key = key
        self.placeholder = placeholder
        self._add(key.encode(), placeholder.encode())

    def _add(self, real: bytes, placeholder: bytes) -> None:
        self._real[real] = placeholder
        self._tables[UP].add(placeholder, real)
        self._tables[DOWN].add(real, placeholder)

    def mask(self, real: str) -> str:
        """The placeholder of the token ``real`` (made on first sight)."""
        raw = real.encode("utf-8")
        with self._lock:
            found = self._real.get(raw)
            if found is not None:
                return found.decode()
            placeholder = jwt_placeholder(real) if looks_like_jwt(real) else random_like(real)
            self._add(raw, placeholder.encode())
            return placeholder

    def holds(self, data: bytes) -> bool:
        """Whether ``data`` holds a real value (any of them)."""
        with self._lock:
            return any(real in data for real in self._real)

    def table(self, direction: str) -> Table:
        """What to replace going ``direction``: placeholders going up, real values coming
        down (and any JWT the service hands back: :class:`Rewriter`)."""
        return self._tables[direction]

    def swap_text(self, data: bytes, direction: str) -> bytes:
        """``data`` (a whole value: a header, a small body) with every value swapped (the same
        object when there is none)."""
        if b"eyJ" not in data and not any(word in data for word in self.table(direction).others):
            return data
        rewriter = Rewriter(self, direction)
        return rewriter.feed(data) + rewriter.end()

    def swap_headers(self, headers: Iterable[tuple[bytes, bytes]],
                     direction: str) -> list[tuple[bytes, bytes]]:
        """Header values swapped; coming down, a header named as a credential (``x-auth-token``)
        has its value (after a ``Bearer``) masked, and a ``set-cookie`` its cookie's value."""
        out = []
        for name, value in headers:
            if direction == DOWN:
                self._mask_header(name, value)
            out.append((name, self.swap_text(value, direction)))
        return out

    def _mask_header(self, name: bytes, value: bytes) -> None:
        lowered = name.lower()
        if lowered == b"set-cookie":
            found = value.split(b";", 1)[0].partition(b"=")[2].strip().strip(b'"')
        elif credential_field(lowered) or lowered in (b"authorization", b"x-api-key"):
            found = value.strip()
            if found[:7].lower() == b"bearer ":
                found = found[7:].strip()
        else:
            return
        if 8 <= len(found) <= MAX_VALUE and not found.strip(VALUE_CHARS):
            self.mask(found.decode("ascii"))


CREDENTIAL_PATHS = (b"/auth/exchange_user_api_key",)
"""Where a request's body carries credentials (the key exchange). No other body is
swapped: a placeholder the agent puts in a prompt reaches the model as a placeholder, so the
model cannot be asked to hand the real key back in a form the relay would not know."""
JSON_TYPES = (b"json", b"event-stream")
"""An answer whose ``Content-Type`` names one of these is read for credential fields."""


def request_body(vault: Vault, path: bytes) -> Rewriter:
    """The rewriter of a request's body to ``path`` (active on :data:`CREDENTIAL_PATHS`)."""
    return Rewriter(vault, UP, active=path.split(b"?", 1)[0] in CREDENTIAL_PATHS)


def response_body(vault: Vault, headers: Iterable[tuple[bytes, bytes]]) -> Rewriter:
    """The rewriter of an answer's body (its credential fields read when it is JSON; what it
    holds let go at each message's end in an enveloped stream)."""
    kind = next((value.lower() for name, value in headers if name.lower() == b"content-type"),
                b"")
    fields = any(word in kind for word in JSON_TYPES)
    if kind.startswith(ENVELOPED_TYPES):
        return EnvelopedRewriter(vault, DOWN, fields=fields)
    return Rewriter(vault, DOWN, fields=fields)


def _proto_length(data: bytes, start: int) -> int | None:
    """The length of a protobuf string field ending just before ``start`` (its varint), if
    the bytes there read as one of at most two bytes."""
    if start >= 1 and data[start - 1] < 0x80:
        if start >= 2 and data[start - 2] >= 0x80:
            return (data[start - 2] & 0x7F) | (data[start - 1] << 7)
        return data[start - 1]
    return None


def _trailing(buffer: bytes, chars: bytes, limit: int) -> int:
    """How many of the last (at most ``limit``) bytes of ``buffer`` are ``chars`` (looking at
    64 bytes first: only a long run costs more)."""
    size = 64
    while True:
        size = min(size, limit, len(buffer))
        tail = buffer[len(buffer) - size:]
        run = len(tail) - len(tail.rstrip(chars))
        if run < size or size >= min(limit, len(buffer)):
            return run
        size *= 16


class Rewriter:
    """One body in one direction, rewritten as it streams (see the module docstring); an
    inactive one passes the bytes as they are. ``fields``: a JSON answer, whose credential
    fields are masked whatever their values' shape."""

    def __init__(self, vault: Vault, direction: str, *, active: bool = True,
                 fields: bool = False) -> None:
        self.vault = vault
        self.direction = direction
        self.active = active
        self.fields = fields and direction == DOWN
        self._held = b""
        self.swapped = 0

    def feed(self, data: bytes) -> bytes:
        if not self.active:
            return data
        if self._held:
            buffer = self._held + data
        elif not data:
            return b""
        else:
            buffer = data
        out, cut = self._replace(buffer, self._hold_from(buffer))
        self._held = buffer[cut:] if cut < len(buffer) else b""
        return out

    def end(self) -> bytes:
        if not self.active:
            return b""
        buffer, self._held = self._held, b""
        out, _ = self._replace(buffer, len(buffer))
        return out

    def _hold_from(self, buffer: bytes) -> int:
        """Where what may be an unfinished value starts (``len(buffer)`` when nothing may)."""
        size = len(buffer)
        table = self.vault.table(self.direction)
        start = size - _trailing(buffer, table.chars, table.longest - 1)
        if self.direction == DOWN:  # a JWT the vault does not know yet, unfinished
            run = _trailing(buffer, TOKEN_CHARS, MAX_HOLD)
            if run:
                begin, end = size - run, size
                for _ in range(3):  # a JWT has two dots: it starts after the third last
                    end = buffer.rfind(b".", begin, end)
                    if end < 0:
                        break
                else:
                    begin = end + 1
                found = buffer.find(b"eyJ", begin, size)
                if found >= 0:
                    start = min(start, found)
                elif buffer.endswith(b"ey"):
                    start = min(start, size - 2)
                elif buffer.endswith(b"e"):
                    start = min(start, size - 1)
        if self.fields:
            start = min(start, self._field_from(buffer))
        return start

    @staticmethod
    def _field_from(buffer: bytes) -> int:
        """Where an unfinished credential field starts (a JSON answer): one of the last three
        quotes (a field's name opens, closes, its value opens)."""
        size = len(buffer)
        quotes: list[int] = []
        at = size
        floor = max(0, size - MAX_FIELD)
        while len(quotes) < 3:
            at = buffer.rfind(b'"', floor, at)
            if at < 0:
                break
            quotes.append(at)
        for quote in reversed(quotes):  # the earliest first
            if _FIELD_START.fullmatch(buffer, quote):
                return quote
        return size

    def _matches(self, buffer: bytes, table: Table) -> list[Match]:
        """Every value in ``buffer``: (start, end, its replacement); None for a value the
        vault does not know yet (coming down: masked when it is let go)."""
        found: list[Match] = []
        for word in table.others:
            at = buffer.find(word)
            while at >= 0:
                found.append((at, at + len(word), table.replacements[word], at))
                at = buffer.find(word, at + 1)
        candidate = _JWT_START.search(buffer)
        while candidate is not None:
            at = candidate.start()
            match = _JWT.match(buffer, at)
            if match is not None:
                found.append(self._jwt(buffer, at, match.end(), table))
            candidate = _JWT_START.search(buffer, at + 1)
        if self.fields:
            for field in _FIELD.finditer(buffer):
                if credential_field(field.group(1)):
                    start, end = field.span(2)
                    found.append((start, end, table.replacements.get(field.group(2)),
                                  field.start()))
        found.sort(key=lambda match: (match[0], -match[1]))
        return found

    def _jwt(self, buffer: bytes, start: int, end: int, table: Table) -> Match:
        for length in table.jwt_lengths:  # a known one, maybe followed by token bytes
            if length <= end - start:
                replacement = table.replacements.get(buffer[start:start + length])
                if replacement is not None:
                    return start, start + length, replacement, start
        own = _proto_length(buffer, start)  # a protobuf string's own length
        if own is not None and end - start > own >= 20 and JWT_WHOLE.match(
                buffer[start:start + own]):
            end = start + own
        return start, end, None, start

    def _replace(self, buffer: bytes, cut: int) -> tuple[bytes, int]:
        """Everything before ``cut`` with its values swapped (a match that runs past ``cut``
        waits whole, a credential field from its name: the cut moves to where it starts)."""
        pieces: list[bytes] = []
        done = 0
        for start, end, known, anchor in self._matches(buffer,
                                                       self.vault.table(self.direction)):
            if start < done or anchor >= cut:
                continue
            if end > cut:
                cut = max(anchor, done)
                break
            if known is None and self.direction != DOWN:
                continue  # an unknown JWT going up is the agent's own: left as it is
            replacement = known if known is not None else self.vault.mask(
                buffer[start:end].decode("ascii")).encode()
            pieces.append(buffer[done:start])
            pieces.append(replacement)
            self.swapped += 1
            done = end
        if not pieces:  # nothing replaced: the same bytes, or the part before the cut
            return (buffer if cut >= len(buffer) else buffer[:cut]), cut
        pieces.append(buffer[done:cut])
        return b"".join(pieces), cut



class EnvelopedRewriter(Rewriter):
    """A :class:`Rewriter` of a stream of length-prefixed messages (:data:`ENVELOPED_TYPES`):
    what it holds back is let go, replaced, at the end of each message, where no value can go
    on (a credential is inside one message; placeholders keep every length). Without it, a
    message ending in value characters waited for the stream's next frame: a service that
    pauses after such a message (a tool call the CLI must answer first) would stall the CLI."""

    def __init__(self, vault: Vault, direction: str, *, active: bool = True,
                 fields: bool = False) -> None:
        super().__init__(vault, direction, active=active, fields=fields)
        self._ends = MessageEnds()

    def feed(self, data: bytes) -> bytes:
        if not self.active:
            return data
        pieces: list[bytes] = []
        start = 0
        for cut in self._ends.cuts(data):
            pieces += [super().feed(data[start:cut]), super().end()]
            start = cut
        pieces.append(super().feed(data[start:]))
        return b"".join(pieces)
