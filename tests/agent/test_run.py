"""`cursor-agent-action run` against the stand-in CLI: invocation, environment, policy,
conclusions, failure explanations, retries and the git cross-check."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent import run as agent_run
from cursor_agent_action.agent.contain import process
from cursor_agent_action.agent.guards import cli_sandbox
from cursor_agent_action.agent.guards.permissions import build_policy
from cursor_agent_action.agent.launch.invocation import SHARE_VARIABLE
from cursor_agent_action.cli import main
from cursor_agent_action.errors import EXIT_SETUP, SetupError
from cursor_agent_action.output_file import parse_output_file
from tests.support.agent_run import (
    API_KEY,
    CREDENTIALS,
    INIT,
    RESULT,
    SAY,
    SESSION,
    Run,
    event,
    make_workspace,
    run,
    tool,
)
from tests.support.clock import HeldClock, has_line
from tests.support.standin import make_standin, records, wait_group_gone
from tests.support.users import TEST_AGENT_USER

pytestmark = pytest.mark.usefixtures("run_env")


# The stand-in lists --sandbox: the run passes the mode this machine's check gives.
SANDBOX = ["--sandbox", cli_sandbox.sandbox_mode(cli_sandbox.probe(), listed=True)]

def test_success_invocation_outputs_and_transcript(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {})
    assert result.code == 0
    assert result.outputs["conclusion"] == "success"
    assert result.outputs["session-id"] == SESSION
    assert result.outputs["final-message"] == "All done."
    [entry] = result.runs
    assert entry["argv"] == ["-p", "--output-format", "stream-json", *SANDBOX, "--trust", "--",
                             "Update the docs."]
    assert entry["stdin"] == ""  # stdin closed
    assert entry["cwd"] == str(workspace)
    transcript = Path(result.outputs["transcript-file"])
    assert transcript.parent.parent == tmp_path / "runner-temp" / "cursor-agent-action"
    assert transcript.parent.name.startswith("run-")
    assert json.loads(transcript.read_text().splitlines()[0])["cwd"] == str(workspace)
    assert "All done." in result.summary


def test_policy_in_place_during_the_run_and_no_force_when_read_only(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {}, "--preset", "docs", "--deny", "Shell(rm)")
    [entry] = result.runs
    policy = build_policy("docs", deny=["Shell(rm)"])
    assert entry["cli_json"] == policy.render().decode()
    assert "--force" in entry["argv"]  # docs writes Markdown
    assert not (workspace / ".cursor").exists()  # there was none before
    read_only = run(tmp_path, workspace, capsys, {}, "--preset", "read-only")
    assert "--force" not in read_only.runs[-1]["argv"]


def test_model_and_resume_are_passed_before_the_prompt(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {}, "--model", "gpt-5", "--resume", "chat-1",
                 prompt="--help me; -p")
    assert result.runs[0]["argv"] == [
        "-p", "--output-format", "stream-json", *SANDBOX, "--model", "gpt-5", "--resume",
        "chat-1", "--trust", "--", "--help me; -p",
    ]
    assert result.code == 0


def test_trust_is_left_out_for_builds_that_reject_it_when_writes_are_allowed(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--force (a preset that writes) trusts the workspace on every build."""
    result = run(tmp_path, workspace, capsys, {"reject_trust": True}, "--preset", "docs")
    assert result.code == 0
    assert "--trust" not in result.runs[0]["argv"]
    assert "--force" in result.runs[0]["argv"]


