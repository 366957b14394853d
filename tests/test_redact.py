"""The redactor: known secrets in every encoding the runner masks, secret-shaped text it does not
know, and secrets cut across stream chunks and JSON escapes. Properties run 300 examples each."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import string
from urllib.parse import quote

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from cursor_agent_action.agent.contain.process import TranscriptWriter
from cursor_agent_action.redact import MASK, PATTERNS, Redactor, base64_pieces, scrub
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.engine import StreamProcessor
from cursor_agent_action.stream.record import RunReport
from cursor_agent_action.stream.render.report import record_outputs
from tests.support.runner import RUNNER_ENV

SECRETS = st.text(string.ascii_letters + string.digits + "-_.~+/=!@#$%^&*", min_size=12,
                  max_size=64)  # fmt: skip
TEXT = st.text(max_size=80)


@given(secret=SECRETS, before=TEXT, after=TEXT)
def test_a_known_secret_is_gone_wherever_it_stands(secret: str, before: str, after: str) -> None:
    redact = Redactor([secret])
    assert secret not in redact(before + secret + after)
    assert secret not in redact((before + secret + after) * 40)  # the long-text path too


@given(secret=SECRETS, prefix=st.binary(max_size=5), suffix=st.binary(max_size=5))
@example(secret="ghs_0123456789abcdef", prefix=b"", suffix=b"")
def test_base64_of_a_secret_at_any_byte_alignment_is_gone(
    secret: str, prefix: bytes, suffix: bytes
) -> None:
    """The secret inside any encoded blob: the characters that only the secret determines are
    replaced, so the secret cannot be decoded from what is left."""
    encoded = base64.b64encode(prefix + secret.encode() + suffix).decode()
    redacted = Redactor([secret])(f"data: {encoded} end")
    for piece in base64_pieces(secret.encode()):
        assert piece not in redacted
    for alphabet in (base64.b64encode, base64.urlsafe_b64encode):
        plain = alphabet(secret.encode()).decode().rstrip("=")
        assert plain[1:-2] not in redacted or len(plain) < 12


@given(secret=SECRETS)
def test_json_url_and_command_escaped_forms_are_gone(secret: str) -> None:
    redact = Redactor([secret + '"\\é'])
    value = secret + '"\\é'
    for form in (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
                 quote(value, safe=""), value.replace("%", "%25")):
        assert secret not in redact(f"[{form}]").replace(MASK, "")


@given(secret=SECRETS, before=TEXT)
def test_hex_and_reversed_forms_of_a_secret_are_gone(secret: str, before: str) -> None:
    """What an agent holding the value can print in one command (``xxd -p``, ``rev``)."""
    redact = Redactor([secret])
    for form in (secret.encode().hex(), secret.encode().hex().upper(), secret[::-1]):
        assert form not in redact(f"{before}{form}!")


@given(secret=SECRETS, cuts=st.lists(st.integers(min_value=1, max_value=400), max_size=8))
def test_a_secret_cut_across_stream_chunks_never_reaches_the_transcript_or_log(
    secret: str, cuts: list[int]
) -> None:
    line = json.dumps({"type": "assistant", "message": {"content": [
        {"type": "text", "text": f"the key is {secret}, base64 "
                                 f"{base64.b64encode(secret.encode()).decode()}"}]}})
    data = (line + "\n").encode() * 2
    log = io.StringIO()
    runner = Runner(stdout=log, env=RUNNER_ENV, secrets=[secret])
    out = io.BytesIO()
    read, write = os.pipe()
    writer = TranscriptWriter(write, runner.redact)
    processor = StreamProcessor(runner)
    position = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        chunk = data[position:cut]
        if chunk:
            writer.write(chunk)
            processor.feed(chunk)
        position = max(position, cut)
    writer.close()
    with os.fdopen(read, "rb") as handle:
        out.write(handle.read())
    record = processor.close()
    runner.flush()
    shown = log.getvalue().split("::add-mask::")[-1].split("\n", 1)[-1]
    shown_stream = dataclasses.replace(record, final_message=runner.redact(record.final_message))
    outputs = record_outputs(RunReport.of_stream(shown_stream), "")  # as report() writes them
    for text in (out.getvalue().decode(), shown, outputs["final-message"]):
        assert secret not in text
        for piece in base64_pieces(secret.encode()):
            assert piece not in text


PATTERN_CASES = {
    "GitHub token": ("ghp_" + "A1b2C3d4E5" * 4, "ghp_short"),
    "GitHub fine-grained token": ("github_pat_" + "11ABCDEFG0123456789_abcdefghij" * 2,
                                  "github_pat_x"),
    "AWS access key id": ("AKIAIOSFODNN7EXAMPLE", "AKIAshort"),
    "OpenAI or Anthropic key": ("sk-ant-api03-" + "abcDEF123_-" * 4, "sk-short"),
    "Slack token": ("xoxb-123456789012-abcdefABCDEF", "xoxb-1"),
    "Google API key": ("AIza" + "SyA-1234567890abcdefghijklmnopqrstu", "AIzaShort"),
    "private key block": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n"
                          "-----END RSA PRIVATE KEY-----", "-----BEGIN PUBLIC KEY-----"),
    "JSON web token": ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                       "eyJhbGciOiJ9"),
}  # fmt: skip


def test_every_pattern_row_has_a_case() -> None:
    assert {name for name, _, _ in PATTERNS} == set(PATTERN_CASES)


@pytest.mark.parametrize("name", sorted(PATTERN_CASES))
def test_a_secret_shaped_string_is_scrubbed_and_a_near_miss_is_not(name: str) -> None:
    secret, near_miss = PATTERN_CASES[name]
    text = f"found {secret} in the logs; {near_miss} is fine"
    for redact in (Redactor(), scrub):
        cleaned = redact(text)
        assert secret not in cleaned
        assert MASK in cleaned
        assert near_miss in cleaned
    # Inside a JSON string (the transcript): the escaped form goes too.
    assert secret not in Redactor()(json.dumps(text)).replace(MASK, "")


@pytest.mark.parametrize("space", ["\t", "\u00a0", "\u2003", "  "])
def test_a_private_key_block_with_other_white_space_in_its_header_is_scrubbed(
    space: str,
) -> None:
    """A tab or a no-break space where PEM has a space: no PEM reader takes the block, but a
    person reading the log still sees the key."""
    text = (f"-----BEGIN{space}RSA PRIVATE{space}KEY-----\nMIIEpAIBAAKCAQEA7xyz\n"
            f"-----END{space}RSA PRIVATE{space}KEY-----")
    for redact in (Redactor(), scrub):
        assert "MIIEpAIBAAKCAQEA7xyz" not in redact(text)


def test_a_private_key_cut_before_its_end_is_still_scrubbed() -> None:
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU"
    assert "b3BlbnNzaC1rZXkt" not in Redactor()(text)


def test_ordinary_text_is_left_alone() -> None:
    text = "Updated docs/usage.md; skip ahead, ask for AKIA docs, sk-learn, eyJ is a prefix."
    assert Redactor(["a-real-secret-value"])(text) == text


def test_a_secret_holding_a_stray_byte_is_gone_in_its_byte_forms() -> None:
    """A value from the environment that is not UTF-8 keeps its stray bytes as surrogates; its
    URL-encoded and base64 forms are those of the real bytes (what a tool that printed them
    would show), and registering it no longer fails."""
    secret = "tok\udcffen-0123456789"
    raw = b"tok\xffen-0123456789"
    redactor = Redactor([secret])
    assert redactor(f"a {secret} b") == "a *** b"
    assert redactor("u=tok%FFen-0123456789&x") == "u=***&x"
    assert "***" in redactor(base64.b64encode(raw).decode())
