"""The single error boundary in ``cli.main`` and lazy loading of heavy dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_action import cli
from cursor_agent_action.errors import EXIT_SETUP, EXIT_USAGE


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cursor_agent_action", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def test_unknown_option_is_one_error_line_with_exit_2_and_no_traceback() -> None:
    proc = run_cli("summarize", "transcript.jsonl", "--no-such-option")
    assert proc.returncode == EXIT_USAGE
    assert "Traceback" not in proc.stdout + proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1
    assert "--no-such-option" in errors[0]


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == EXIT_USAGE
    assert "COMMAND" in capsys.readouterr().out


def test_every_command_has_a_module_with_configure_and_command() -> None:
    import importlib

    for name, (module_name, _help) in cli.COMMANDS.items():
        module = importlib.import_module(module_name)
        assert callable(module.configure), name
        assert callable(module.command), name


def test_api_key_is_masked_before_anything_else() -> None:
    import os

    env = dict(os.environ, CURSOR_API_KEY="key_live_0123456789")
    proc = run_cli("summarize", "--no-such-option", env=env)
    assert proc.stdout.splitlines()[0] == "::add-mask::key_live_0123456789"


def test_a_secret_that_is_not_utf8_is_masked_as_its_own_bytes(tmp_path: Path) -> None:
    """An environment value with a stray byte (a mask-env variable holding binary data) once
    stopped the helper with a traceback before its error boundary; its mask is now written as
    the very bytes any other program would print, and the run goes on."""
    import os

    env = {**os.environb, b"CURSOR_API_KEY": b"key\xfflive-0123456789"}
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b'{"type":"result","subtype":"success","result":"ok"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "cursor_agent_action", "summarize", str(transcript),
         "--result-dir", str(tmp_path)],
        capture_output=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert b"Traceback" not in proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == b"::add-mask::key\xfflive-0123456789"
    assert proc.returncode == 0


@pytest.mark.parametrize("command", ["summarize", "permissions", "run", "demo"])
def test_commands_without_github_work_do_not_import_pygithub_or_httpx(command: str) -> None:
    code = (
        "import sys\n"
        "from cursor_agent_action import cli\n"
        f"cli.build_parser({command!r})\n"
        "heavy = [m for m in ('github', 'httpx') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip() == ""


def test_unwritable_output_file_is_a_setup_error_not_a_traceback(tmp_path: Path) -> None:
    proc = run_cli(
        "permissions",
        "--working-directory",
        str(tmp_path),
        "--output-file",
        str(tmp_path / "missing-dir" / "output"),
    )
    assert proc.returncode == EXIT_SETUP
    assert "Traceback" not in proc.stdout + proc.stderr
    [error] = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert "missing-dir" in error
    assert "writable file" in error


def test_usage_hint_names_the_command_without_a_stray_space() -> None:
    proc = run_cli("--bogus")
    assert "Run 'cursor-agent-action --help'" in proc.stdout


def test_extra_args_with_a_dash_value_reaches_the_refusal_table() -> None:
    """`run --extra-args --force` is refused by extra-args' own rule, not by argparse."""
    proc = run_cli("run", "--prompt", "x", "--extra-args", "--force")
    assert proc.returncode == EXIT_USAGE
    assert "extra-args: --force is refused" in proc.stdout
    assert "expected one argument" not in proc.stdout


@pytest.mark.parametrize(("args", "tip"), [
    (("--permissions", "docs"), "--permissions is the action input permissions; here it is "
                                "--preset."),
    (("--cli-path=/x",), "--cli-path is the action input cli-path; here it is --agent-bin."),
    (("--api-key", "k"), "here it is the CURSOR_API_KEY environment variable."),
    (("--timout-minutes", "3"), "--timout-minutes: did you mean --timeout-minutes?"),
])
def test_an_input_name_or_a_near_miss_as_a_flag_gets_the_flag_meant(
    args: tuple[str, ...], tip: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert cli.main(["run", "--prompt", "x", *args]) == EXIT_USAGE
    out = capsys.readouterr().out
    assert tip in out
    assert out.count("\n") == 1  # still one line
    assert "Run 'cursor-agent-action run --help'." in out


def test_a_flag_far_from_any_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--prompt", "x", "--zzzz"]) == EXIT_USAGE
    out = capsys.readouterr().out
    assert "did you mean" not in out
    assert "is the action input" not in out
