"""globs.overlap (whether two allow-list patterns name a common file), literal_prefix and
never_matches: lint warns only where no file can be named by both, so overlap may never say
"no" where a file is named by both patterns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cursor_agent_action.docpages.kinds import doc_globs
from cursor_agent_action.globs import literal_prefix, names, never_matches, overlap

_SEGMENT_GLOB = st.lists(st.sampled_from(["a", "b", ".", "*", "?", "md", "{a,b}"]),
                         min_size=1, max_size=4).map("".join)
_GLOB = st.lists(st.one_of(st.just("**"), _SEGMENT_GLOB), min_size=1, max_size=4).map(
    "/".join).map(lambda g: g + ("/" if g.endswith("a") and len(g) % 2 else ""))
# A repository's paths: no "." or ".." segment (git never lists one).
_PATH = st.lists(st.lists(st.sampled_from(["a", "b", ".", "md", "x"]), min_size=1,
                          max_size=4).map("".join).filter(lambda s: s not in (".", "..")),
                 min_size=1, max_size=5).map("/".join)


@settings(max_examples=400, deadline=None)
@given(_GLOB, _GLOB, st.lists(_PATH, min_size=1, max_size=20))
def test_a_file_named_by_both_patterns_means_they_overlap(a: str, b: str,
                                                          paths: list[str]) -> None:
    if any(names([a], p) and names([b], p) for p in paths):
        assert overlap(a, b)


@settings(max_examples=200, deadline=None)
@given(_GLOB, _PATH)
def test_a_pattern_overlaps_every_file_it_names(a: str, path: str) -> None:
    if names([a], path):
        assert overlap(a, path)
        assert not never_matches(a)


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("docs", doc_globs()[0], False),
    ("docs/", doc_globs()[0], True),
    ("src/**/*.py", doc_globs()[0], False),
    ("src/**", doc_globs()[0], True),  # src/README.md
    ("*.md", "docs/*.md", False),
    ("a*b", "*c", False),
    ("docs/**", "docs", False),  # docs/** names what is below docs, not docs itself
    ("**/.github/**", ".github/workflows/ci.yml", True),
])
def test_overlap_answers(a: str, b: str, expected: bool) -> None:
    assert overlap(a, b) is expected
    assert overlap(b, a) is expected


def test_literal_prefix() -> None:
    assert literal_prefix(".github/workflows/*.yml") == ".github/workflows"
    assert literal_prefix("/docs/") == "docs"
    assert literal_prefix("**/x") == ""
    assert literal_prefix("AGENTS.md") == "AGENTS.md"
