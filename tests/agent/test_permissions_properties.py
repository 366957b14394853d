"""Properties of token parsing, policy building and the glob model, over generated input."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import TypeVar

from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.agent.guards.permissions import FLOOR, PRESETS, build_policy, parse_tokens
from cursor_agent_action.errors import UsageError
from cursor_agent_action.globs import glob_to_regex

T = TypeVar("T")


def _outcome(func: Callable[..., T], *args: object) -> T | UsageError:
    """The result, or the UsageError raised (the only exception allowed)."""
    try:
        return func(*args)
    except UsageError as exc:
        return exc


_WORDS = st.from_regex(r"[a-z][a-z0-9_.+-]{0,11}", fullmatch=True)
_GLOBS = st.from_regex(r"[a-z0-9_*?/.{},-]{1,20}", fullmatch=True).filter(
    lambda g: not g.startswith(("/", "~")) and ".." not in g.split("/")
)
_TOKENS = st.one_of(
    _WORDS.map(lambda w: f"Shell({w})"),
    _GLOBS.map(lambda g: f"Read({g})"),
    _GLOBS.map(lambda g: f"Write({g})"),
)


@given(st.text())
def test_parse_tokens_returns_valid_tokens_or_raises_usage_error(text: str) -> None:
    tokens = _outcome(parse_tokens, text)
    if isinstance(tokens, UsageError):
        assert tokens.hint
    else:
        assert parse_tokens("\n".join(tokens)) == tokens


@given(
    st.sampled_from(PRESETS),
    st.lists(_TOKENS, max_size=6),
    st.lists(_TOKENS, max_size=6),
    st.randoms(use_true_random=False),
)
def test_policies_keep_the_floor_and_render_deterministically(
    preset: str, allow: list[str], deny: list[str], rnd: random.Random
) -> None:
    policy = _outcome(build_policy, preset, allow, deny)
    if isinstance(policy, UsageError):
        assert "hardened floor" in policy.message
        return
    assert set(FLOOR) <= set(policy.deny)
    assert set(allow) <= set(policy.allow)
    shuffled_allow, shuffled_deny = list(allow), list(deny)
    rnd.shuffle(shuffled_allow)
    rnd.shuffle(shuffled_deny)
    assert build_policy(preset, shuffled_allow, shuffled_deny).render() == policy.render()
    parsed = json.loads(policy.render())
    assert parsed["permissions"]["allow"] == sorted(set(parsed["permissions"]["allow"]))
    for path in (".github/workflows/ci.yml", ".cursor/cli.json", ".env"):
        assert not policy.permits_write(path)


@given(st.text(max_size=30), st.text(max_size=30))
def test_glob_model_never_fails_and_a_literal_glob_matches_itself(glob: str, path: str) -> None:
    regex = glob_to_regex(glob)
    regex.fullmatch(path)
    if not any(c in glob for c in "*?{}"):
        assert regex.fullmatch(glob)
