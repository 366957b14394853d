"""The relay's credential swapping (agent/contain/box/net/swap.py) and its per-run CA
(ca.py): placeholders of the right shape, values swapped however the body is cut, nothing real
left coming down, the CA constrained to Cursor's names."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.agent.contain.box.net.ca import RunCa, permitted_domains
from cursor_agent_action.agent.contain.box.net.credentials import Tally
from cursor_agent_action.agent.contain.box.net.h1swap import (
    exchange_answer,
    misdirected,
    target_of,
)
from cursor_agent_action.agent.contain.box.net.policy import DEFAULT_DOMAINS
from cursor_agent_action.agent.contain.box.net.swap import (
    DOWN,
    UP,
    Rewriter,
    Vault,
    jwt_placeholder,
    key_placeholder,
    request_body,
)
from cursor_agent_action.agent.contain.box.net.terminate import client_alpn

KEY = "crsr_" + "0123456789abcdef" * 4


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _jwt(exp: int = 2_000_000_000, signature: str = "s" * 43) -> str:
    return (f"{_b64({'alg': 'HS256', 'typ': 'JWT'})}."
            f"{_b64({'exp': exp, 'type': 'api_key_token'})}.{signature}")


def test_the_key_placeholder_has_the_keys_prefix_length_and_alphabet() -> None:
    placeholder = key_placeholder(KEY)
    assert placeholder != KEY
    assert len(placeholder) == len(KEY)
    assert placeholder.startswith("crsr_")
    assert set(placeholder[5:]) <= set("0123456789abcdef")
    assert key_placeholder(KEY) != placeholder  # random for each run


def test_a_jwt_placeholder_keeps_header_and_payload() -> None:
    token = _jwt()
    placeholder = jwt_placeholder(token)
    assert placeholder.rsplit(".", 1)[0] == token.rsplit(".", 1)[0]
    assert placeholder != token
    assert len(placeholder) == len(token)


def _stream(rewriter: Rewriter, data: bytes, cuts: list[int]) -> bytes:
    pieces, at = [], 0
    for cut in sorted(set(cuts)):
        pieces.append(rewriter.feed(data[at:cut]))
        at = cut
    pieces.append(rewriter.feed(data[at:]))
    return b"".join(pieces) + rewriter.end()


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=12), st.binary(max_size=40))
def test_values_split_anywhere_are_still_swapped(cuts: list[int], noise: bytes) -> None:
    """However the body is cut into frames, the answer comes out the same as whole, as long,
    with no real value left; and going back up, the placeholders become the real values."""
    vault = Vault(KEY, key_placeholder(KEY))
    access, refresh = _jwt(), _jwt(signature="t" * 43)
    body = (noise + json.dumps({"accessToken": access, "refreshToken": refresh,
                                "echo": KEY}).encode() + noise)
    whole = vault.swap_text(body, DOWN)
    streamed = _stream(Rewriter(vault, DOWN), body, cuts)
    assert streamed == whole
    assert len(streamed) == len(body)
    for real in (KEY, access, refresh):
        assert real.encode() not in streamed
    assert _stream(Rewriter(vault, UP), streamed, cuts) == body


def test_a_jwt_in_a_protobuf_answer_is_masked_without_eating_the_next_field() -> None:
    vault = Vault(KEY, key_placeholder(KEY))
    token = _jwt().encode()
    size = len(token)
    varint = bytes([size]) if size < 0x80 else bytes([size & 0x7F | 0x80, size >> 7])
    message = b"\x0a\x05hello\x12" + varint + token + b"\x32\x01x"
    masked = vault.swap_text(message, DOWN)
    assert token not in masked
    assert masked.endswith(b"\x32\x01x")
    assert len(masked) == len(message)


def test_only_the_exchange_body_gets_the_key() -> None:
    vault = Vault(KEY, key_placeholder(KEY))
    prompt = f"print {vault.placeholder} in base64".encode()
    assert request_body(vault, b"/agent.v1.AgentService/RunSSE").feed(prompt) == prompt
    exchange = request_body(vault, b"/auth/exchange_user_api_key")
    assert KEY.encode() in exchange.feed(prompt) + exchange.end()


def test_a_failed_exchange_is_told_once() -> None:
    said: list[str] = []
    tally = Tally(said.append)
    vault = Vault(KEY, key_placeholder(KEY))
    exchange_answer(vault, tally, 404, b"<html>not here</html>")
    exchange_answer(vault, tally, 200, b"not json")
    assert len(said) == 1
    assert "HTTP 404" in said[0]
    assert tally.report().exchange_error == said[0]
    good = json.dumps({"accessToken": "opaque-token-0123456789"}).encode()
    masked = exchange_answer(vault, tally, 200, good)
    assert b"opaque-token-0123456789" not in masked
    assert tally.report().exchanges == 1


@pytest.mark.parametrize(("method", "target", "host", "why"), [
    (b"GET", b"/x", "api2.cursor.sh:443", ""),
    (b"GET", b"/x", "api2.cursor.sh", ""),
    (b"GET", b"/x", "other.example", "host"),
    (b"GET", b"/x", None, "host"),
    (b"GET", b"https://other.example/x", "api2.cursor.sh", "request for"),
    (b"GET", b"https://api2.cursor.sh@other.example/x", "api2.cursor.sh", "request for"),
    (b"CONNECT", b"other.example:443", "other.example:443", "CONNECT"),
])
def test_a_request_for_another_host_gets_no_credential(method: bytes, target: bytes,
                                                       host: str | None, why: str) -> None:
    found = misdirected(method, target, host, "api2.cursor.sh", 443)
    assert (why in found) if why else found == ""


def test_an_absolute_uri_for_the_name_is_sent_in_origin_form() -> None:
    assert target_of(b"https://api2.cursor.sh/a?b", "api2.cursor.sh", 443) == b"/a?b"


def test_the_alpn_offer_is_read_from_the_client_hello() -> None:
    import ssl

    context = ssl.create_default_context()
    context.set_alpn_protocols(["h2", "http/1.1"])
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="api2.cursor.sh")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    assert client_alpn(outgoing.read()) == ["h2", "http/1.1"]


@pytest.mark.skipif(not shutil.which("openssl"), reason="the run's CA is made with openssl")
def test_the_run_ca_vouches_for_cursors_names_only(tmp_path: Path) -> None:
    """A leaf the CA signs for another name (as a stolen CA key would) does not verify:
    the Name Constraints are critical; an IP address is excluded too."""
    assert permitted_domains(DEFAULT_DOMAINS) == ("cursor.sh", "cursor.com", "cursorapi.com",
                                                  "cursor-cdn.com")
    ca = RunCa.make(tmp_path / "ca", DEFAULT_DOMAINS)
    text = subprocess.run(["openssl", "x509", "-in", str(tmp_path / "ca" / "ca.pem"), "-noout",
                           "-text"], capture_output=True, text=True, check=True).stdout
    assert "X509v3 Name Constraints: critical" in text
    assert (tmp_path / "ca").stat().st_mode & 0o077 == 0

    def verifies(name: str) -> bool:
        leaf = ca.leaf(name)
        return subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "ca" / "ca.pem"),
                               str(leaf)], capture_output=True, check=False).returncode == 0

    assert verifies("api2.cursor.sh")
    assert verifies("downloads.cursor.com")
    assert not verifies("github.com")
    assert not verifies("cursor.sh.evil.example")
    ca.destroy()
    assert not (tmp_path / "ca").exists()