def test_a_read_only_run_on_a_build_without_trust_fails_before_the_agent_starts(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Builds from about May to July 2026 have no --trust and stop a read-only run at
    'Workspace Trust Required': the run fails at once, naming the versions and the fix."""
    result = run(tmp_path, workspace, capsys, {"reject_trust": True})
    assert result.code == 3
    assert result.runs == []  # only the --help probe ran
    [error] = [line for line in result.log.splitlines() if line.startswith("::error")]
    assert "has no --trust option: builds from about May to July 2026" in error
    assert "Fix: Use a CLI version with --trust" in error


def test_environment_is_allowlisted(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JAVA_HOME", "/opt/java")
    monkeypatch.setenv("OTHER_SECRET", "other")
    result = run(tmp_path, workspace, capsys, {}, "--pass-env", "JAVA_HOME")
    entry = result.runs[0]
    env = entry["env"]
    # Contained behind the wall, the relay holds the key: the agent's is a placeholder of its
    # shape (tests/agent/test_box_credentials.py).
    assert env["CURSOR_API_KEY"] != API_KEY
    assert len(env["CURSOR_API_KEY"]) == len(API_KEY)
    assert env["CURSOR_API_KEY"].startswith("key_test_")
    assert env["LC_ALL"] == "C.UTF-8"
    assert env["JAVA_HOME"] == "/opt/java"
    assert env["CURSOR_CONFIG_DIR"].startswith(str(tmp_path / "runner-temp"))
    for name in [*CREDENTIALS, "OTHER_SECRET", "RUNNER_TEMP"]:
        assert name not in env
    everything = json.dumps(entry)
    for secret in [*CREDENTIALS.values(), "other"]:
        assert secret not in everything
    assert API_KEY not in json.dumps(entry["argv"])
    assert all(line.startswith("::add-mask::") for line in result.log.splitlines()
               if API_KEY in line)


def test_options_come_from_env_vars_and_flags_win(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {"MODEL": "sonnet-4.5", "RESUME": "chat-9", "PERMISSIONS": "edit",
                        "DENY": "Shell(rm)\nShell(make)", "FAIL_ON_ERROR": "false",
                        "PROMPT": "from env"}.items():
        monkeypatch.setenv(f"CURSOR_AGENT_ACTION_{name}", value)
    result = run(tmp_path, workspace, capsys, {"crash": {"after": 1, "exit_code": 1}},
                 "--model", "gpt-5", prompt=None)
    [entry] = result.runs
    assert entry["argv"] == ["-p", "--output-format", "stream-json", *SANDBOX, "--force",
                             "--model", "gpt-5", "--resume", "chat-9", "--trust", "--",
                             "from env"]
    assert entry["cli_json"] == build_policy("edit", deny=["Shell(rm)", "Shell(make)"]).render(
        ).decode()
    assert result.outputs["conclusion"] == "failure"
    assert result.code == 0  # fail-on-error false from the env
    monkeypatch.setenv("CURSOR_AGENT_ACTION_FAIL_ON_ERROR", "maybe")
    refused = run(tmp_path, workspace, capsys, {}, prompt=None)
    assert refused.code == 2
    assert "fail-on-error must be true or false, not 'maybe'" in refused.log


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "INPUT_API_KEY", "ACTIONS_RUNTIME_TOKEN", "1X"])
def test_pass_env_refuses_runner_credentials(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    result = run(tmp_path, workspace, capsys, {}, "--pass-env", name)
    assert result.code == 2
    assert f"pass-env: {name}" in result.log or f"pass-env: '{name}'" in result.log
    assert result.runs == []


def test_prompt_over_100_kib_goes_through_a_file(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = "-" + "Explain every module in detail. " * 9600  # ~300 KiB, starts with "-"
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(prompt)
    result = run(tmp_path, workspace, capsys, {}, "--prompt-file", str(prompt_file), prompt=None)
    assert result.code == 0
    argv = result.runs[0]["argv"]
    assert argv[-2] == "--"
    assert len(argv[-1]) < 400
    [path] = [word for word in argv[-1].split() if word.startswith("/")]
    assert Path(path).read_text() == prompt
    assert Path(path).parent.parent == tmp_path / "runner-temp" / "cursor-agent-action"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        ([], 2, "no prompt given"),
        (["--prompt", "a", "--prompt-file", "p.txt"], 2, "both a prompt and a prompt file"),
        (["--prompt-file", "/nonexistent/p.txt"], 2, "prompt-file: cannot read /nonexistent/p.txt"),
        (["--prompt", "   "], 2, "no prompt given"),
        (["--prompt", "a", "--timeout-minutes", "soon"], 2, "timeout-minutes must be a number"),
        (["--prompt", "a", "--timeout-minutes", "0"], 2,
         "--timeout-minutes must be a number above 0, not '0'."),
        (["--prompt", "a", "--preset", "yolo"], 2, "unknown permissions preset"),
        (["--prompt", "a", "--allow", "Shell(git)"], 2, "cannot allow 'Shell(git)'"),
        (["--prompt", "a", "--max-retries", "-1"], 2, "max-retries must be a whole number"),
        (["--prompt", "a", "--max-retries", "11"], 2, "from 0 to 10"),
        (["--prompt", "a", "--model", "gpt\n::warning::x"], 2,
         "--model contains a control character"),
        (["--prompt", "a", "--resume", "abc\rdef"], 2, "--resume contains a control character"),
        (["--prompt", "a", "--model", "gpt\x7f"], 2, "--model contains a control character"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    *, args: list[str], code: int, message: str,
) -> None:
    result = run(tmp_path, workspace, capsys, {}, *args, prompt=None)
    assert result.code == code
    assert message in result.log
    assert "::error" in result.log
    assert "Fix:" in result.log
    assert result.runs == []
    assert result.outputs == {}


def test_missing_working_directory_and_agent(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = run(tmp_path, tmp_path / "nope", capsys, {})
    assert missing.code == 3
    assert "does not exist" in missing.log
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    code = main(["run", "--prompt", "x", "--working-directory", str(workspace)])
    assert code == 3
    assert "the Cursor CLI was not found (cursor-agent or agent on PATH)" in capsys.readouterr().out


def test_unusable_transcript_or_agent_is_a_setup_error(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("")
    bad_path = run(tmp_path, workspace, capsys, {}, "--transcript",
                   str(tmp_path / "a-file" / "t.jsonl"))
    assert bad_path.code == 3
    assert "cannot create the transcript file" in bad_path.log
    assert not (workspace / ".cursor").exists()  # the policy file was restored (removed)
    not_executable = tmp_path / "cursor-agent"
    not_executable.write_text("#!/bin/sh\n")
    code = main(["run", "--prompt", "x", "--agent-bin", str(not_executable),
                 "--working-directory", str(workspace)])
    assert code == 3
    assert f"--agent-bin: {not_executable} is not an executable file" in capsys.readouterr().out


def test_transcript_write_failure_does_not_stop_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {}, "--transcript", "/dev/full")
    assert result.code == 0
    assert result.outputs["conclusion"] == "success"
    assert "Writing the transcript file failed (No space left on device)" in result.summary


def test_pre_existing_cli_json_is_restored_byte_for_byte(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = b'{"permissions": {"allow": ["Shell(*)", "Write(**)"]}}\r\n'
    (workspace / ".cursor").mkdir()
    (workspace / ".cursor" / "cli.json").write_bytes(original)
    result = run(tmp_path, workspace, capsys, {})
    assert result.code == 0
    assert result.runs[0]["cli_json"] == build_policy("read-only").render().decode()
    assert (workspace / ".cursor" / "cli.json").read_bytes() == original
    assert json.loads(result.outputs["files-changed"]) == []


def test_tampering_with_cli_json_fails_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = b'{"version": 1}\n'
    (workspace / ".cursor").mkdir()
    (workspace / ".cursor" / "cli.json").write_bytes(original)
    tamper = '{"permissions": {"allow": ["Shell(*)"]}}'
    # Uncontained: contained, the agent cannot write .cursor/ at all (test_containment).
    result = run(tmp_path, workspace, capsys, {"tamper": tamper}, "--isolation", "none")
    assert result.code == 1
    assert result.outputs["conclusion"] == "failure"
    assert "::error title=cursor-agent%3A failure::.cursor/cli.json was changed" in result.log
    assert "cli.json was changed during the run" in result.summary.replace("\\", "")
    assert (workspace / ".cursor" / "cli.json").read_bytes() == original


KNOWN_STDERR = [
    ("Authentication required. Please run 'cursor-agent login' first, or set CURSOR_API_KEY.",
     "authentication failed", "api-key input"),
    ("Cannot use this model: gpt-9. Available models: auto, sonnet-4.5, gpt-5",
     "unknown model", "leave the model input empty"),
    ("Named models unavailable. Free plans can only use Auto.",
     "named models need a paid plan", "paid plan"),
    ("You've hit your usage limit. Upgrade to Pro or wait until it resets.",
     "usage limit reached", "raise it in the Cursor dashboard"),
    ("Workspace Trust Required: Pass --trust, --yolo, or -f to trust this directory.",
     "workspace trust required", "--trust"),
    ("Error: [resource_exhausted] Rate limit exceeded. Try again later.",
     "resource exhausted", "plan or quota limit"),
    ("Error: 429 Too Many Requests", "rate limited", "concurrency group"),
    ("ConnectError: [unavailable] upstream connect error", "Cursor API unavailable",
     "status.cursor.com"),
]


@pytest.mark.parametrize(("stderr", "title", "hint"), KNOWN_STDERR)
def test_known_cli_failures_are_explained(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    *, stderr: str, title: str, hint: str,
) -> None:
    scenario = {"crash": {"after": 1, "stderr": stderr, "exit_code": 1}}
    result = run(tmp_path, workspace, capsys, scenario, "--max-retries", "0")
    assert result.code == 1
    assert result.outputs["conclusion"] == "failure"
    [error] = [line for line in result.log.splitlines() if line.startswith("::error")]
    assert f"cursor-agent failed: {title}." in error
    assert hint in error
    assert stderr.split(":", maxsplit=1)[0] in result.summary.replace("\\", "")
    assert len(result.runs) == 1


def test_transient_failure_before_any_tool_is_retried(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"fail_first": {"times": 2, "counter": "count", "stderr": "[unavailable] try again"}}
    result = run(tmp_path, workspace, capsys, scenario, "--max-retries", "2")
    assert result.code == 0
    assert result.outputs["conclusion"] == "success"
    assert len(result.runs) == 3
    assert result.log.count("::warning title=transient failure::") == 2


def test_retries_are_bounded(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {"fail_first": {"times": 9, "counter": "count", "stderr": "429 Too Many Requests"}}
    result = run(tmp_path, workspace, capsys, scenario, "--max-retries", "1")
    assert result.code == 1
    assert len(result.runs) == 2
    assert "rate limited" in result.outputs.get("conclusion", "") + result.log


def test_transient_failure_after_a_tool_call_is_not_retried(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [INIT, tool("started", "c1", "shellToolCall", {"command": "ls"}), SAY, RESULT]
    scenario = {"lines": lines, "crash": {"after": 2, "stderr": "[unavailable]", "exit_code": 1}}
    result = run(tmp_path, workspace, capsys, scenario, "--max-retries", "2")
    assert result.code == 1
    assert len(result.runs) == 1


@pytest.mark.parametrize(
    ("crash", "args", "code", "message"),
    [
        ({"after": 2, "exit_code": 0}, [], 1,
         "exited with code 0 but never sent its final result event"),
        ({"after": 2, "signal": 9}, [], 1, "killed by SIGKILL"),
        # --no-fail-on-error: still a failure in the report, but the step passes.
        ({"after": 1, "exit_code": 2}, ["--no-fail-on-error"], 0,
         "exited with code 2 without a final result event"),
    ],
    ids=["exit-0-without-result", "kill-9", "no-fail-on-error"],
)
def test_end_without_result_is_a_failure(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    *, crash: dict[str, int], args: list[str], code: int, message: str,
) -> None:
    result = run(tmp_path, workspace, capsys, {"crash": crash}, *args)
    assert result.code == code
    assert result.outputs["conclusion"] == "failure"
    assert message in result.log


def test_hang_ends_in_timeout_and_restores_the_policy_file(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deadline (0.3 s) counts from the stand-in's recorded start, not from the run's: on a
    loaded machine the box and the stand-in took longer than that to start, the run timed out
    before the stand-in recorded anything, and there was no process group to check."""
    clock = HeldClock(has_line(tmp_path / "standin" / "record.jsonl"))
    monkeypatch.setattr(process, "time", clock)
    scenario = {"hang_after": 1, "spawn_child": True}
    result = run(tmp_path, workspace, capsys, scenario, "--timeout-minutes", "0.005")
    assert result.code == 1
    assert result.outputs["conclusion"] == "timeout"
    assert "did not finish within 0.005 minutes" in result.log
    assert not (workspace / ".cursor").exists()
    assert wait_group_gone(result.runs[0]["pgid"]) == []


def test_linger_after_result_still_succeeds_soon(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {"linger_s": 120, "spawn_child": True})
    assert result.code == 0
    assert result.outputs["conclusion"] == "success"
    assert "kept running after its result event and was stopped" in result.summary
    assert wait_group_gone(result.runs[0]["pgid"]) == []


def test_slow_drip_is_logged_and_summarised(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {"drip_ms": 60})
    assert result.code == 0
    assert "All done." in result.log


def test_git_status_cross_check(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written = f"{INIT['cwd']}/docs/guide.md"
    lines = [
        INIT,
        tool("started", "w1", "writeToolCall", {"path": written, "fileText": "# guide\n"}),
        tool("completed", "w1", "writeToolCall", {"path": written, "fileText": "# guide\n"},
              {"success": {"path": written, "linesCreated": 1, "fileSize": 8}}),
        SAY, RESULT,
    ]
    # The stand-in writes docs/guide.md for real (as the tool said) plus a file "through the
    # shell"; it leaves out nothing the tool reported, except unseen.md below.
    scenario = {"lines": lines, "edits": {"docs/guide.md": "# guide\n", "build/out.txt": "x"}}
    result = run(tmp_path, workspace, capsys, scenario)
    assert json.loads(result.outputs["files-changed"]) == ["build/out.txt", "docs/guide.md"]
    assert "without a write tool (e.g. through the shell): build/out.txt" in result.summary.replace(
        "\\", "")
    lines[1:3] = [
        tool("completed", "w2", "writeToolCall", {"path": f"{INIT['cwd']}/unseen.md"},
              {"success": {"path": f"{INIT['cwd']}/unseen.md"}}),
    ]
    mismatch = run(tmp_path, workspace, capsys, {"lines": lines})
    # files-changed is what the patch holds: a write the tree does not show is only a note.
    assert json.loads(mismatch.outputs["files-changed"]) == []
    assert mismatch.outputs["changed"] == "false"
    assert "show no change in the working tree" in mismatch.summary


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses file names not in UTF-8")
def test_a_changed_file_name_that_is_not_utf8_is_reported(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "\udcff" is how Python names the byte 0xff of a file name (surrogateescape).
    result = run(tmp_path, workspace, capsys, {"edits": {"bad\udcff.txt": "x"}})
    assert json.loads(result.outputs["files-changed"]) == ["bad\ufffd.txt"]
    assert "bad\ufffd.txt" in result.summary


def test_files_dirty_before_the_run_count_only_if_the_agent_changed_them(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workspace / "README.md").write_text("# edited by an earlier step\n")
    (workspace / "notes.txt").write_text("untracked, from an earlier step\n")
    (workspace / "sub").mkdir()
    # A workspace below the repository root: paths are relative to the workspace.
    nested = run(tmp_path, workspace / "sub", capsys, {"edits": {"x.txt": "x"}})
    assert json.loads(nested.outputs["files-changed"]) == ["x.txt"]
    again = run(tmp_path, workspace, capsys,
                {"edits": {"README.md": "# edited again by the agent\n"}})
    assert json.loads(again.outputs["files-changed"]) == ["README.md"]


def test_changes_outside_the_policy_fail_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --force only the deny list binds the CLI, so the allow list is checked afterwards."""
    allowed = run(tmp_path, workspace, capsys, {"edits": {"docs/guide.md": "# guide\n"}},
                  "--preset", "docs")
    assert allowed.code == 0
    assert allowed.outputs["conclusion"] == "success"
    subprocess.run(["git", "clean", "-fdq"], cwd=workspace, check=True)
    outside = run(tmp_path, workspace, capsys,
                  {"edits": {"docs/guide.md": "# guide\n", "src/app.py": "x = 1\n"}},
                  "--preset", "docs")
    assert outside.code == 1
    assert outside.outputs["conclusion"] == "failure"
    assert "the docs policy does not allow writing: src/app.py" in outside.log
    assert "docs/guide.md" not in outside.log.split("does not allow writing")[1]
    widened = run(tmp_path, workspace, capsys, {"edits": {"src/data.json": "{}\n"}},
                  "--preset", "docs", "--allow", "Write(src/**)")
    assert widened.outputs["conclusion"] == "success"


@pytest.mark.parametrize("path", ["docs/.Cursor/hooks.json", "docs/AGENTS.md",
                                  "docs/\uff0eclaude/settings.json", "docs/api/.mcp.json"])
def test_a_protected_name_at_depth_in_any_form_fails_the_run_though_docs_allow_it(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], path: str
) -> None:
    """docs allows ``docs/**`` and ``**/*.md``; the check after the run still refuses the
    agent's configuration and instruction files there, case-folded and normalized."""
    result = run(tmp_path, workspace, capsys, {"edits": {path: "{}\n"}}, "--preset", "docs")
    assert result.outputs["conclusion"] == "failure"
    if "Isolation: contained" in result.log:  # it stays in the box: the tree never has it
        assert f"protected file(s) (the CLI's, git's or the workflows' configuration): {path}" \
            in result.log
        assert not (workspace / path).exists()
    else:
        assert f"the docs policy does not allow writing: {path}" in result.log


def _script_agent(tmp_path: Path, body: str) -> Path:
    """An agent that runs ``body`` in the workspace, then ends like the CLI (init + result)."""
    lines = "\n".join(json.dumps(event) for event in (INIT, SAY, RESULT))
    agent = tmp_path / "script-agent"
    agent.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = --help ] && { echo "  --trust"; exit 0; }; done\n'
        f"{body}\n"
        f"cat <<'EOF'\n{lines}\nEOF\n"
    )
    agent.chmod(0o755)
    return agent


def _run_script(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], body: str,
    *args: str,
) -> Run:
    output = tmp_path / "outputs.txt"
    output.unlink(missing_ok=True)
    argv = ["run", "--agent-bin", str(_script_agent(tmp_path, body)), "--working-directory",
            str(workspace), "--output-file", str(output), "--summary-file", os.devnull,
            "--prompt", "Look around.", "--timeout-minutes", "1", *args]
    code = main(argv)
    return Run(code=code, outputs=parse_output_file(output.read_text()), summary="",
               log=capsys.readouterr().out, workspace=workspace, tmp=tmp_path)


