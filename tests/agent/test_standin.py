"""The stand-in CLI behaves like cursor-agent's print mode for everything `run` relies on."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.standin.cli import CliExit, parse_cli
from tests.support.standin import make_standin, records


def _run(
    tmp_path: Path, scenario: dict[str, Any], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    agent = make_standin(tmp_path, scenario)
    return subprocess.run(
        [str(agent), *args], cwd=cwd or tmp_path, stdin=subprocess.DEVNULL,
        capture_output=True, timeout=20, check=False,
    )


def _events(stdout: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_parse_print_mode_flags_and_prompt_after_double_dash() -> None:
    options, words = parse_cli(
        ["-p", "--output-format", "stream-json", "--force", "-m", "gpt-5", "--resume", "abc",
         "--trust", "--", "--not-an-option"],
        accepts_trust=True,
    )
    assert options == {"output-format": "stream-json", "print": True, "force": True,
                       "model": "gpt-5", "resume": "abc", "trust": True}
    assert words == ["--not-an-option"]


def test_prompt_starting_with_dash_without_double_dash_is_an_unknown_option() -> None:
    with pytest.raises(CliExit, match="unknown option '--fix the bug'"):
        parse_cli(["-p", "--fix the bug"], accepts_trust=True)


def test_resume_without_value_before_double_dash() -> None:
    options, words = parse_cli(["-p", "--resume", "--", "go"], accepts_trust=True)
    assert options["resume"] is True
    assert words == ["go"]


def test_bad_output_format_is_refused() -> None:
    with pytest.raises(CliExit, match="Allowed choices are text, json, stream-json"):
        parse_cli(["-p", "--output-format", "xml", "go"], accepts_trust=True)


def test_help_lists_trust_unless_the_build_rejects_it(tmp_path: Path) -> None:
    accepting = _run(tmp_path, {}, "--help")
    assert accepting.returncode == 0
    assert b"--trust" in accepting.stdout
    assert b"--output-format" in accepting.stdout
    rejecting = _run(tmp_path, {"reject_trust": True}, "--help")
    assert rejecting.returncode == 0
    assert b"--trust" not in rejecting.stdout
    refused = _run(tmp_path, {"reject_trust": True}, "-p", "--trust", "--", "go")
    assert refused.returncode == 1
    assert b"unknown option '--trust'" in refused.stderr


def test_missing_prompt_is_refused(tmp_path: Path) -> None:
    done = _run(tmp_path, {}, "-p", "--output-format", "stream-json", "--")
    assert done.returncode == 1
    assert b"No prompt provided" in done.stderr
    assert done.stdout == b""


def test_replays_default_run_with_real_cwd_and_records_invocation(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".cursor").mkdir(parents=True)
    (work / ".cursor" / "cli.json").write_text('{"version": 1}')
    done = _run(tmp_path, {"record": "record.jsonl"},
                "-p", "--output-format", "stream-json", "--", "-x prompt", cwd=work)
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    assert [e["type"] for e in events] == ["system", "assistant", "result"]
    assert events[0]["cwd"] == str(work)
    [entry] = records(tmp_path)
    assert entry["argv"][-2:] == ["--", "-x prompt"]
    assert entry["stdin"] == ""
    assert entry["cli_json"] == '{"version": 1}'
    assert entry["cwd"] == str(work)


def test_rewrites_paths_under_the_recorded_cwd(tmp_path: Path) -> None:
    lines = [
        {"type": "system", "subtype": "init", "cwd": "/home/u/proj", "session_id": "s"},
        {"type": "tool_call", "subtype": "started", "call_id": "c",
         "tool_call": {"readToolCall": {"args": {"path": "/home/u/proj/a.txt"}}}},
    ]
    done = _run(tmp_path, {"lines": lines}, "-p", "--output-format", "stream-json", "go")
    events = _events(done.stdout)
    assert events[1]["tool_call"]["readToolCall"]["args"]["path"] == f"{tmp_path}/a.txt"


def test_text_output_format_prints_the_result(tmp_path: Path) -> None:
    done = _run(tmp_path, {}, "--print", "go")
    assert done.stdout == b"Done.\n"


def test_open_stdin_is_recorded_as_none(tmp_path: Path) -> None:
    agent = make_standin(tmp_path, {"record": "record.jsonl"})
    with subprocess.Popen([str(agent), "-p", "go"], cwd=tmp_path, stdin=subprocess.PIPE,
                          stdout=subprocess.DEVNULL) as proc:
        assert proc.wait(timeout=20) == 0
    assert records(tmp_path)[0]["stdin"] is None


def test_crash_prints_stderr_and_exits_without_result(tmp_path: Path) -> None:
    scenario = {"crash": {"after": 1, "stderr": "Authentication required", "exit_code": 1}}
    done = _run(tmp_path, scenario, "-p", "--output-format", "stream-json", "go")
    assert done.returncode == 1
    assert done.stderr == b"Authentication required\n"
    assert [e["type"] for e in _events(done.stdout)] == ["system"]


def test_crash_by_signal(tmp_path: Path) -> None:
    done = _run(tmp_path, {"crash": {"after": 2, "signal": 9}},
                "-p", "--output-format", "stream-json", "go")
    assert done.returncode == -signal.SIGKILL
    assert len(done.stdout.splitlines()) == 2


def test_fail_first_counts_invocations(tmp_path: Path) -> None:
    scenario = {"fail_first": {"times": 2, "counter": "count", "stderr": "[unavailable]"}}
    codes = [_run(tmp_path, scenario, "-p", "go").returncode for _ in range(3)]
    assert codes == [1, 1, 0]


def test_edits_and_tamper_happen_before_the_result(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("x")
    scenario = {"edits": {"docs/new.md": "# new\n", "old.txt": None}, "tamper": '{"x": 1}'}
    done = _run(tmp_path, scenario, "-p", "--output-format", "stream-json", "go")
    assert done.returncode == 0
    assert (tmp_path / "docs" / "new.md").read_text() == "# new\n"
    assert not (tmp_path / "old.txt").exists()
    assert (tmp_path / ".cursor" / "cli.json").read_text() == '{"x": 1}'


def test_non_print_mode_is_refused(tmp_path: Path) -> None:
    done = _run(tmp_path, {}, "go")
    assert done.returncode == 2
    assert b"print mode" in done.stderr


def test_apply_tool_writes_carries_out_completed_write_edit_delete(tmp_path: Path) -> None:
    (tmp_path / "gone.md").write_text("old")
    root = "/recorded/ws"

    def completed(kind: str, path: str, args: dict[str, Any], success: dict[str, Any]) -> Any:
        inner = {"args": {"path": f"{root}/{path}", **args}, "result": {"success": success}}
        return {"type": "tool_call", "subtype": "completed", "call_id": path,
                "tool_call": {kind: inner}}

    lines = [
        {"type": "system", "subtype": "init", "cwd": root, "session_id": "s"},
        completed("writeToolCall", "docs/a.md", {"fileText": "A\n"}, {"linesCreated": 1}),
        completed("editToolCall", "b.md", {}, {"afterFullFileContent": "B\n"}),
        {"type": "tool_call", "subtype": "completed", "call_id": "rel", "tool_call": {
            "writeToolCall": {"args": {"path": "rel/c.md", "fileText": "C"},
                              "result": {"success": {}}}}},
        completed("deleteToolCall", "gone.md", {}, {}),
        completed("writeToolCall", "../outside.md", {"fileText": "no"}, {}),
        {"type": "tool_call", "subtype": "completed", "call_id": "x", "tool_call": {
            "writeToolCall": {"args": {"path": f"{root}/denied.md", "fileText": "no"},
                              "result": {"permissionDenied": {}}}}},
    ]
    done = _run(tmp_path, {"lines": lines, "apply_tool_writes": True}, "-p", "go")
    assert done.returncode == 0
    assert (tmp_path / "docs" / "a.md").read_text() == "A\n"
    assert (tmp_path / "b.md").read_text() == "B\n"
    assert (tmp_path / "rel" / "c.md").read_text() == "C"
    assert not (tmp_path / "gone.md").exists()
    assert not (tmp_path / "denied.md").exists()
    assert not (tmp_path.parent / "outside.md").exists()


def test_workspace_flag_sets_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    done = _run(tmp_path, {"record": "record.jsonl"}, "-p", "--workspace", "ws",
                "--output-format", "stream-json", "go")
    assert done.returncode == 0
    assert _events(done.stdout)[0]["cwd"] == str(tmp_path / "ws")
    assert records(tmp_path)[0]["cwd"] == str(tmp_path / "ws")
    missing = _run(tmp_path, {}, "-p", "--workspace", "nope", "go")
    assert missing.returncode == 1
    assert b"workspace nope" in missing.stderr


SHARD_PROMPT = (
    "Review this.\n\n## Your scope\n\nThis review is split into 3 parts, one agent each. **Your "
    "scope is part 2: the 2 file(s) below and their diff.**\n\n````diff\n"
    "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -3,2 +3,4 @@\n keep\n+\n+x = 1\n"
    " end\ndiff --git a/img.png b/img.png\n(no diff: a binary file)\n"
    "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -0,0 +1 @@\n+y = 2\n````\n")


def test_review_scope_answers_about_the_shard_its_prompt_gives(tmp_path: Path) -> None:
    """review_scope: findings on the first non-blank added line of each file of the diff in
    the prompt (or in the file a long prompt was saved to), the summary naming its part."""
    saved = tmp_path / "prompt.md"
    saved.write_text(SHARD_PROMPT)
    pointer = (f"Your task is in the file {saved} (it was too long for the command line). "
               "Read that whole file first and follow its instructions exactly.")
    for prompt in (SHARD_PROMPT, pointer):
        done = _run(tmp_path, {"review_scope": True}, "--print", "--", prompt)
        text = done.stdout.decode()
        value = json.loads(text.split("```json\n")[1].split("\n```")[0])
        assert value["summary"] == "Reviewed part 2: 2 file(s) with added lines."
        assert [(f["path"], f["line"]) for f in value["findings"]] == [("a.py", 5),
                                                                       ("b.py", 1)]
