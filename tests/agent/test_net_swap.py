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
from cursor_agent_action.agent.contain.box.net.placeholders import (
    jwt_placeholder,
    key_placeholder,
    random_like,
)
from cursor_agent_action.agent.contain.box.net.policy import DEFAULT_DOMAINS
from cursor_agent_action.agent.contain.box.net.swap import (
    DOWN,
    MAX_FIELD,
    UP,
    Rewriter,
    Vault,
    credential_field,
    request_body,
    response_body,
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


OPAQUE = "Zm9vYmFy/T0ken+with=base64/chars+and/more=="


@given(st.lists(st.integers(min_value=0, max_value=300), max_size=12),
       st.sampled_from(["sessionToken", "client_secret", "X-Api-Key", "password"]),
       st.sampled_from([OPAQUE, "abcdefgh12345678", "0123456789abcdef" * 4]))
def test_credential_fields_of_a_json_answer_are_masked_however_it_is_cut(
        cuts: list[int], name: str, value: str) -> None:
    """An opaque credential (no JWT, characters a JWT has not) under a field named as one is
    masked wherever the frames cut the answer, and its placeholder swaps back going up;
    a field that is no credential (a page token, a token count) is left as it is."""
    vault = Vault(KEY, key_placeholder(KEY))
    body = json.dumps({name: value, "nextPageToken": "page-0123456789", "maxTokens": "12345678",
                       "note": "x" * 50}).encode()
    streamed = _stream(response_body(vault, [(b"content-type", b"application/json")]), body,
                       cuts)
    assert value.encode() not in streamed
    assert len(streamed) == len(body)
    masked = json.loads(streamed)
    assert len(masked[name]) == len(value)
    assert masked[name].endswith("==") is value.endswith("==")
    assert (masked["nextPageToken"], masked["maxTokens"]) == ("page-0123456789", "12345678")
    assert _stream(Rewriter(vault, UP), streamed, cuts) == body
    later = Rewriter(vault, DOWN)  # once known, found in any answer, JSON or not
    assert value.encode() not in later.feed(b"\x12\x30" + value.encode()) + later.end()


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=8),
       st.binary(max_size=30), st.binary(max_size=30),
       st.text(alphabet="ABCabc019-_.~+/=:", min_size=8, max_size=60))
def test_a_credential_field_among_any_bytes_is_masked_however_it_is_cut(
        cuts: list[int], before: bytes, after: bytes, value: str) -> None:
    """Whatever surrounds it and wherever the chunks end, a credential field's value never
    goes on, and the answer comes out as it does read whole."""
    field = b'"refresh_token" : "' + value.encode() + b'"'
    body = before + field + after
    vault = Vault(KEY, key_placeholder(KEY))
    kind = [(b"content-type", b"application/json")]
    streamed = _stream(response_body(vault, kind), body, cuts)
    whole = response_body(vault, kind)
    assert streamed == whole.feed(body) + whole.end()
    assert len(streamed) == len(body)
    assert value.encode() not in streamed[len(before):len(before) + len(field)]


@pytest.mark.parametrize("at", range(1, 40))
def test_a_whole_credential_field_is_never_cut_from_its_name(at: int) -> None:
    """A chunk ending anywhere in or just after ``"token": "value"`` (a value that could also
    start a field's name): the value is still masked."""
    vault = Vault(KEY, key_placeholder(KEY))
    body = b'{"token": "abcdefgh12345678"}, "x": 1}'
    rewriter = response_body(vault, [(b"content-type", b"application/json")])
    out = rewriter.feed(body[:at]) + rewriter.feed(body[at:]) + rewriter.end()
    assert b"abcdefgh12345678" not in out
    assert len(out) == len(body)


def test_a_protobuf_answer_is_not_read_for_field_names() -> None:
    """Protobuf carries no names: an opaque value there is not recognised (docs/security.md)."""
    vault = Vault(KEY, key_placeholder(KEY))
    body = b'"sessionToken": "' + OPAQUE.encode() + b'"'
    rewriter = response_body(vault, [(b"content-type", b"application/proto")])
    assert rewriter.feed(body) + rewriter.end() == body


