"""The credentials the relay holds for the agent, and their swapping in what goes to and comes
from Cursor's service.

The box holds placeholders only: a key-shaped one for ``CURSOR_API_KEY`` (same length, same
prefix, same alphabet: :func:`key_placeholder`), and one for each token the service hands back
(:meth:`Vault.mask`: a JWT keeps its header and payload, which clients read for ``exp``, and
gets a random signature of the same length; another token a random value of its shape).
Towards Cursor each placeholder becomes its real value again; back from Cursor each real value
becomes its placeholder. Every replacement keeps the length, so a ``Content-Length``, an HTTP/2
frame's length and a Connect envelope's length stay right while bodies stream.

A :class:`Rewriter` rewrites one body as it streams: it holds back only the run of token
characters at the end of what it has (a value may go on in the next chunk or frame; at most
:data:`MAX_HOLD` bytes), so a value split across frames or chunks is still swapped.
"""

from __future__ import annotations

import re
import secrets
import string
import threading
from dataclasses import dataclass

TOKEN_CHARS = (string.ascii_letters + string.digits + "-_.").encode()
"""What keys, JWTs and their placeholders are made of: a value ends where another byte is."""
MAX_HOLD = 16 * 1024
"""A run of token characters longer than this is let go (no token of Cursor's is as long)."""
URLSAFE = string.ascii_letters + string.digits + "-_"
_JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{16,}")
_JWT_WHOLE = re.compile(rb"eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{16,}\Z")
UP, DOWN = "up", "down"
"""Values are found with ``bytes.find`` (the key, other tokens; where a JWT starts), never by
a regular expression that grows with every token."""


def _alphabet(text: str) -> str:
    """The smallest usual alphabet ``text`` is written in (hex, alphanumeric, URL-safe
    base64), or its own characters."""
    for alphabet in (string.digits + "abcdef", string.digits + "ABCDEF",
                     string.ascii_letters + string.digits, URLSAFE):
        if text and set(text) <= set(alphabet):
            return alphabet
    return "".join(sorted(set(text))) or URLSAFE


def random_like(text: str) -> str:
    """A random string of ``text``'s length and alphabet (never ``text`` itself)."""
    alphabet = _alphabet(text)
    while True:
        found = "".join(secrets.choice(alphabet) for _ in text)
        if found != text or len(alphabet) < 2:
            return found


_PREFIX = re.compile(r"^[A-Za-z]{1,12}[_-](?:[A-Za-z]{1,12}[_-])?")
"""A key's kind, kept in its placeholder: ``crsr_`` (and ``key_test_`` in tests)."""


def key_placeholder(key: str) -> str:
    """A per-run placeholder shaped like ``key``: its prefix of letters (``crsr_``) kept, the
    rest random in the same alphabet, the same length."""
    found = _PREFIX.match(key)
    prefix = found.group() if found else ""
    rest = key[len(prefix):]
    if not rest:
        return random_like(key)
    return prefix + random_like(rest)


def jwt_placeholder(token: str) -> str:
    """A JWT's header and payload, and a random signature of its length."""
    header, payload, signature = token.split(".", 2)
    return f"{header}.{payload}.{random_like(signature)}"


def looks_like_jwt(token: str) -> bool:
    return _JWT_WHOLE.match(token.encode("ascii", "replace")) is not None


@dataclass(frozen=True)
class Table:
    """The values to replace going one way: JWT-shaped ones (found where a JWT starts, then
    looked up) and others (each found by itself: the key, a token of another shape)."""

    replacements: dict[bytes, bytes]
    jwt_lengths: tuple[int, ...]  # longest first
    others: tuple[bytes, ...]


class Vault:
    """The real values and their placeholders (thread-safe; the relay's only)."""

    def __init__(self, key: str, placeholder: str) -> None:
        if len(key) != len(placeholder):
            raise ValueError("a placeholder must be as long as its value")
        self._lock = threading.Lock()
        self._real: dict[bytes, bytes] = {}
        self._tables: dict[str, Table] = {}
        self.key = key
        self.placeholder = placeholder
        self._add(key.encode(), placeholder.encode())

    def _add(self, real: bytes, placeholder: bytes) -> None:
        self._real[real] = placeholder
        self._tables.clear()

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
        with self._lock:
            found = self._tables.get(direction)
            if found is not None:
                return found
            pairs = self._real.items()
            replacements = ({placeholder: real for real, placeholder in pairs}
                            if direction == UP else dict(pairs))
            jwts = {len(word) for word in replacements if _JWT_WHOLE.match(word)}
            others = tuple(sorted((word for word in replacements if not _JWT_WHOLE.match(word)),
                                  key=len, reverse=True))
            found = Table(replacements, tuple(sorted(jwts, reverse=True)), others)
            self._tables[direction] = found
            return found

    def swap_text(self, data: bytes, direction: str) -> bytes:
        """``data`` (a whole value: a header, a small body) with every value swapped."""
        rewriter = Rewriter(self, direction)
        return rewriter.feed(data) + rewriter.end()


