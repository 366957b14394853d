"""Where the real API key is in the agent's environment, nothing the run hands on carries it in
any form: the agent writes it (encoded, reversed, split across files) into the change, or its
answer, and the run fails with nothing applied, the patch withheld, the transcript emptied and
the answer outputs blank; the messages name the files, never the key (issue 44, item 5)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.support.box import SESSION, Box
from tests.support.box import run as _run

KEY = "crsr_" + "5e8b1d4a7c0f3e6b9d2a5c8f1e4b7d0a3c6f9e2b5d8a1c4f7e0b3d6a9c2f5e8b"
HEX = 'od -An -tx1 | tr -d " \\n"'


@pytest.fixture(autouse=True)
def _real_looking_key(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURSOR_API_KEY", KEY)


def _forms() -> list[str]:
    """What must appear nowhere the run writes: the key and its whole encodings."""
    raw = KEY.encode()
    return [KEY, KEY[5:], KEY[::-1], raw.hex(), base64.b64encode(raw).decode()[8:-8]]


def _shown(out: dict[str, str]) -> str:
    """Everything the run wrote but its ``::add-mask::`` lines (the runner's own, which it
    never shows)."""
    return "\n".join(line for line in "\n".join(out.values()).splitlines()
                     if not line.startswith("::add-mask::"))


def _nothing_shows_the_key(box: Box, out: dict[str, str]) -> None:
    shown = _shown(out)
    if out.get("patch-file"):  # the patch of what reached the real tree: nothing, or no key
        shown += Path(out["patch-file"]).read_text()
    for form in _forms():
        assert form not in shown
    assert out["changed"] == "false"


def test_base64_of_the_key_in_a_docs_page_fails_the_run_and_nothing_is_applied(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    body = ('mkdir -p docs; { echo "# Setup"; printf %s "$CURSOR_API_KEY" | base64; } '
            "> docs/setup.md; echo changed >> README.md")
    out = _run(box, capsys, body, "--preset", "docs")
    assert out["conclusion"] == "failure", out["log"]
    assert "hold the API key, in some form, in docs/setup.md (base64" in out["log"]
    assert "Nothing of it was applied to the working tree." in out["log"]
    assert not (box.workspace / "docs").exists()
    assert (box.workspace / "README.md").read_text() == "# demo\n"
    _nothing_shows_the_key(box, out)


def test_the_key_split_across_two_files_in_hex_names_both(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (f'mkdir -p docs; h=$(printf %s "$CURSOR_API_KEY" | {HEX}); '
            'printf "%s\\n" "$h" | cut -c1-70 > docs/a.md; '
            'printf "%s\\n" "$h" | cut -c71- > docs/b.md')
    out = _run(box, capsys, body, "--preset", "docs")
    assert out["conclusion"] == "failure", out["log"]
    assert "docs/a.md (hex)" in out["log"]
    assert "docs/b.md (hex)" in out["log"]
    assert not (box.workspace / "docs").exists()
    _nothing_shows_the_key(box, out)


def test_the_key_reversed_without_a_box_fails_the_run_and_says_the_tree_holds_it(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """Uncontained, the agent wrote in the real tree: the patch is withheld, and the failure
    says the tree still holds the change."""
    body = 'printf "%s\\n" "$CURSOR_API_KEY" | rev >> README.md'
    out = _run(box, capsys, body, "--preset", "edit", "--isolation", "none")
    assert out["conclusion"] == "failure", out["log"]
    assert "README.md (reversed)" in out["log"]
    assert "The working tree still holds the change" in out["log"]
    _nothing_shows_the_key(box, out)


def test_the_key_in_the_agents_answer_is_withheld_from_every_output(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key, hex-encoded and broken over lines, in the final message: the run fails, the
    transcript is emptied (the workflow uploads it), and the final message is withheld."""
    event = {"type": "assistant", "session_id": SESSION,
             "message": {"role": "assistant", "content": [{"type": "text", "text": "@@"}]}}
    body = (f'h=$(printf %s "$CURSOR_API_KEY" | {HEX} | fold -w 40 | tr "\\n" " "); '
            f"printf '%s\\n' '{json.dumps(event)}' | sed \"s/@@/Here: $h/\"")
    transcript = box.base / "transcript.jsonl"
    out = _run(box, capsys, body, "--preset", "read-only", "--transcript", str(transcript))
    assert out["conclusion"] == "failure", out["log"]
    assert "the transcript (hex)" in out["log"] or "the final message (hex)" in out["log"]
    assert transcript.read_bytes() == b""
    assert "withheld" in out["final-message"]
    # The summary and the outputs (the live log redacts the key's whole forms only: it showed
    # this answer as it came, split; docs/security.md says so).
    written = "\n".join(value for name, value in out.items() if name != "log")
    assert KEY.encode().hex()[10:40] not in written.replace(" ", "")


def test_a_run_whose_outputs_hold_no_key_is_untouched(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not vacuous: the same change without the key comes back."""
    body = 'mkdir -p docs; echo "# Setup" > docs/setup.md'
    out = _run(box, capsys, body, "--preset", "docs")
    assert out["conclusion"] == "success", out["log"]
    assert (box.workspace / "docs/setup.md").read_text() == "# Setup\n"
    assert Path(out["patch-file"]).is_file()