@pytest.mark.parametrize(("name", "credential"), [
    ("accessToken", True), ("refresh_token", True), ("sessionToken", True), ("token", True),
    ("apiKey", True), ("X-API-KEY", True), ("clientSecret", True), ("password", True),
    ("credentials", True), ("nextPageToken", False), ("continuation_token", False),
    ("tokenType", False), ("maxTokens", False), ("keyboard", False), ("id", False),
])
def test_which_fields_name_a_credential(name: str, credential: bool) -> None:
    assert credential_field(name) is credential


def test_credential_headers_and_cookies_coming_down_are_masked() -> None:
    vault = Vault(KEY, key_placeholder(KEY))
    cookie = b"session=" + OPAQUE.encode() + b"; Path=/; HttpOnly"
    down = vault.swap_headers([(b"set-cookie", cookie), (b"x-session-token", b"abcdefgh12345678"),
                               (b"x-request-id", b"abcdefgh12345678")], DOWN)
    assert OPAQUE.encode() not in down[0][1]
    assert down[0][1].endswith(b"; Path=/; HttpOnly")
    assert down[1][1] != b"abcdefgh12345678"
    assert down[2][1] == down[1][1]  # the same value: the same placeholder, wherever it is
    up = vault.swap_headers([(b"cookie", down[0][1].split(b";")[0])], UP)
    assert up[0][1] == b"session=" + OPAQUE.encode()


def test_a_stream_is_held_back_no_more_than_a_value_needs() -> None:
    """A long run of token characters (base64 text in a stream) goes on as it comes, less at
    most the longest value's length; a chunk with nothing to replace is the same object."""
    vault = Vault(KEY, key_placeholder(KEY))
    rewriter = response_body(vault, [(b"content-type", b"application/connect+proto")])
    chunk = b"QUJD" * 4096
    out = rewriter.feed(chunk)
    assert len(out) >= len(chunk) - len(KEY)
    assert len(out + rewriter.feed(chunk)) >= 2 * len(chunk) - len(KEY)
    plain = Rewriter(vault, DOWN)
    binary = bytes(range(256)).replace(b"e", b"!") * 64 + b"!"
    assert plain.feed(binary) is binary
    jwt = _jwt().encode()
    held = Rewriter(vault, DOWN)
    assert held.feed(b"{}" + jwt[:40]) == b"{}"  # an unfinished JWT waits for its end
    assert jwt not in held.feed(jwt[40:] + b"}") + held.end()
    fields = response_body(vault, [(b"content-type", b"application/json")])
    start = b'{"accessToken": "' + b"a" * 100
    assert len(fields.feed(start)) == 1  # an unfinished credential field waits too
    assert len(start) - 1 <= MAX_FIELD


