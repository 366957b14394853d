"""framing: bytes -> lines, for whole files and for live pipes fed in arbitrary chunks.

A complete line keeps its newline (JSON whitespace, which the parser skips); only the last line
of a stream that does not end in one comes without."""

from __future__ import annotations

import pytest

from cursor_agent_action.stream.framing import BOM, CutLine, LineSplitter

SAMPLE = BOM + b'{"a":1}\r\n\n  \n{"b":"\xc3\xa9"}\nno newline at end'
EXPECTED = [b'{"a":1}\r\n', b"\n", b"  \n", b'{"b":"\xc3\xa9"}\n', b"no newline at end"]


def _split(chunks: list[bytes]) -> list[bytes]:
    splitter = LineSplitter()
    lines = [bytes(line) for chunk in chunks for line in splitter.feed(chunk)]
    return lines + [bytes(line) for line in splitter.close()]


def test_whole_input_gives_every_line_without_bom() -> None:
    assert _split([SAMPLE]) == EXPECTED


@pytest.mark.parametrize("cut", range(len(SAMPLE) + 1))
def test_any_two_chunk_split_gives_the_same_lines(cut: int) -> None:
    """A chunk boundary anywhere (inside the BOM, a CRLF, a UTF-8 sequence) changes nothing."""
    assert _split([SAMPLE[:cut], SAMPLE[cut:]]) == EXPECTED


def test_byte_by_byte_feed_gives_the_same_lines() -> None:
    assert _split([SAMPLE[i : i + 1] for i in range(len(SAMPLE))]) == EXPECTED


def test_bom_only_at_stream_start_is_dropped() -> None:
    assert _split([b"x\n" + BOM + b"y\n"]) == [b"x\n", BOM + b"y\n"]
    assert _split([BOM[:2]]) == [BOM[:2]]  # a lone partial BOM is data, not lost


def test_empty_stream_has_no_lines() -> None:
    assert _split([]) == []
    assert _split([b""]) == []


def test_huge_line_is_accumulated_in_one_buffer() -> None:
    """A line longer than many chunks arrives whole, and nothing else is held."""
    splitter = LineSplitter()
    piece = b"x" * 1000
    for _ in range(500):
        assert splitter.feed(piece) == []
    (line,) = splitter.feed(b"\nnext")
    assert len(line) == 500_001
    assert line == piece * 500 + b"\n"
    assert splitter.close() == [b"next"]


@pytest.mark.parametrize("feed", ["whole", "split"])
def test_the_line_cap_counts_the_bytes_before_the_newline(feed: str) -> None:
    """A line of exactly the cap is whole; one byte more is cut (as a CutLine with its size)."""
    cap = 64
    data = b"a" * cap + b"\n" + b"b" * (cap + 1) + b"\nend\n"
    splitter = LineSplitter(max_line=cap)
    chunks = [data] if feed == "whole" else [data[i : i + 7] for i in range(0, len(data), 7)]
    lines = [line for chunk in chunks for line in splitter.feed(chunk)] + splitter.close()
    assert lines[0] == b"a" * cap + b"\n"
    assert isinstance(lines[1], CutLine)
    assert lines[1].size == cap + 1
    assert lines[2:] == [b"end\n"]
