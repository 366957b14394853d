"""The one path matcher (globs.py): allow-lists name files, deny-lists cover subtrees; checked
against a well-kept glob library (wcmatch's globmatch with GLOBSTAR, BRACE and DOTGLOB) over
generated patterns and paths, and on the examples docs/permissions.md shows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wcmatch import glob as wc

from cursor_agent_action.globs import (
    MAX_ALTERNATIVES,
    GlobError,
    covers,
    expand_braces,
    file_pattern,
    names,
)

FLAGS = wc.GLOBSTAR | wc.BRACE | wc.DOTGLOB

# The table in docs/permissions.md ("How path patterns match"): pattern, path, allow, deny.
TABLE = [
    ("**/*.md", "docs/notes.md", True, True),
    ("**/*.md", "docs/notes.md/conftest.py", False, True),
    ("*.md", "README.md", True, True),
    ("*.md", "docs/guide.md", False, False),
    ("docs/", "docs/a/b.py", True, True),
    ("docs/**", "docs/a/b.py", True, True),
    ("docs", "docs/a/b.py", False, True),
    ("docs", "docs", True, True),
    ("{a,b}/**", "b/c/d.txt", True, True),
    ("{a,b}/**", "c/d.txt", False, False),
]


@pytest.mark.parametrize(("pattern", "path", "allowed", "denied"), TABLE)
def test_the_documented_examples(pattern: str, path: str, allowed: bool, denied: bool) -> None:
    assert names([pattern], path) is allowed
    assert covers([pattern], path) is denied


def test_the_docs_show_the_table() -> None:
    from pathlib import Path
    text = (Path(__file__).parent.parent / "docs" / "permissions.md").read_text()
    for pattern, path, allowed, denied in TABLE:
        row = (f"| `{pattern}` | `{path}` | {'yes' if allowed else 'no'} | "
               f"{'yes' if denied else 'no'} |")
        assert row in text, row


def test_a_brace_bomb_is_an_error_not_a_slow_match() -> None:
    with pytest.raises(GlobError, match=f"more than {MAX_ALTERNATIVES}"):
        expand_braces("{a,b}" * 9)


SEGMENT = st.sampled_from(["a", "b", "x.md", "notes.md", ".hidden", "c.py", "a.b"])
PATH = st.lists(SEGMENT, min_size=1, max_size=5).map("/".join)
PIECE = st.sampled_from(["a", "b", "x", ".md", ".", "md", "*", "?", "notes", "c.py", "h"])
WORD = st.lists(PIECE, min_size=1, max_size=3).map("".join)
BRACED = st.lists(WORD, min_size=2, max_size=3).map(lambda words: "{" + ",".join(words) + "}")
PART = st.one_of(WORD, WORD, st.just("**"), BRACED, st.tuples(WORD, BRACED).map("".join))
PATTERN = st.tuples(st.lists(PART, min_size=1, max_size=4).map("/".join),
                    st.sampled_from(["", "", "/"])).map("".join)


def _reference(pattern: str, path: str) -> bool:
    return bool(wc.globmatch(path, file_pattern(pattern), flags=FLAGS))


@given(PATTERN, PATH)
def test_an_allow_list_names_exactly_what_wcmatch_matches(pattern: str, path: str) -> None:
    assert names([pattern], path) is _reference(pattern, path)


@given(PATTERN, PATH)
def test_a_deny_list_covers_what_it_names_and_everything_below(pattern: str,
                                                               path: str) -> None:
    parts = path.split("/")
    expected = any(_reference(pattern, "/".join(parts[:end])) for end in range(1, len(parts) + 1))
    assert covers([pattern], path) is expected
    if names([pattern], path):  # what an allow-list names, a deny-list covers
        assert covers([pattern], path)