def test_links_to_devices_and_fifos_do_not_hang_the_git_cross_check(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """git lists an untracked link or fifo as a file; reading it would block forever."""
    result = _run_script(tmp_path, workspace, capsys,
                         "ln -s /dev/zero zero.txt && mkfifo pipe && ln -s missing dangling")
    assert result.outputs["conclusion"] == "failure"  # read-only: these are writes
    # A link out of the repository fails the run, and nothing of it comes back.
    assert "zero.txt -> /dev/zero (leaves the repository)" in result.log
    assert json.loads(result.outputs["files-changed"]) == []


def _fsmonitor_config(tmp_path: Path) -> tuple[Path, str]:
    """A git config section whose core.fsmonitor hook writes the returned marker if run."""
    marker = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    hook.chmod(0o755)
    return marker, f"[core]\n\tfsmonitor = {hook}\n"


def test_planted_git_config_never_runs_and_is_restored(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """core.fsmonitor in .git/config or ~/.gitconfig would run a command in our git status,
    with the step's environment (tokens included)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    marker, planted = _fsmonitor_config(tmp_path)
    config = workspace / ".git" / "config"
    original = config.read_bytes()
    plant = f"printf '{planted}' >> .git/config; printf '{planted}' >> $HOME/.gitconfig"
    # The second wall, uncontained (contained, neither file can be written: test_containment).
    result = _run_script(tmp_path, workspace, capsys, plant, "--isolation", "none")
    assert not marker.exists()
    assert config.read_bytes() == original
    assert result.outputs["conclusion"] == "failure"
    assert "changed the repository's git configuration" in result.log


def test_planted_config_of_a_linked_worktree_s_repository_is_restored(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A workspace that is a linked worktree (``git worktree add``): its git dir
    (.git/worktrees/NAME) has no ``config``; git reads the one in the common dir, where
    core.fsmonitor would run in every later git step of the job. That is the file to guard."""
    linked = tmp_path / "linked"
    subprocess.run(["git", "-C", str(workspace), "worktree", "add", "-q", "--detach",
                    str(linked)], check=True)
    marker, planted = _fsmonitor_config(tmp_path)
    common = workspace / ".git" / "config"
    original = common.read_bytes()
    result = _run_script(tmp_path, linked, capsys, f"printf '{planted}' >> {common}",
                         "--isolation", "none")
    assert not marker.exists()
    assert common.read_bytes() == original
    assert result.outputs["conclusion"] == "failure"
    assert "changed the repository's git configuration" in result.log


def test_outside_git_files_changed_are_the_tools_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    result = run(tmp_path, plain, capsys, {"edits": {"made-by-shell.txt": "x"}})
    assert result.code == 0
    assert json.loads(result.outputs["files-changed"]) == []
    assert "is not a git work tree" in result.log


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_helper_cancels_and_still_reports(
    tmp_path: Path, workspace: Path, signum: int
) -> None:
    """A real helper process gets SIGTERM or SIGINT mid-run (job cancelled)."""
    agent = make_standin(tmp_path, {"lines": [INIT, SAY, RESULT], "hang_after": 1,
                                    "spawn_child": True, "record": "record.jsonl"})
    output, summary = tmp_path / "outputs.txt", tmp_path / "summary.md"
    env = {"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path / "rt"), "HOME": str(tmp_path),
           "CURSOR_AGENT_ACTION_AGENT_USER": TEST_AGENT_USER,
           SHARE_VARIABLE: str(tmp_path / "standin")}
    transcript = tmp_path / "transcript.jsonl"
    with subprocess.Popen(
        [sys.executable, "-m", "cursor_agent_action", "run",
         "--prompt", "go", "--agent-bin", str(agent), "--working-directory", str(workspace),
         "--transcript", str(transcript), "--output-file", str(output),
         "--summary-file", str(summary)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    ) as helper:
        _wait_for(lambda: transcript.exists() and transcript.stat().st_size > 0)
        assert (workspace / ".cursor" / "cli.json").exists()
        helper.send_signal(signum)
        log = helper.communicate(timeout=20)[0].decode()
    assert helper.returncode == 1
    outputs = parse_output_file(output.read_text())
    assert outputs["conclusion"] == "cancelled"
    assert outputs["transcript-file"] == str(transcript)
    assert "cancelled" in summary.read_text()
    assert "::error title=cursor-agent%3A cancelled::" in log
    assert not (workspace / ".cursor").exists()
    assert wait_group_gone(records(tmp_path)[-1]["pgid"]) == []


def _wait_for(condition: Any, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def test_replays_the_docs_update_fixture_with_real_file_changes(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A realistic session end to end: the write/edit tools really change the files, so the
    git cross-check agrees with the tools and reports no mismatch."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "docs-update.jsonl"
    scenario = {"transcript": str(fixture), "apply_tool_writes": True}
    result = run(tmp_path, workspace, capsys, scenario, "--preset", "docs")
    assert result.code == 0, result.log
    assert json.loads(result.outputs["files-changed"]) == [
        "README.md", "docs/index.md", "docs/upgrading.md", "docs/usage.md"]
    assert result.outputs["permission-denials"] == "1"
    assert "working tree" not in result.summary
    saved = Path(result.outputs["transcript-file"]).read_bytes()
    assert saved == fixture.read_bytes().replace(
        b"/home/runner/work/acme-widgets/acme-widgets", str(workspace).encode())


def _split_in_two(line: str, secret: str) -> list[str]:
    """``line`` cut in the middle of ``secret``."""
    cut = line.index(secret) + len(secret) // 2
    return [line[:cut], line[cut:]]


@pytest.mark.parametrize("secret", ["tok_deploy_Zq81Lm40Xw", 'key_"quoted"\\slash_é'])
def test_transcript_has_secrets_redacted_even_split_across_reads(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, secret: str,
) -> None:
    """An agent echoing a masked secret (in a message, in shell output, JSON-escaped in the
    stream, cut across two reads) leaves only *** in the transcript; everything else is byte for
    byte. (The API key itself fails the run and empties the transcript: test_key_exits.py.)"""
    monkeypatch.setenv("DEPLOY_SECRET", secret)
    monkeypatch.setenv("CURSOR_AGENT_ACTION_MASK_ENV", "DEPLOY_SECRET")
    escaped = json.dumps(secret)[1:-1]
    said = event("assistant", message={"role": "assistant", "content": [
        {"type": "text", "text": f"The key is {secret}."}]})
    shell = tool("completed", "c1", "shellToolCall", {"command": "echo $DEPLOY_SECRET"},
                  {"success": {"exitCode": 0, "stdout": f"{secret}\n", "stderr": ""}})
    text = [json.dumps(event) for event in (INIT, said, shell, RESULT)]  # ASCII, escaped
    chunks = [
        text[0] + "\n", *_split_in_two(text[1] + "\n", escaped),
        *_split_in_two(text[2] + "\n", escaped), text[3],  # the last line has no newline
    ]
    result = run(tmp_path, workspace, capsys, {"chunks": chunks, "drip_ms": 80})
    assert result.outputs["conclusion"] == "success"
    saved = Path(result.outputs["transcript-file"]).read_bytes()
    assert saved == "".join(chunks).replace(escaped, "***").encode()
    shown = [line for line in result.log.splitlines() if not line.startswith("::add-mask::")]
    assert "\u2502 The key is ***." in shown  # an agent line, marked
    assert not [line for line in shown if secret in line or escaped in line]


def test_agent_changes_to_the_runner_file_commands_are_undone_and_fail_the_run(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent appending BASH_ENV to $GITHUB_ENV or creating $GITHUB_PATH: both files are back
    as they were (byte for byte, mode too) and the run fails naming them."""
    commands = tmp_path / "runner-temp" / "_runner_file_commands"
    commands.mkdir(parents=True)
    github_env, github_path = commands / "set_env_1", commands / "add_path_1"
    github_env.write_bytes(b"KEEP=1\r\n")
    github_env.chmod(0o640)
    state = commands / "save_state_1"
    state.write_bytes(b"untouched\n")
    for name, path in (("GITHUB_ENV", github_env), ("GITHUB_PATH", github_path),
                       ("GITHUB_STATE", state)):
        monkeypatch.setenv(name, str(path))
    scenario = {"edits": {str(github_env): "KEEP=1\r\nBASH_ENV=/tmp/evil.sh\n",
                          str(github_path): "/tmp/evil-bin\n"}}
    # The second wall, uncontained (contained, the agent cannot write them: test_containment).
    result = run(tmp_path, workspace, capsys, scenario, "--isolation", "none")
    assert result.code == 1
    assert result.outputs["conclusion"] == "failure"
    [error] = [line for line in result.log.splitlines() if line.startswith("::error")]
    assert f"tried to change the runner's file commands ({github_path}, {github_env})" in error
    assert str(state) not in error
    assert github_env.read_bytes() == b"KEEP=1\r\n"
    assert github_env.stat().st_mode & 0o777 == 0o640
    assert not github_path.exists()
    assert state.read_bytes() == b"untouched\n"


def test_runner_files_and_git_config_are_put_back_when_a_later_phase_fails(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agent changes $GITHUB_ENV and .git/config, then the run breaks after it (here: the
    structured-output step raises): both are back as they were all the same, since the guards
    are one ExitStack around every phase that runs the agent."""
    github_env = tmp_path / "runner-temp" / "set_env_1"
    github_env.parent.mkdir(parents=True)
    github_env.write_bytes(b"KEEP=1\n")
    monkeypatch.setenv("GITHUB_ENV", str(github_env))
    config = workspace / ".git" / "config"
    original = config.read_bytes()

    def broken(*_args: object, **_kwargs: object) -> None:
        raise SetupError("the structured-output step broke", "a test")

    monkeypatch.setattr(agent_run, "with_structured_output", broken)
    scenario = {"edits": {str(github_env): "KEEP=1\nBASH_ENV=/tmp/evil.sh\n",
                          str(config): "[core]\n\tfsmonitor = /tmp/evil.sh\n"}}
    result = run(tmp_path, workspace, capsys, scenario, "--isolation", "none",
                 "--output-schema", '{"type": "object"}')
    assert result.code == EXIT_SETUP
    assert "the structured-output step broke" in result.log
    assert github_env.read_bytes() == b"KEEP=1\n"
    assert config.read_bytes() == original


def test_running_line_is_one_line_whatever_the_paths_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A workspace or agent path with a newline cannot start a workflow command in the log."""
    odd = tmp_path / "odd\n::warning::planted"
    odd.mkdir()
    monkeypatch.setenv(SHARE_VARIABLE, str(odd / "standin"))
    repo = odd / "repo"
    repo.mkdir()
    result = run(odd, repo, capsys, {})
    assert result.code == 0
    assert not [line for line in result.log.splitlines() if line.startswith("::warning::")]
    [running] = [line for line in result.log.splitlines() if line.startswith("Running ")]
    assert "--output-format stream-json" in running


def test_two_runs_in_one_job_keep_their_own_transcript_and_cli_config(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Two runs in one RUNNER_TEMP: each transcript survives, each CLI config dir is fresh (one
    run's --model cannot carry over), and an explicit --transcript is still honoured."""
    first = run(tmp_path, workspace, capsys, {}, "--model", "gpt-5")
    say = event("assistant", message={"role": "assistant",
                                       "content": [{"type": "text", "text": "Second."}]})
    second = run(tmp_path, workspace, capsys, {"lines": [INIT, say, RESULT]})
    explicit = tmp_path / "mine.jsonl"
    third = run(tmp_path, workspace, capsys, {}, "--transcript", str(explicit))
    transcripts = [Path(r.outputs["transcript-file"]) for r in (first, second, third)]
    assert transcripts[2] == explicit
    assert len(set(transcripts)) == 3
    assert b"Second." not in transcripts[0].read_bytes()
    assert b"Second." in transcripts[1].read_bytes()
    configs = [entry["env"]["CURSOR_CONFIG_DIR"] for entry in first.runs]
    assert len(set(configs)) == len(configs) == 3
    # Contained, each run's config is in the job's agent home, named after the run's directory.
    assert [Path(c).name for c in configs[:2]] == [t.parent.name for t in transcripts[:2]]
    assert first.outputs["result-file"] != second.outputs["result-file"]


def test_checkout_hooks_and_mcp_config_never_reach_the_agent(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A pull request's .cursor/hooks.json and mcp.json are absent while the agent runs and
    back, unchanged, afterwards (git sees no change)."""
    cursor = workspace / ".cursor"
    cursor.mkdir()
    (cursor / "hooks.json").write_text('{"version": 1, "hooks": {"stop": [{"command": "x"}]}}')
    (cursor / "mcp.json").write_text('{"mcpServers": {"x": {"command": "x"}}}')
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", "."], cwd=workspace, check=True)
    subprocess.run([*git, "commit", "-qm", "cursor config"], cwd=workspace, check=True)
    result = run(tmp_path, workspace, capsys, {})
    assert result.code == 0
    assert result.runs[0]["cursor_dir"] == ["cli.json"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=workspace, check=True,
                            capture_output=True, text=True).stdout
    assert status == ""


def test_prompt_file_byte_order_mark_is_not_part_of_the_prompt(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    prompt_file = tmp_path / "prompt.md"
    prompt_file.write_bytes(b"\xef\xbb\xbfFix the build.\n")
    result = run(tmp_path, workspace, capsys, {}, "--prompt-file", str(prompt_file),
                 prompt=None)
    assert result.code == 0
    assert result.runs[0]["argv"][-1] == "Fix the build.\n"


def test_agent_bin_path_that_does_not_exist_is_named_without_path_lookup(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "nonexistent" / "cursor-agent"
    code = main(["run", "--prompt", "x", "--agent-bin", str(missing),
                 "--working-directory", str(workspace)])
    assert code == 3
    log = capsys.readouterr().out
    assert f"--agent-bin: {missing} does not exist" in log
    assert "on PATH)" not in log
    code = main(["run", "--prompt", "x", "--agent-bin", "no-such-cursor-agent",
                 "--working-directory", str(workspace)])
    assert code == 3
    assert "(no-such-cursor-agent on PATH)" in capsys.readouterr().out


def test_the_run_hands_on_a_patch_that_applies_to_a_clean_checkout(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """patch-file and changed: made by the action's own git, applied to a fresh clone, they
    give exactly the agent's tree (added, changed, deleted, binary)."""
    (workspace / "old.txt").write_text("old\n")
    subprocess.run(["git", "add", "old.txt"], cwd=workspace, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "old"],
                   cwd=workspace, check=True)
    scenario = {"edits": {"docs/guide.md": "# guide\n", "README.md": "# changed\n",
                          "old.txt": None, "docs/img.bin": "\u00ff\u0000\u00fe"}}
    result = run(tmp_path, workspace, capsys, scenario, "--preset", "edit")
    assert result.outputs["changed"] == "true"
    patch = Path(result.outputs["patch-file"])
    assert patch.read_bytes().startswith(b"# cursor-agent-action patch")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(workspace), str(clone)], check=True)
    subprocess.run(["git", "apply", "--binary", str(patch)], cwd=clone, check=True)
    for name in ("docs/guide.md", "README.md", "docs/img.bin"):
        assert (clone / name).read_bytes() == (workspace / name).read_bytes()
    assert not (clone / "old.txt").exists()
    assert json.loads(result.outputs["files-changed"]) == [
        "README.md", "docs/guide.md", "docs/img.bin", "old.txt"]


def test_nothing_changed_means_changed_false_and_an_empty_patch(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run(tmp_path, workspace, capsys, {})
    assert result.outputs["changed"] == "false"
    body = Path(result.outputs["patch-file"]).read_bytes().split(b"\n\n", 1)[1]
    assert body == b""


@pytest.mark.parametrize(("preset", "fails"), [("read-only", True), ("docs", True),
                                               ("edit", False)])
def test_a_write_outside_the_working_directory_is_a_policy_problem(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str], preset: str,
    fails: bool,
) -> None:
    outside = "/home/runner/.bashrc"
    lines = [INIT,
             tool("completed", "w1", "writeToolCall", {"path": outside, "fileText": "x"},
                   {"success": {"path": outside, "linesCreated": 1}}),
             SAY, RESULT]  # fmt: skip
    result = run(tmp_path, workspace, capsys, {"lines": lines}, "--preset", preset)
    assert ("wrote 1 file(s) outside the working directory: /home/runner/.bashrc"
            in result.summary.replace("\\", ""))
    assert result.outputs["conclusion"] == ("failure" if fails else "success")
    if not fails:
        assert "::warning title=write outside the working directory::" in result.log


def test_a_600_mib_line_without_a_newline_keeps_the_helper_small(tmp_path: Path) -> None:
    """An agent that writes 600 MiB with no newline: the helper's peak RSS (its VmHWM, read
    while it runs) stays under 256 MiB, the line is reported malformed and the transcript keeps
    only its first MAX_LINE_BYTES."""
    from cursor_agent_action.stream.framing import MAX_LINE_BYTES

    workspace = tmp_path / "ws"
    workspace.mkdir()
    agent = tmp_path / "flood.sh"
    agent.write_text('#!/bin/sh\nfor a in "$@"; do\n[ "$a" = --help ] && echo --trust && exit\n'
                     "done\nhead -c 629145600 /dev/zero | tr '\\0' 'a'\n")
    agent.chmod(0o755)
    transcript = tmp_path / "t.jsonl"
    output = tmp_path / "out.txt"
    env = {"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path / "rt"), "HOME": str(tmp_path),
           "CURSOR_AGENT_ACTION_AGENT_USER": TEST_AGENT_USER,
           SHARE_VARIABLE: str(tmp_path / "standin")}
    helper = subprocess.Popen(
        [sys.executable, "-m", "cursor_agent_action", "run", "--prompt", "x", "--agent-bin",
         str(agent), "--working-directory", str(workspace), "--transcript", str(transcript),
         "--output-file", str(output), "--summary-file", os.devnull, "--timeout-minutes", "3"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    peaks: list[int] = []

    def watch() -> None:  # the helper's own high-water mark (VmHWM), not its children's
        while helper.poll() is None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                status = Path(f"/proc/{helper.pid}/status").read_text()
                peaks.append(int(status.split("VmHWM:")[1].split()[0]))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    log = helper.stdout.read() if helper.stdout else b""
    helper.wait(timeout=180)
    watcher.join(timeout=10)
    assert peaks, "the helper's memory was never read"
    assert max(peaks) < 256 * 1024, f"peak RSS {max(peaks) // 1024} MiB"
    assert b"line cap (629,145,600 bytes)" in log
    assert transcript.stat().st_size <= MAX_LINE_BYTES + 1
    assert parse_output_file(output.read_text())["conclusion"] == "failure"


def test_thirty_thousand_changed_files_keep_the_outputs_bounded(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [f"gen/{i // 1000:02d}/file-{i:05d}-with-a-longer-name.txt" for i in range(30_000)]
    result = run(tmp_path, workspace, capsys, {"edits": dict.fromkeys(names, "x")},
                 "--preset", "edit")
    assert result.outputs["conclusion"] == "success"
    listed = json.loads(result.outputs["files-changed"])
    assert result.outputs["files-changed-truncated"] == "true"
    assert 0 < len(listed) < 30_000
    assert len(result.outputs["files-changed"].encode()) <= 256 * 1024
    full = json.loads(Path(result.outputs["files-changed-file"]).read_text())
    assert full == sorted(names)
    assert listed == full[: len(listed)]
    assert (tmp_path / "outputs.txt").stat().st_size < 1024 * 1024


def test_mask_env_values_and_pattern_shaped_secrets_reach_nothing_people_read(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A secret named in mask-env, printed plain, base64-encoded and URL-encoded, and a GitHub
    token the run never knew: not in the log, summary, outputs, result file or transcript."""
    import base64
    from urllib.parse import quote

    known = "my-deploy-secret-0123456789"
    monkeypatch.setenv("DEPLOY_SECRET", known)
    monkeypatch.setenv("CURSOR_AGENT_ACTION_MASK_ENV", "OTHER\nDEPLOY_SECRET")
    unknown = "ghp_" + "Z9y8X7w6V5" * 4
    text = (f"plain {known}, b64 {base64.b64encode(b'xx' + known.encode()).decode()}, "
            f"url {quote(known + '/+', safe='')}, found {unknown}")
    say = event("assistant", message={"role": "assistant",
                                       "content": [{"type": "text", "text": text}]})
    result_event = dict(RESULT, result=text)
    result = run(tmp_path, workspace, capsys, {"lines": [INIT, say, result_event]})
    transcript = Path(result.outputs["transcript-file"]).read_text()
    result_file = Path(result.outputs["result-file"]).read_text()
    log = "\n".join(line for line in result.log.splitlines()
                    if not line.startswith("::add-mask::"))  # the masks name it, by design
    everything = [log, result.summary, json.dumps(result.outputs), transcript, result_file]
    for where in everything:
        assert known not in where
        assert unknown not in where
        assert base64.b64encode(b"xx" + known.encode()).decode()[4:-4] not in where
        assert quote(known, safe="") not in where
    assert "***" in result.outputs["final-message"]


def test_resource_exhausted_is_retried_once_and_said_to_be_a_quota_limit(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counter = tmp_path / "standin" / "count"
    scenario = {"fail_first": {"times": 5, "counter": str(counter),
                               "stderr": "Error: [resource_exhausted] quota", "exit_code": 1}}
    result = run(tmp_path, workspace, capsys, scenario, "--max-retries", "4")
    assert len(result.runs) == 2  # one retry, not four
    assert result.outputs["conclusion"] == "failure"
    assert "plan or quota limit" in result.log


def test_extra_args_reach_the_cli_and_a_refused_one_stops_the_run_first(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = run(tmp_path, workspace, capsys, {}, "--extra-args=--stream-partial-output")
    assert ok.code == 0
    assert ok.runs[0]["argv"][-3:] == ["--stream-partial-output", "--", "Update the docs."]
    refused = run(tmp_path, workspace, capsys, {}, "--extra-args=--yolo")
    assert refused.code == 2
    assert "extra-args: --yolo is refused" in refused.log
    assert len(refused.runs) == 1  # only the first run: the refused one never started


def test_a_run_without_a_key_warns_to_set_it_not_to_pass_an_input(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under the action an empty api-key fails its first step; here (a terminal, or a CLI that
    is logged in) the run goes on, with a warning that says what to set."""
    monkeypatch.delenv("CURSOR_API_KEY")
    result = run(tmp_path, workspace, capsys, {})
    assert result.code == 0
    [warning] = [line for line in result.log.splitlines()
                 if line.startswith("::warning title=no API key::")]
    assert warning.endswith("CURSOR_API_KEY is not set: the CLI will fail to authenticate unless "
                            "it is logged in on this machine: set it to your key.")


def test_the_stand_ins_writes_are_tool_calls_so_no_shell_write_warning(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """What try_example's stand-in does: it writes through a write tool call, which the run
    sees as one, so the summary shows the change and no "without a write tool" warning (which
    ``edits``, a change behind the tools' back, gets)."""
    scenario = {"answer": "Updated the guide.", "writes": {"docs/guide.md": "# Guide\n"}}
    result = run(tmp_path, workspace, capsys, scenario, "--preset", "docs")
    assert result.code == 0, result.log
    assert (workspace / "docs" / "guide.md").read_text() == "# Guide\n"
    assert json.loads(result.outputs["files-changed"]) == ["docs/guide.md"]
    assert result.outputs["tool-calls"] == "1"
    assert "without a write tool" not in result.summary
    (tmp_path / "again").mkdir()
    shell = run(tmp_path, make_workspace(tmp_path / "again"),
                capsys, {"answer": "Updated.", "edits": {"docs/guide.md": "# Guide\n"}},
                "--preset", "docs")
    assert "without a write tool" in shell.summary
