"""Placeholders: per-run random values shaped like the credentials they stand for (the same
length and alphabet), which the box holds instead of them (:mod:`.swap` swaps them).

- the key's (:func:`key_placeholder`): its kind (``crsr_``) kept, the rest random;
- a JWT's (:func:`jwt_placeholder`): its header and payload kept (clients read ``exp``), a
  random signature of the same length;
- any other token's (:func:`random_like`): random in its alphabet (hex, alphanumeric, URL-safe
  or standard base64, or its own characters), base64 padding kept.

Random characters come from ``secrets.token_bytes`` mapped onto the alphabet without bias.
"""

from __future__ import annotations

import functools
import re
import secrets
import string

URLSAFE = string.ascii_letters + string.digits + "-_"
BASE64 = string.ascii_letters + string.digits + "+/"
JWT_WHOLE = re.compile(rb"eyJ[A-Za-z0-9_-]{2,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{16,}\Z")
"""A whole JWT: a header and a payload (JSON objects, ``eyJ``), a signature."""


def _alphabet(text: str) -> str:
    """The smallest usual alphabet ``text`` is written in (hex, alphanumeric, URL-safe
    base64), or its own characters."""
    for alphabet in (string.digits + "abcdef", string.digits + "ABCDEF",
                     string.ascii_letters + string.digits, URLSAFE, BASE64):
        if text and set(text) <= set(alphabet):
            return alphabet
    return "".join(sorted(set(text))) or URLSAFE


@functools.lru_cache(maxsize=64)
def _mapping(alphabet: str) -> tuple[bytes, bytes]:
    """A byte translation onto ``alphabet`` (ASCII) without bias: each byte below the largest
    multiple of its size maps to one character, the bytes above it are dropped."""
    size = len(alphabet)
    limit = 256 - 256 % size
    table = bytes(ord(alphabet[b % size]) if b < limit else 0 for b in range(256))
    return table, bytes(range(limit, 256))


def _random_text(alphabet: str, count: int) -> str:
    if not alphabet.isascii():
        return "".join(secrets.choice(alphabet) for _ in range(count))
    table, dropped = _mapping(alphabet)
    found = b""
    while len(found) < count:
        found += secrets.token_bytes(count + 16).translate(table, dropped)
    return found[:count].decode("ascii")


def random_like(text: str) -> str:
    """A random string of ``text``'s length and alphabet (never ``text`` itself); base64's
    padding (``=`` at the end) kept."""
    body = text.rstrip("=") or text
    padding = text[len(body):]
    alphabet = _alphabet(body)
    while True:
        found = _random_text(alphabet, len(body)) + padding
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
    return JWT_WHOLE.match(token.encode("ascii", "replace")) is not None
