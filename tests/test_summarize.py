"""The `summarize` command end to end: exit codes, stdin, env defaults, no GitHub env."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_action.output_file import parse_output_file
from tests.support.stream import FIXTURES, processed_commands, summarize


def test_exit_codes_follow_the_conclusion(tmp_path: Path) -> None:
    assert summarize(tmp_path, FIXTURES / "docs-update.jsonl").code == 0
    failed = summarize(tmp_path, FIXTURES / "adversarial-cutoff.jsonl")
    assert failed.code == 1
    assert failed.outputs["conclusion"] == "failure"


def test_missing_transcript_is_a_usage_error(tmp_path: Path) -> None:
    run = summarize(tmp_path, tmp_path / "missing.jsonl")
    assert run.code == 2
    assert run.outputs == {}
    assert "::error title=invalid input::transcript" in run.log
    assert "does not exist. Fix: pass the path of a file saved from" in run.log


def test_a_binary_file_is_refused_with_one_clear_error(tmp_path: Path) -> None:
    """Not thousands of malformed lines with control bytes: one error naming the file."""
    binary = tmp_path / "core.dump"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    run = summarize(tmp_path, binary)
    assert run.code == 2
    [error] = [line for line in run.log.splitlines() if line.startswith("::error")]
    assert "core.dump is binary data, not a stream-json transcript." in error
    assert "Fix: Pass the file saved from cursor-agent --output-format stream-json" in error
    assert not [c for c in run.log if ord(c) < 32 and c != "\n"]


def test_bad_option_is_a_usage_error(tmp_path: Path) -> None:
    assert summarize(tmp_path, FIXTURES / "docs-update.jsonl", "--no-such-flag").code == 2


def test_env_var_turns_on_verbose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = summarize(tmp_path, FIXTURES / "docs-update.jsonl")
    assert "@@ -8 +8 @@" not in quiet.log
    monkeypatch.setenv("CURSOR_AGENT_ACTION_VERBOSE", "true")
    verbose = summarize(tmp_path, FIXTURES / "docs-update.jsonl")
    assert "@@ -8 +8 @@" in verbose.log  # edit diffs are shown in verbose mode
    flag_wins = summarize(tmp_path, FIXTURES / "docs-update.jsonl", "--no-verbose")
    assert "@@ -8 +8 @@" not in flag_wins.log
    monkeypatch.setenv("CURSOR_AGENT_ACTION_VERBOSE", "  ")  # a sub-action passes empty inputs
    assert "@@ -8 +8 @@" not in summarize(tmp_path, FIXTURES / "docs-update.jsonl").log


@pytest.mark.parametrize("value", ["maybe", "on", "ture"])
def test_bad_verbose_env_var_is_a_usage_error_like_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Not silently false: the same clear refusal as `run` gives, and nothing is written."""
    monkeypatch.setenv("CURSOR_AGENT_ACTION_VERBOSE", value)
    run = summarize(tmp_path, FIXTURES / "docs-update.jsonl")
    assert run.code == 2
    assert run.outputs == {}
    assert (
        f"::error title=invalid input::verbose must be true or false, not '{value}' "
        "(from CURSOR_AGENT_ACTION_VERBOSE)."
    ) in run.log


def test_result_dir_defaults_to_runner_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "rt"))
    out = tmp_path / "out"
    code = subprocess.run(
        [sys.executable, "-m", "cursor_agent_action", "summarize",
         str(FIXTURES / "corpus-usage.jsonl"), "--output-file", str(out)],
        capture_output=True, check=False,
    ).returncode  # fmt: skip
    assert code == 0
    result_file = Path(parse_output_file(out.read_text())["result-file"])
    assert result_file.parent == tmp_path / "rt" / "cursor-agent-action"
    monkeypatch.setenv("CURSOR_AGENT_ACTION_RESULT_DIR", str(tmp_path / "chosen"))
    run = summarize(tmp_path, FIXTURES / "corpus-usage.jsonl")
    assert Path(run.outputs["result-file"]).parent == run.result_dir  # the flag wins
    subprocess.run([sys.executable, "-m", "cursor_agent_action", "summarize",
                    str(FIXTURES / "corpus-usage.jsonl"), "--output-file", str(out)],
                   capture_output=True, check=True)  # fmt: skip
    result_file = Path(parse_output_file(out.read_text())["result-file"])
    assert result_file.parent == tmp_path / "chosen"


def test_stdin_and_no_github_environment(tmp_path: Path) -> None:
    """`-` reads stdin; outside GitHub the log still prints (secrets redacted, never named in
    a mask command) and no file is written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env["CURSOR_API_KEY"] = "key-that-appears-in-the-stream"
    data = (
        (FIXTURES / "docs-update.jsonl")
        .read_bytes()
        .replace(b"GPT-5.4 Mini Low", b"key-that-appears-in-the-stream")
    )
    proc = subprocess.run(
        [sys.executable, "-m", "cursor_agent_action", "summarize", "-"],
        input=data, capture_output=True, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    log = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    # No runner reads ::add-mask:: here: the line would only print the key (to a pipe, a file).
    assert "::add-mask::" not in log
    assert "key-that-appears-in-the-stream" not in log
    assert "***" in log
    assert "Updated the docs" in log
    processed_commands(log)
    assert list(tmp_path.iterdir()) == []
    assert proc.stderr == b""


def test_control_bytes_and_mid_line_log_commands_never_reach_the_log(tmp_path: Path) -> None:
    """A transcript (or a binary file) holding raw control bytes, a CR before ``##[error]`` and
    very long lines: the log has no raw control byte, nothing the runner would take as a
    command, and no line over 64 KiB."""
    text = "bell \\u0007 esc \\u001b[31m red\\r##[error]fake ::warning::x \\u009b c1 "
    say = ('{"type":"assistant","message":{"content":[{"type":"text","text":"' + text
           + "z" * 200_000 + '"}]},"session_id":"s"}')  # fmt: skip
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(say.encode() + b"\n\x1b[2J\x07raw bytes ##[group] \x00\xff\xfe\n"
                           + bytes(range(256)) + b"\n")  # fmt: skip
    run = summarize(tmp_path, transcript)
    allowed = {"\n", "\t"}
    assert not [c for c in run.log if (ord(c) < 32 or 0x7F <= ord(c) <= 0x9F) and c not in allowed]
    assert max(len(line.encode()) for line in run.log.splitlines()) <= 64 * 1024
    processed_commands(run.log)  # raises on any command that is not ours
    assert "\\x1b[31m red\\x0d#" in run.log  # shown, escaped
