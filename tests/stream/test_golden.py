"""Golden tests: each transcript in tests/fixtures/ -> log, job summary and step outputs.

The expected files live in tests/golden/ (<fixture>.log, .summary.md, .outputs.json). After an
intended change to the log or summary, regenerate them and review the diff:

    UPDATE_GOLDEN=1 python -m pytest tests/test_stream_golden.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.stream.test_summary import DANGEROUS, rendered_markup
from tests.support.stream import FIXTURES, processed_commands, summarize

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
_TOKEN = re.compile(r"\b[0-9a-f]{32}\b")
TRANSCRIPTS = sorted(FIXTURES.glob("*.jsonl"))


def _normalize(text: str) -> str:
    return _TOKEN.sub("<token>", text.replace(str(FIXTURES), "<fixtures>"))


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"{path.name} missing: run UPDATE_GOLDEN=1 python -m pytest {__file__}"
    assert actual == path.read_text(encoding="utf-8"), f"{path.name} differs from golden"


def test_fixtures_exist() -> None:
    assert len(TRANSCRIPTS) >= 10


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda p: p.stem)
def test_golden(transcript: Path, tmp_path: Path) -> None:
    """Log, summary and outputs match the reviewed golden files; the log is injection-safe."""
    run = summarize(tmp_path, transcript)
    processed_commands(run.log)
    outside = rendered_markup(run.summary)
    assert not [marker for marker in DANGEROUS if marker in outside]
    result_file = Path(run.outputs["result-file"])
    assert result_file.parent == run.result_dir
    if "truncated by cursor-agent-action" not in run.outputs["result"]:
        assert result_file.read_text("utf-8") == run.outputs["result"]
    files_file = Path(run.outputs["files-changed-file"])
    assert json.loads(files_file.read_text("utf-8")) == json.loads(run.outputs["files-changed"])
    outputs = dict(run.outputs, **{"result-file": "<result-file>",
                                   "files-changed-file": "<files-changed-file>"})
    assert run.code == (0 if outputs["conclusion"] == "success" else 1)
    _check(GOLDEN / f"{transcript.stem}.log", _normalize(run.log))
    _check(GOLDEN / f"{transcript.stem}.summary.md", _normalize(run.summary))
    dumped = json.dumps({"exit_code": run.code, **outputs}, indent=2, ensure_ascii=False)
    _check(GOLDEN / f"{transcript.stem}.outputs.json", dumped + "\n")
