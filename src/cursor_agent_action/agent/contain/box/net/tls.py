"""TLS through the relay until its handshake is decided: every ClientHello the agent sends is
checked, not only the first.

A TLS 1.3 server that cannot use the client's key share answers a HelloRetryRequest, and the
client sends a *second* ClientHello, which may name another host: an SNI-routing far end (a
CDN, a proxy) would serve that host. So :class:`Handshake` follows both directions as TLS
records: the agent's handshake messages are read (and every ClientHello handed to the check)
for as long as they are plaintext, and the far end's first handshake message (ServerHello, or
a HelloRetryRequest and then the ServerHello) tells when that stops. The agent's side becomes
opaque when it changes to encrypted records after a real ServerHello (its
``change_cipher_spec`` or first encrypted record); the whole connection becomes opaque at the
far end's first encrypted application record. Until then the agent's bytes must be TLS
records: anything else is refused, as is a far end whose first answer is no ServerHello.
"""

from __future__ import annotations

from collections.abc import Callable

from cursor_agent_action.agent.contain.box.net import peek

HANDSHAKE, CHANGE_CIPHER_SPEC, ALERT, APPLICATION_DATA = 0x16, 0x14, 0x15, 0x17
MAX_RECORD = 16384 + 2048
MAX_HELD = 256 * 1024
"""At most this much of the agent's bytes is held back while a handshake message is read."""
MAX_HELLOS = 2  # a ClientHello, and one more after a HelloRetryRequest
HELLO_RETRY = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")
"""A ServerHello with this random is a HelloRetryRequest (RFC 8446, 4.1.3)."""
UNKNOWN, RETRY, HELLO, OTHER = "unknown", "retry", "hello", "other"
"""What the far end answered so far: nothing yet, a HelloRetryRequest, a ServerHello, or
something that is not a TLS server's answer."""
Check = Callable[[peek.Claim], None]


class BadTls(Exception):
    """The agent's bytes are not the TLS a server would read (the connection is refused)."""


class NoServer(BadTls):
    """The far end did not answer as a TLS server: the agent's side ends (not a refusal)."""


def _record(buffer: bytearray) -> tuple[int, int] | None:
    """The type and whole length of the record at the start of ``buffer`` (None: incomplete);
    raises :class:`BadTls` on a header no TLS reader takes."""
    if len(buffer) < 5:
        return None
    kind, major, length = buffer[0], buffer[1], int.from_bytes(buffer[3:5], "big")
    if kind not in (HANDSHAKE, CHANGE_CIPHER_SPEC, ALERT, APPLICATION_DATA) or major != 3:
        raise BadTls("bytes that are not a TLS record")
    if length > MAX_RECORD or (length == 0 and kind == HANDSHAKE):
        raise BadTls("a TLS record of a bad length")
    return (kind, 5 + length) if len(buffer) >= 5 + length else None


