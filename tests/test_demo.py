"""`cursor-agent-action demo` runs the real pipeline on the bundled sample, offline."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cursor_agent_action.cli import main
from cursor_agent_action.output_file import parse_output_file

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "cursor_agent_action" / "data"


def test_demo_writes_summary_outputs_transcript_and_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    log = capsys.readouterr().out
    outputs = parse_output_file((out / "outputs.txt").read_text())
    assert outputs["conclusion"] == "success"
    assert json.loads(outputs["files-changed"]) == ["README.md", "docs/usage.md"]
    assert outputs["permission-denials"] == "1"
    assert outputs["transcript-file"] == str(out / "transcript.jsonl")
    assert Path(outputs["result-file"]).read_text().startswith("I'll compare the options")
    # The stand-in replays the bundled transcript, reporting the real workspace as its cwd.
    replayed = (out / "transcript.jsonl").read_text().splitlines()
    bundled = (DATA / "demo-transcript.jsonl").read_text().splitlines()
    assert len(replayed) == len(bundled)
    assert json.loads(replayed[0])["cwd"].endswith("/hello-cli")
    assert replayed[-1] == bundled[-1]
    diff = (out / "changes.diff").read_text()
    assert "+| `--greeting WORD` | the word to greet with (default: `Hello`) |" in diff
    assert "b/hello.py" not in diff  # the docs preset let it edit Markdown only
    summary = (out / "summary.md").read_text()
    assert summary.count("## ✅ Cursor agent: success") == 1
    assert "Permission denials (1)" in summary
    assert f"{out / 'summary.md'}" in log
    # A replay says so: the recorded durations are not this run's.
    assert "Replaying a recorded cursor-agent session" in log
    assert re.search(r"the replay took \d+\.\d s \(recorded: \d+\.\d s\)", log)
    assert "without a write tool" not in summary  # the git cross-check agrees with the tools

    # A second run replaces the files instead of appending to them.
    assert main(["demo", "--out", str(out)]) == 0
    assert (out / "summary.md").read_text().count("## ✅ Cursor agent: success") == 1
    assert len(list((out / "state").glob("result-*.md"))) == 1


def test_wheel_ships_the_demo_data(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d",
                    str(tmp_path)], cwd=ROOT, check=True, capture_output=True, timeout=120)
    [wheel] = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"cursor_agent_action/data/{path.relative_to(DATA)}"
        for path in DATA.rglob("*") if path.is_file()
    }
    assert expected
    assert expected <= names
    assert "cursor_agent_action/standin/__init__.py" in names


def test_summary_and_output_files_can_be_redirected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary, outputs = tmp_path / "step-summary.md", tmp_path / "github-output"
    summary.write_text("earlier step\n")
    assert main(["demo", "--out", str(tmp_path / "d"), "--summary-file", str(summary),
                 "--output-file", str(outputs)]) == 0
    assert summary.read_text().startswith("earlier step\n## ✅ Cursor agent: success")
    assert parse_output_file(outputs.read_text())["conclusion"] == "success"
    assert not (tmp_path / "d" / "summary.md").exists()
    assert str(summary) in capsys.readouterr().out


def _on_a_terminal(argv: list[str], env: dict[str, str], timeout_s: float = 120) -> str:
    """What ``argv`` prints with its stdout on a pseudo-terminal, as a person runs it."""
    import os
    import pty
    import select
    import time

    master, slave = pty.openpty()
    with subprocess.Popen(argv, stdout=slave, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          env=env) as proc:
        os.close(slave)
        chunks = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # the other side closed
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=30)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_on_a_terminal_the_demo_shows_groups_and_warnings_not_workflow_commands(
    tmp_path: Path,
) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}  # no GITHUB_ACTIONS
    out = tmp_path / "demo"
    shown = _on_a_terminal([sys.executable, "-m", "cursor_agent_action", "demo", "--out",
                            str(out)], env)
    assert "Demo finished: conclusion success" in shown, shown
    assert not [line for line in shown.splitlines() if line.startswith("::")], shown
    assert "▸ read hello.py → success" in shown
    assert "warning: permission denied: shell git log" in shown
    readable = out / "outputs.readable.txt"
    assert f"{readable}  (the same, one name=value a line)" in shown
    listed = dict(line.split("=", 1) for line in readable.read_text().splitlines())
    assert listed["conclusion"] == "success"
    assert listed["files-changed"] == '["README.md","docs/usage.md"]'


def test_the_demo_says_why_it_has_no_box_and_that_its_times_are_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run piped (no terminal, not on a runner): the readable outputs are written and listed."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    log = capsys.readouterr().out
    summary = (out / "summary.md").read_text()
    for text in (log, summary):
        assert "No box (isolation: none): the demo replays a recorded session" in text
    about = summary.partition("### About this demo")[2]
    assert re.search(r"The durations above are the recording's: \d+\.\d s; this replay took "
                     r"\d+\.\d s\.", about)
    readable = out / "outputs.readable.txt"
    assert f"{readable}  (the same, one name=value a line)" in log
    assert "conclusion=success" in readable.read_text().splitlines()
