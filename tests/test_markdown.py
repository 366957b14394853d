"""markdown: agent text stays inert (fences, code-span cells, escaped prose)."""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action import markdown
from cursor_agent_action.markdown import code_cell, cut_utf8, fence, html_escape, inline, utf8_len
from cursor_agent_action.stream.record import Cause, Conclusion, Failure, RunReport, StreamResult
from cursor_agent_action.stream.render.summary import render_summary


@given(st.text())
def test_fence_cannot_be_closed_from_inside(text: str) -> None:
    """No line of the text is a closing fence of the block's length or longer."""
    block = fence(text)
    opening = block.split("\n", 1)[0]
    ticks = len(opening) - len(opening.lstrip("`"))
    assert ticks >= 3
    inner = block[len(opening) + 1 : -(ticks + 1)]
    assert all(not line.strip().startswith("`" * ticks) for line in inner.split("\n"))
    assert block.endswith("`" * ticks + "\n")


def test_fence_examples() -> None:
    assert fence("a") == "```text\na\n```\n"
    assert fence("x ````` y").startswith("``````text\n")


@given(st.text())
def test_code_cell_is_one_cell(text: str) -> None:
    """No raw newline and no unescaped pipe: the text stays in its table cell."""
    cell = code_cell(text)
    assert "\n" not in cell
    assert "\r" not in cell
    assert re.search(r"(?<!\\)\|", cell) is None


def test_code_cell_examples() -> None:
    assert code_cell("") == ""
    assert code_cell("a|b") == "`a\\|b`"
    assert code_cell("x`y") == "``x`y``"
    assert code_cell("`x`") == "`` `x` ``"
    assert code_cell("l1\nl2") == "`l1⏎l2`"
    assert code_cell("abcdef", limit=4) == "`abc…`"
    assert code_cell("a|b", in_table=False) == "`a|b`"


@pytest.mark.parametrize(
    ("text", "absent"),
    [
        ("<script>alert(1)</script>", "<script"),
        ("<!-- c -->", "<!--"),
        ("[x](https://e.x)", "[x]("),
        ("![i](https://e.x/i.png)", "!["),
        ("see https://evil.example now", "https://evil"),
        ("www.evil.example", "www.evil"),
        ("mail a@b.example", "a@b"),
        ("**bold** _it_", "**bold**"),
        ("a\nb", "\n"),
        ("`code` $$a$$", "$$a"),
        ("fixes #123", "#123"),  # an issue reference (a back-reference on the issue)
        ("see octo/other#5", "#5"),
        ("see GH-12", "GH-12"),
    ],
)
def test_inline_neutralises_markup(text: str, absent: str) -> None:
    assert absent not in inline(text)


@pytest.mark.parametrize("text", ["$\\color{red}{pwned}$", "`code` $$a$$", "cost: $5 and $6"])
def test_inline_escapes_every_dollar_so_no_math_renders(text: str) -> None:
    assert re.search(r"(?<!\\)\$", inline(text)) is None


@pytest.mark.parametrize("text", ["# heading", "- item", "+ item", "1. item", "2) item", "> quote"])
def test_inline_never_starts_a_block(text: str) -> None:
    """Line-start markers (heading, list, quote) are escaped so the line stays a paragraph."""
    assert re.match(r"[#>+-]|\d+[.)]", inline(text)) is None


def test_inline_keeps_plain_words_readable() -> None:
    assert inline("cursor-agent (v1.2) ran") == "cursor-agent (v1.2) ran"


def test_html_escape() -> None:
    assert (
        html_escape("<a href=\"x\">'&'</a>")
        == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    )


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_cut_utf8_is_a_valid_prefix_within_budget(text: str, limit: int) -> None:
    cut = cut_utf8(text, limit)
    assert text.startswith(cut)
    assert utf8_len(cut) <= limit
    assert cut == text or utf8_len(text[: len(cut) + 1]) > limit


@given(st.text(), st.integers(min_value=1, max_value=8))
def test_utf8_len_in_pieces_counts_every_byte(
    text: str, piece: int
) -> None:
    """utf8_len measures a long text piece by piece: the total is the encoded length."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown, "_PIECE_CHARS", piece)
        assert utf8_len(text) == len(text.encode("utf-8"))


def test_every_format_and_separator_character_counts_as_invisible() -> None:
    """INVISIBLE holds every Cf, Zl and Zp character of this Python's Unicode database (bidi
    controls, zero-width ones, tags...), checked code point by code point."""
    missing = [f"U+{code:04X}" for code in range(0x110000)
               if unicodedata.category(chr(code)) in ("Cf", "Zl", "Zp")
               and not markdown.INVISIBLE.match(chr(code))]
    assert missing == []


@pytest.mark.parametrize(("text", "shown"), [
    ("a\u202eb", "a\\u202eb"), ("x\U000e0041", "x\\U000e0041"), ("plain", "plain"),
    ("é → ok", "é → ok"), ("\ufe0f\u200d\u00ad", "\\ufe0f\\u200d\\u00ad"),
])  # fmt: skip
def test_invisible_characters_are_written_out(text: str, shown: str) -> None:
    assert markdown.escape_invisible(text) == shown
    assert markdown.escape_invisible("\u200b\u202e", keep="\u200b") == "\u200b\\u202e"


def test_every_container_escapes_them_before_adding_its_own_zero_width_spaces() -> None:
    hostile = "https://evil.example\u200b/\u202egpj.exe"
    assert "\\u202e" in markdown.fence(hostile)
    assert "\u202e" not in markdown.fence(hostile)
    assert "\\u200b" in markdown.code_cell(hostile)
    shown = markdown.inline(hostile)
    assert "\\\\u202e" in shown
    assert "\\\\u200b" in shown
    assert "https:\u200b//" in shown  # the autolink is still broken by our own


# -- our own messages: a URL in them is copied whole -----------------------------------------

def _source_urls() -> list[str]:
    """Every http(s) URL in a string of the package's code (messages, hints, notes)."""
    found: set[str] = set()
    for path in (Path(markdown.__file__).parent).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(re.findall(r"https?://[\w./#?=&%-]*\w", node.value))
    return sorted(found)


def test_the_code_has_urls_in_its_messages() -> None:
    assert "https://status.cursor.com" in _source_urls()


@pytest.mark.parametrize("url", _source_urls())
def test_prose_keeps_every_url_of_the_code_verbatim(url: str) -> None:
    """An error's text in the job summary: the URL is a code span, with no zero-width space
    (inline() breaks autolinks with one, which a reader then copies)."""
    rendered = markdown.prose(f"Fix: see {url}. Then re-run.")
    assert f"`{url}`" in rendered
    assert "\u200b" not in rendered


def test_prose_still_breaks_mentions_and_issue_references() -> None:
    rendered = markdown.prose("ping @octocat about #12 at https://example.com/x.")
    assert "@\u200boctocat" in rendered
    assert "#\u200b12" in rendered
    assert rendered.endswith("`https://example.com/x`.")


def test_a_failure_with_a_url_in_the_summary_has_no_hidden_character_in_it() -> None:
    failure = Failure(Cause.AGENT,
                      "Cursor API unavailable. Fix: wait (status: https://status.cursor.com).")
    record = RunReport(StreamResult(), Conclusion.FAILURE, (failure,),
                       notes=("See https://cursor.com/docs/cli/reference for the flags.",))
    text = render_summary(record, budget_bytes=1 << 20)
    assert "`https://status.cursor.com`" in text
    assert "`https://cursor.com/docs/cli/reference`" in text
    assert "https:\u200b" not in text