def test_placeholders_keep_alphabet_and_padding() -> None:
    for text in ("0123456789abcdef" * 4, "ABCDEF012345", OPAQUE, "a-b_c" * 9):
        found = random_like(text)
        assert len(found) == len(text)
        assert found != text
        assert set(found.rstrip("=")) <= set(text) | set(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
    assert random_like(OPAQUE).endswith("==")
    assert set(random_like("0123456789abcdef" * 4)) <= set("0123456789abcdef")


def test_many_tokens_are_all_swapped_both_ways() -> None:
    """Each token the service hands out is added to the tables as it comes (never rebuilt):
    the five hundredth is swapped as the first."""
    vault = Vault(KEY, key_placeholder(KEY))
    tokens = [_jwt(signature=random_like("s" * 43 + "t")[:43]) for _ in range(250)]
    tokens += [random_like(OPAQUE) for _ in range(250)]
    masked = [vault.mask(token) for token in tokens]
    body = " ".join(tokens).encode()
    down = vault.swap_text(body, DOWN)
    assert down == " ".join(masked).encode()
    assert vault.swap_text(down, UP) == body


def test_h2_reprs_a_data_frame_as_before_without_reading_all_of_it() -> None:
    """The relay makes hyperframe's repr of a DATA frame read its first bytes only (h2 builds
    it for every frame it receives); the text is what hyperframe wrote before."""
    import binascii

    from hyperframe.frame import DataFrame

    from cursor_agent_action.agent.contain.box.net import h2swap  # noqa: F401 (its effect)

    for size in (0, 1, 10, 11, 12, 100, 16384):
        data = bytes(range(256))[:size] * (1 + size // 256)
        data = data[:size]
        hexed = binascii.hexlify(data).decode()
        shown = "None" if not data else "<hex:" + (
            hexed[:20] + "..." if len(hexed) > 20 else hexed) + ">"
        assert repr(DataFrame(1, data=data)).endswith(f"): {shown}")
    padded = DataFrame(1, data=b"abc", flags=["PADDED"])
    padded.pad_length = 2
    assert repr(padded).endswith("): <hex:026162630000>")  # its pad length and padding too


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


@pytest.mark.parametrize("run", [100, 16 * 1024 + 100, 64 * 1024])
@pytest.mark.parametrize("cut", [1, 30, len(KEY) - 1])
def test_an_echoed_key_cut_by_a_frame_at_the_end_of_a_long_run_comes_down_masked(
        run: int, cut: int) -> None:
    """Red team (R2-2): an echo of ``x-pad: "A" * 32 KiB + placeholder`` came back with the
    real key whole when a frame ended inside it: past 16 KiB of value characters the run was
    let go, and both halves went to the box raw. The hold is now the longest known value, at
    the end of a run of any length."""
    vault = Vault(KEY, key_placeholder(KEY))
    rewriter = Rewriter(vault, DOWN)
    body = b'{"echo": "' + b"A" * run + KEY.encode() + b'"}'
    split = len(body) - 2 - len(KEY) + cut
    out = rewriter.feed(body[:split]) + rewriter.feed(body[split:]) + rewriter.end()
    assert KEY.encode() not in out
    assert out.endswith(vault.placeholder.encode() + b'"}')


def _envelope(message: bytes) -> bytes:
    return b"\x00" + len(message).to_bytes(4, "big") + message


def test_a_connect_message_ending_in_value_characters_is_not_held_for_the_next_frame() -> None:
    """A Connect stream's message whose last bytes could start a credential was held back
    until the stream's next frame: a service that pauses after it (waiting for the CLI) would
    stall the CLI. In an enveloped stream a value never crosses a message's end: what is held
    goes at that end."""
    vault = Vault(KEY, key_placeholder(KEY))
    rewriter = response_body(vault, [(b"content-type", b"application/connect+proto")])
    message = _envelope(b"\x0a\x10run the tool abcdef")
    assert rewriter.feed(message) == message  # whole, at once
    # The key inside a message, split across two frames, still comes down masked.
    secret = _envelope(b"\x12" + bytes([len(KEY)]) + KEY.encode())
    cut = len(secret) - 20
    out = rewriter.feed(secret[:cut]) + rewriter.feed(secret[cut:])
    assert KEY.encode() not in out
    assert len(out) == len(secret)
    assert out.endswith(vault.placeholder.encode())
    # A header split across frames, and an empty message, keep the count.
    tail = _envelope(b"") + _envelope(b"xyz" + KEY.encode())
    out = b"".join(rewriter.feed(tail[at:at + 3]) for at in range(0, len(tail), 3))
    assert out == _envelope(b"") + _envelope(b"xyz" + vault.placeholder.encode())
    assert rewriter.end() == b""


def test_an_answer_that_is_no_enveloped_stream_keeps_its_hold() -> None:
    """Elsewhere the hold stays (a value may go on in the next frame)."""
    vault = Vault(KEY, key_placeholder(KEY))
    rewriter = response_body(vault, [(b"content-type", b"application/proto")])
    body = b"\x0a\x10run the tool abcdef"
    first = rewriter.feed(body)
    assert first != body
    assert first + rewriter.end() == body