class Handshake:
    """One TLS connection's handshake as the relay follows it (see the module docstring):
    :meth:`up` takes the agent's bytes and returns those that may go on, :meth:`down` watches
    the far end's."""

    def __init__(self, check: Check) -> None:
        self._check = check
        self.answer = UNKNOWN
        self.opaque = False  # the far end sent an encrypted application record
        self.hellos = 0
        self._agent_encrypted = False
        self._up = bytearray()  # the agent's bytes not yet passed on
        self._read = 0  # how many of them are records already read
        self._ready = 0  # how many of them may go on (whole handshake messages)
        self._messages = bytearray()  # the agent's handshake bytes not yet a whole message
        self._down = bytearray()
        self._answers = bytearray()  # the far end's handshake bytes not yet judged

    @property
    def passing(self) -> bool:
        """Nothing more to read: the agent's bytes are copied as they come."""
        return self._agent_encrypted or self.opaque

    def waiting(self) -> bool:
        """The agent's next record can be judged only once the far end answers (a
        change_cipher_spec or encrypted record before the ServerHello is known)."""
        if self.passing or self._messages or len(self._up) <= self._read:
            return False
        if self._up[self._read] not in (CHANGE_CIPHER_SPEC, APPLICATION_DATA):
            return False
        return self.answer == UNKNOWN or (self.answer == RETRY and self.hellos > 1)

    def up(self, data: bytes) -> bytes:
        """The agent's ``data``: what may go on now (the rest is held until its handshake
        message is whole, or until the far end answers). Raises :class:`BadTls`, or what
        the check raises."""
        self._up += data
        if self.answer == OTHER and len(self._up) > self._read and not self.passing:
            raise NoServer("the far end did not answer as a TLS server")
        while not self.passing and not self.waiting():
            found = _record(self._up[self._read :])
            if found is None:
                break
            kind, size = found
            start = self._read
            self._read += size
            if self.hellos == 0 and kind != HANDSHAKE:
                raise BadTls("a TLS connection that does not start with a ClientHello")
            if kind == HANDSHAKE:
                self._messages += self._up[start + 5 : start + size]
                self._read_messages()
            elif kind in (CHANGE_CIPHER_SPEC, APPLICATION_DATA):
                if self.answer == OTHER:
                    raise NoServer("the far end did not answer as a TLS server")
                if self._messages:
                    raise BadTls("a record inside a handshake message")
                # A compatibility change_cipher_spec or early data before the retry's hello
                # is skipped; after a real ServerHello the agent's side is encrypted.
                if not (self.answer == RETRY and self.hellos == 1):
                    self._agent_encrypted = True
            if not self._messages:
                self._ready = self._read
        if self.passing:
            self._ready = len(self._up)
        if len(self._up) - self._ready > MAX_HELD:
            raise BadTls("a TLS handshake message over 256 KiB")
        out = bytes(self._up[: self._ready])
        del self._up[: self._ready]
        self._read -= self._ready
        self._ready = 0
        return out

    def _read_messages(self) -> None:
        while len(self._messages) >= 4:
            kind = self._messages[0]
            need = 4 + int.from_bytes(self._messages[1:4], "big")
            if kind == 1 and need > peek.MAX_PEEK:
                raise BadTls("a ClientHello over 64 KiB")
            if len(self._messages) < need:
                return
            body = bytes(self._messages[4:need])
            del self._messages[:need]
            if kind == 1:
                self.hellos += 1
                if self.hellos > MAX_HELLOS:
                    raise BadTls("a third ClientHello on one connection")
                claim = peek.hello_claim(body)
                if claim.status != peek.DONE:
                    raise BadTls("a malformed TLS ClientHello")
                self._check(claim)
            elif self.hellos == 0:
                raise BadTls("a TLS handshake that does not start with a ClientHello")

    def down(self, data: bytes) -> bool:
        """The far end's ``data`` (it goes on unchanged); True when the agent's held bytes
        may be judged again (the answer is known, or the connection is opaque)."""
        if self.opaque:
            return False
        self._down += data
        before = self.answer
        try:
            while (found := _record(self._down)) is not None:
                kind, size = found
                payload = bytes(self._down[5:size])
                del self._down[:size]
                if kind == APPLICATION_DATA:
                    self.opaque = self.answer == HELLO
                    self.answer = HELLO if self.opaque else OTHER
                elif kind == HANDSHAKE and self.answer in (UNKNOWN, RETRY):
                    self._answers += payload
                    self._read_answer()
                elif kind == ALERT and self.answer in (UNKNOWN, RETRY):
                    self.answer = OTHER
                if self.opaque or self.answer == OTHER:
                    break
        except BadTls:  # not a TLS server's records: before its hello, no TLS server
            self.answer = OTHER if self.answer in (UNKNOWN, RETRY) else self.answer
            self.opaque = self.answer == HELLO
        if self.opaque or self.answer == OTHER or len(self._down) > MAX_HELD:
            self._down.clear()
            self._answers.clear()
        return self.answer != before or self.opaque

    def ended(self) -> None:
        """The far end's side ended: an answer not yet known never comes."""
        if self.answer in (UNKNOWN, RETRY) and not self.opaque:
            self.answer = OTHER

    def _read_answer(self) -> None:
        """The far end's first handshake message (and the one after a retry)."""
        while len(self._answers) >= 4:
            if self._answers[0] != 2:  # not a ServerHello
                self.answer = OTHER
                return
            need = 4 + int.from_bytes(self._answers[1:4], "big")
            if len(self._answers) < need:
                return
            retry = self._answers[6:38] == HELLO_RETRY
            del self._answers[:need]
            if not retry or self.answer == RETRY:
                self.answer = HELLO if not retry else OTHER  # a second retry: no TLS server
                self._answers.clear()
                return
            self.answer = RETRY
