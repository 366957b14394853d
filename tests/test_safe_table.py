"""docs/follow-ups.md's safe-table recipe, run as documented (bash + jq) on hostile findings:
every cell stays one literal cell of one row."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ("<img src=x onerror=alert(1)> @octocat [x](https://evil.example) ![p](y.png) "
           "www.evil.com \u202eevil\u2066 &#x202E; `code` $x$ **b** # h\nnew | row\r\n|---|---|")


def _recipe() -> str:
    text = (ROOT / "docs" / "follow-ups.md").read_text()
    match = re.search(r"<!-- recipe:safe-table -->\n```sh\n(.*?)```", text, re.S)
    assert match, "the recipe's marker or its sh block is gone"
    return match.group(1)


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_the_documented_program_keeps_hostile_cells_inert(tmp_path: Path) -> None:
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps({"summary": "s", "verdict": "comment", "findings": [
        {"path": "src/a|b.py", "line": 3, "severity": "major", "title": HOSTILE, "body": "b"},
        {"path": "ok.py", "line": 1, "severity": "nit", "title": "x" * 1000, "body": "b"}]}))
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", _recipe()], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "FINDINGS_FILE": str(findings),
                               "RUNNER_TEMP": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "findings-table.md").read_text().splitlines()
    assert table[:2] == ["| Severity | Where | Finding |", "| --- | --- | --- |"]
    assert len(table) == 4  # one row per finding: no newline or pipe starts another
    row = table[2]
    assert re.sub(r"\\\|", "", row).count("|") == 4  # three cells: every other | is escaped
    assert "src\\/a\\|b\\.py:3" in row
    for raw in ("<", "[", "](", "`", "$", "*", "&#"):
        assert re.search(rf"(?<!\\){re.escape(raw[0])}", row) is None, raw
    assert "@octocat" not in row
    assert "@\u200boctocat" in row
    assert "https\\:\u200b\\/\\/evil" in row
    assert "www\u200b\\.evil" in row
    assert "\u202e" not in row
    assert "\u2066" not in row
    assert len(table[3]) < 400  # cut to 300 characters (escapes added)
