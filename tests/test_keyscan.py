"""The API key found in every form the issue names (as it is, reversed, hex, base64 in both
alphabets at every offset, split over lines, JSON-escaped, a piece in each of two files, inside
a binary file of a patch), and nothing found in text without it."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.keyscan import PIECE_BYTES, KeyScan

KEY = "crsr_" + "7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a"
SCAN = KeyScan([KEY])


def _b64(prefix: bytes, *, url: bool = False) -> str:
    encode = base64.urlsafe_b64encode if url else base64.b64encode
    return encode(prefix + KEY.encode() + b" and more").decode()


FORMS = {
    "as it is": f"token = '{KEY}'",
    "reversed": f"x = '{KEY[::-1]}'",
    "hex, lower case": KEY.encode().hex(),
    "hex, upper case": "0x" + KEY.encode().hex().upper(),
    **{f"base64, offset {n}": _b64(b"p" * n) for n in range(3)},
    **{f"URL-safe base64, offset {n}": _b64(b"q" * n, url=True) for n in range(3)},
    "split over lines": f'KEY = (\n    "{KEY[:30]}"\n    "{KEY[30:]}"\n)',
    "split in Markdown": f"The first part is `{KEY[:35]}`,\nthe second `{KEY[35:]}`.",
    "base64 wrapped at 20": "\n".join(
        _b64(b"")[i:i + 20] for i in range(0, len(_b64(b"")), 20)),
    "hex split by spaces": " ".join(KEY.encode().hex()[i:i + 8] for i in range(0, 138, 8)),
    "JSON-escaped with a line break": json.dumps({"t": KEY[:40] + "\n" + KEY[40:]}),
    "a piece of it": f"half: {KEY[:5 + PIECE_BYTES]}",
}


@pytest.mark.parametrize("text", FORMS.values(), ids=FORMS.keys())
def test_every_form_is_found(text: str) -> None:
    assert SCAN.find(text) is not None


def test_the_form_is_named_and_the_key_never() -> None:
    assert SCAN.find(KEY[::-1]) == "reversed"
    assert SCAN.find(KEY.encode().hex()) == "hex"
    hits = SCAN.text_hits({"the final message": _b64(b"ab", url=True)})
    assert [hit.where for hit in hits] == ["the final message"]
    assert "base64" in hits[0].form
    assert KEY not in str(hits[0])
    assert KEY[5:17] not in str(hits[0])


def test_a_piece_shorter_than_the_threshold_is_no_hit() -> None:
    """Ordinary text shares short runs with any key (its prefix, a few hex digits)."""
    assert SCAN.find(f"keys start with crsr_; {KEY[5:5 + PIECE_BYTES - 1]}") is None


@given(st.text(max_size=2000))
def test_text_without_the_key_has_no_hit(text: str) -> None:
    assert KeyScan([KEY]).find(text.replace(KEY[5:11], "")) is None


@given(st.binary(min_size=0, max_size=40), st.binary(min_size=0, max_size=40),
       st.sampled_from([base64.b64encode, base64.urlsafe_b64encode, bytes.hex]))
def test_the_key_inside_any_encoded_blob_is_found(
    before: bytes, after: bytes, encode: object
) -> None:
    blob = encode(before + KEY.encode() + after)  # type: ignore[operator]
    text = blob.decode() if isinstance(blob, bytes) else str(blob)
    assert SCAN.find(text) is not None


def test_a_short_value_is_not_looked_for() -> None:
    """A value shorter than any Cursor key would find ordinary words."""
    assert not KeyScan(["short"])
    assert KeyScan(["short"]).find("short") is None


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          cwd=repo, check=True, capture_output=True).stdout


def _patch(tmp_path: Path, files: dict[str, bytes]) -> bytes:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "README.md").write_text("# x\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached", "--binary")


def test_a_key_split_across_two_files_names_both(tmp_path: Path) -> None:
    patch = _patch(tmp_path, {"docs/a.md": f"Part one: {KEY[:36]}\n".encode(),
                              "docs/b.md": f"Part two: {KEY[36:]}\n".encode(),
                              "docs/c.md": b"Nothing here.\n"})
    assert [hit.where for hit in SCAN.patch_hits(patch)] == ["docs/a.md", "docs/b.md"]


def test_a_key_in_a_binary_file_is_found_through_gits_encoding(tmp_path: Path) -> None:
    """git writes a binary file as deflated base85: the key is in no line of the patch."""
    image = b"\x89PNG\r\n\x1a\n" + secrets.token_bytes(3000) + KEY.encode() + b"\0" * 100
    patch = _patch(tmp_path, {"docs/logo.png": image})
    assert b"GIT binary patch" in patch
    assert KEY.encode() not in patch
    assert [str(hit) for hit in SCAN.patch_hits(patch)] == ["docs/logo.png (as it is)"]


def test_a_key_in_a_file_name_is_found(tmp_path: Path) -> None:
    patch = _patch(tmp_path, {f"docs/{KEY.encode().hex()[:40]}.md": b"x\n"})
    assert SCAN.patch_hits(patch)


def test_a_removed_line_holding_the_key_is_no_hit(tmp_path: Path) -> None:
    """Only what the patch adds is handed on."""
    patch = (b"diff --git a/x.md b/x.md\n--- a/x.md\n+++ b/x.md\n@@ -1 +1 @@\n-"
             + KEY.encode() + b"\n+clean\n")
    assert SCAN.patch_hits(patch) == []


def test_a_three_megabyte_text_is_searched_in_linear_time() -> None:
    """Not quadratic: 3 MB of base64-like text (the worst alphabet: nothing is squeezed out)
    in seconds even on a loaded machine (about 0.5 s alone; bench figures in bench/README.md)."""
    import time

    text = secrets.token_urlsafe(3_000_000)
    started = time.perf_counter()
    assert SCAN.find(text) is None
    assert time.perf_counter() - started < 15.0
