"""The log checker the stream tests rely on (tests/support/stream.py) is not vacuous."""

from __future__ import annotations

import pytest

from tests.support.stream import processed_commands


def test_checker_rejects_an_injected_command() -> None:
    """The log checker is not vacuous: a raw agent line outside stop-commands is caught."""
    with pytest.raises(AssertionError, match="set-output"):
        processed_commands("::set-output name=x::y\n")
    with pytest.raises(AssertionError, match="foreign title"):
        processed_commands("::error title=pwned::owned\n")
    token = "ab" * 16
    assert processed_commands(f"::stop-commands::{token}\n::error title=pwned::x\n::{token}::\n")


def test_checker_rejects_unbalanced_groups_and_unclosed_stop() -> None:
    with pytest.raises(AssertionError, match="never closed"):
        processed_commands("::group::x\n")
    with pytest.raises(AssertionError, match="never resumed"):
        processed_commands("::stop-commands::" + "cd" * 16 + "\n")
