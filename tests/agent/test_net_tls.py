"""TLS followed until its handshake is decided (:mod:`.tls`): real handshakes of Python's ssl
(TLS 1.2 and 1.3) pass and become opaque; a second ClientHello (after a HelloRetryRequest, or
pipelined before it), one with encrypted_client_hello, and bytes that are not TLS records
are refused."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.box.net import peek, tls
from cursor_agent_action.agent.contain.box.net.checks import Checks, Refused
from cursor_agent_action.agent.contain.box.net.ledger import Ledger
from cursor_agent_action.agent.contain.box.net.policy import build_policy
from tests.support.netbox import CCS, hello, hello_body, message, record, self_signed, server_hello

ALLOWED = "ok.example"
WEB = "caa-net-test-web.example"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"), WEB)


def check(claim: peek.Claim) -> None:
    """The relay's check for a connection dialed to ALLOWED."""
    policy = build_policy([ALLOWED])
    Checks(policy, Ledger(policy)).check_claim(ALLOWED, claim)




def test_a_second_hello_after_a_retry_naming_another_host_is_refused() -> None:
    """The first finding: the retry's hello was copied unchecked."""
    handshake = tls.Handshake(check)
    assert handshake.up(hello(ALLOWED)) == hello(ALLOWED)
    assert handshake.down(server_hello(retry=True))
    assert handshake.answer == tls.RETRY
    assert handshake.up(CCS) == CCS  # the compatibility change_cipher_spec is no end
    with pytest.raises(Refused, match=r"evil\.example"):
        handshake.up(hello("evil.example"))


def test_a_second_hello_sent_before_the_answer_is_checked_too() -> None:
    handshake = tls.Handshake(check)
    with pytest.raises(Refused, match=r"evil\.example"):
        handshake.up(hello(ALLOWED) + hello("evil.example"))


def test_a_change_of_cipher_before_the_answer_waits_for_it() -> None:
    """Pipelined: the hello, a change_cipher_spec and a second hello before the far end's
    answer. The change is judged only once the answer is known: a retry makes it the
    compatibility one, so the hello after it is read (and refused)."""
    handshake = tls.Handshake(check)
    assert handshake.up(hello(ALLOWED) + CCS + hello("evil.example")) == hello(ALLOWED)
    assert handshake.waiting()
    handshake.down(server_hello(retry=True))
    assert not handshake.waiting()
    with pytest.raises(Refused, match=r"evil\.example"):
        handshake.up(b"")


def test_a_retry_hello_for_the_same_host_passes_and_a_third_is_refused() -> None:
    handshake = tls.Handshake(check)
    handshake.up(hello(ALLOWED))
    handshake.down(server_hello(retry=True))
    assert handshake.up(CCS + hello(ALLOWED)) == CCS + hello(ALLOWED)
    with pytest.raises(tls.BadTls, match="third"):
        handshake.up(hello(ALLOWED))


def test_after_the_retry_the_change_of_cipher_waits_for_the_real_server_hello() -> None:
    handshake = tls.Handshake(check)
    handshake.up(hello(ALLOWED))
    handshake.down(server_hello(retry=True))
    handshake.up(CCS + hello(ALLOWED))
    finished = record(tls.APPLICATION_DATA, b"x" * 40)
    assert handshake.up(finished) == b""
    assert handshake.waiting()
    handshake.down(server_hello(retry=False))
    assert handshake.up(b"") == finished
    assert handshake.passing


def test_encrypted_client_hello_is_refused_and_says_why() -> None:
    claim = peek.hello_claim(hello_body(ALLOWED, ech=True))
    assert claim.ech
    assert claim.name == ALLOWED
    with pytest.raises(Refused, match="encrypted_client_hello"):
        check(claim)
    with pytest.raises(Refused, match="encrypted_client_hello"):
        tls.Handshake(check).up(hello(ALLOWED) + hello(ALLOWED, ech=True))


@pytest.mark.parametrize("after", [
    b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    b"\x18\x03\x03\x00\x01x",  # a record type no TLS reader takes
    b"\x16\x03\x03\x00\x00",  # an empty handshake record
])
def test_bytes_that_are_not_tls_records_are_refused_before_the_handshake_ends(
        after: bytes) -> None:
    handshake = tls.Handshake(check)
    handshake.up(hello(ALLOWED))
    with pytest.raises(tls.BadTls):
        handshake.up(after)


def test_a_hello_in_pieces_is_held_until_whole() -> None:
    whole = hello(ALLOWED)
    body = whole[5:]
    two = record(tls.HANDSHAKE, body[:20]) + record(tls.HANDSHAKE, body[20:])
    handshake = tls.Handshake(check)
    assert handshake.up(two[:30]) == b""
    assert handshake.up(two[30:]) == two
    evil = message(1, hello_body("evil.example"))
    handshake = tls.Handshake(check)
    assert handshake.up(record(tls.HANDSHAKE, evil[:20])) == b""  # nothing of it goes on
    with pytest.raises(Refused):
        handshake.up(record(tls.HANDSHAKE, evil[20:]))


def test_a_far_end_that_answers_no_server_hello_ends_the_agents_side() -> None:
    handshake = tls.Handshake(check)
    handshake.up(hello(ALLOWED))
    handshake.down(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    assert handshake.answer == tls.OTHER
    with pytest.raises(tls.NoServer):
        handshake.up(CCS)
    # Nor a handshake record carrying a request: nothing more goes to a far end that is no
    # TLS server (a lenient HTTP reader might skip the hello's bytes and read on).
    smuggled = b"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"
    handshake = tls.Handshake(check)
    handshake.up(hello(ALLOWED))
    handshake.down(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with pytest.raises(tls.NoServer):
        handshake.up(record(tls.HANDSHAKE, message(16, smuggled)))


Side = tuple[ssl.SSLObject, ssl.MemoryBIO, ssl.MemoryBIO]


def _pair(cert: Path, key: Path, version: ssl.TLSVersion) -> tuple[Side, Side]:
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    server_context.maximum_version = version
    client_context = ssl.create_default_context(cafile=str(cert))
    objects: list[Side] = []
    for context, side in ((client_context, False), (server_context, True)):
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = context.wrap_bio(incoming, outgoing, server_side=side,
                               server_hostname=None if side else WEB)
        objects.append((obj, incoming, outgoing))
    return objects[0], objects[1]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_a_real_handshake_passes_whole_and_then_the_connection_is_opaque(
        tls_files: tuple[Path, Path], version: ssl.TLSVersion) -> None:
    def allow_web(claim: peek.Claim) -> None:
        assert claim.name == WEB

    (client, c_in, c_out), (server, s_in, s_out) = _pair(*tls_files, version)
    handshake = tls.Handshake(allow_web)
    pinged = False
    for _ in range(10):
        for obj in (client, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                obj.do_handshake()
        with contextlib.suppress(ssl.SSLWantReadError):
            client.write(b"ping")
        s_in.write(handshake.up(c_out.read()))
        answer = s_out.read()
        handshake.down(answer)
        c_in.write(answer)
        with contextlib.suppress(ssl.SSLWantReadError):
            if server.read(4) == b"ping":
                pinged = True
                server.write(b"pong")
                break
    handshake.down(s_out.read())
    assert pinged
    assert handshake.opaque or handshake.passing
    assert handshake.hellos == 1