CREDENTIAL_PATHS = (b"/auth/exchange_user_api_key",)
"""Where a request's body carries credentials (the key exchange). No other body is
swapped: a placeholder the agent puts in a prompt reaches the model as a placeholder, so the
model cannot be asked to hand the real key back in a form the relay would not know."""


def request_body(vault: Vault, path: bytes) -> Rewriter:
    """The rewriter of a request's body to ``path`` (active on :data:`CREDENTIAL_PATHS`)."""
    return Rewriter(vault, UP, active=path.split(b"?", 1)[0] in CREDENTIAL_PATHS)


def _proto_length(data: bytes, start: int) -> int | None:
    """The length of a protobuf string field ending just before ``start`` (its varint), if
    the bytes there read as one of at most two bytes."""
    if start >= 1 and data[start - 1] < 0x80:
        if start >= 2 and data[start - 2] >= 0x80:
            return (data[start - 2] & 0x7F) | (data[start - 1] << 7)
        return data[start - 1]
    return None


class Rewriter:
    """One body in one direction, rewritten as it streams (see the module docstring); an
    inactive one passes the bytes as they are."""

    def __init__(self, vault: Vault, direction: str, *, active: bool = True) -> None:
        self.vault = vault
        self.direction = direction
        self.active = active
        self._held = bytearray()
        self.swapped = 0

    def feed(self, data: bytes) -> bytes:
        if not self.active:
            return data
        if not self._held and not data:
            return b""
        buffer = bytes(self._held) + data if self._held else data
        run = len(buffer) - len(buffer.rstrip(TOKEN_CHARS))
        cut = len(buffer) - run if run <= MAX_HOLD else len(buffer)
        out, cut = self._replace(buffer, cut)
        self._held = bytearray(buffer[cut:])
        return out

    def end(self) -> bytes:
        if not self.active:
            return b""
        buffer, self._held = bytes(self._held), bytearray()
        out, _ = self._replace(buffer, len(buffer))
        return out

    def _matches(self, buffer: bytes, table: Table) -> list[tuple[int, int, bytes | None]]:
        """Every value in ``buffer``: (start, end, its replacement); None for a JWT the
        vault does not know yet (coming down: masked when it is let go)."""
        found: list[tuple[int, int, bytes | None]] = []
        for word in table.others:
            at = buffer.find(word)
            while at >= 0:
                found.append((at, at + len(word), table.replacements[word]))
                at = buffer.find(word, at + 1)
        at = buffer.find(b"eyJ")
        while at >= 0:
            match = _JWT.match(buffer, at)
            if match is not None:
                found.append(self._jwt(buffer, at, match.end(), table))
            at = buffer.find(b"eyJ", at + 1)
        found.sort()
        return found

    def _jwt(self, buffer: bytes, start: int, end: int,
             table: Table) -> tuple[int, int, bytes | None]:
        for length in table.jwt_lengths:  # a known one, maybe followed by token bytes
            if length <= end - start:
                replacement = table.replacements.get(buffer[start:start + length])
                if replacement is not None:
                    return start, start + length, replacement
        own = _proto_length(buffer, start)  # a protobuf string's own length
        if own is not None and end - start > own >= 20 and _JWT_WHOLE.match(
                buffer[start:start + own]):
            end = start + own
        return start, end, None

    def _replace(self, buffer: bytes, cut: int) -> tuple[bytes, int]:
        """Everything before ``cut`` with its values swapped (a match that runs past ``cut``
        waits, and the cut moves to its start)."""
        table = self.vault.table(self.direction)
        pieces: list[bytes] = []
        done = 0
        for start, end, known in self._matches(buffer, table):
            if start < done:
                continue
            if start >= cut:
                break
            if end > cut:
                cut = start
                break
            if known is None and self.direction != DOWN:
                continue  # an unknown JWT going up is the agent's own: left as it is
            replacement = known if known is not None else self.vault.mask(
                buffer[start:end].decode("ascii")).encode()
            pieces.append(buffer[done:start])
            pieces.append(replacement)
            self.swapped += 1
            done = end
        pieces.append(buffer[done:cut])
        return b"".join(pieces), cut
