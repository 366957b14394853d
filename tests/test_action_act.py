"""The composite action (action.yml) on a real runner implementation: act, host mode, offline.

One workflow holds every scenario as a job (act runs them two at a time); it runs once per
module and each test checks one behaviour of its result. The Cursor CLI is the stand-in, given
through ``cli-path``; the helper venv comes from a pre-warmed tool cache (see
``seed_helper_venv``), so no step touches the network.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.act import ROOT, ActRun, base_python, make_repo, run_workflow, seed_helper_venv
from tests.support.standin import make_standin, processes_of, runs
from tests.support.users import TEST_AGENT_USER

# One worker runs the whole module (tests/conftest.py ONE_WORKER_MODULES): most tests read
# the one workflow run of scenario_run (a module fixture of ~40 s), built once.
pytestmark = pytest.mark.act

SECRET_KEY = "crsr-secret-4f1a9c0e7d2b"  # given as a repository secret (act masks it itself)
# A key that reached the job as a plain env var: act does not mask it, only the action can.
PLAIN_KEY = "crsr-plain-8b3e6d1f0a5c"
# Another secret of the job, named in mask-env, that the agent prints (the API key itself in
# the agent's output fails the run: tests/agent/test_key_exits.py).
PLAIN_TOKEN = "dbg-token-71c0e95a3f4d"
UPLOAD = "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2"
CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2"
PROMPT_FILE_TEXT = "Summarise docs/guide.md in one sentence.\n"

SESSION = "5b0c7a52-3f0e-4c3e-9d41-0e6a2f1b9c77"
SCHEMA = '{"type": "object", "required": ["cause"], "properties": {"cause": {"type": "string"}}}'
MCP_CONFIG = ('{"mcpServers": {"docs": {"command": "docs-mcp", '
              '"env": {"DOCS_TOKEN": "${env:DOCS_TOKEN}"}}}}')
DOCS_TOKEN = "docs-token-5a7c9e1b3d"


def _tool(call_id: str, kind: str, args: dict[str, Any], result: dict[str, Any]) -> list[Any]:
    started = {
        "type": "tool_call",
        "subtype": "started",
        "call_id": call_id,
        "tool_call": {kind: {"args": args}},
        "session_id": SESSION,
    }
    completed = {
        "type": "tool_call",
        "subtype": "completed",
        "call_id": call_id,
        "tool_call": {kind: {"args": args, "result": result}},
        "session_id": SESSION,
    }
    return [started, completed]


def _lines(final: str, stdout: str = "listing: guide.md\n") -> list[Any]:
    """A run with two tool calls (a read and a shell command) and the given final message."""
    return [
        {
            "type": "system",
            "subtype": "init",
            "apiKeySource": "env",
            "cwd": "/workspace",
            "session_id": SESSION,
            "model": "Stand-in 1",
            "permissionMode": "default",
        },
        *_tool(
            "call-1",
            "readToolCall",
            {"path": "/workspace/docs/guide.md"},
            {"success": {"content": "# Guide\n", "totalLines": 1}},
        ),
        *_tool(
            "call-2",
            "shellToolCall",
            {"command": "ls docs", "workingDirectory": ""},
            {"success": {"exitCode": 0, "stdout": stdout, "stderr": ""}},
        ),
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": final}]},
            "session_id": SESSION,
        },
        {
            "type": "result",
            "subtype": "success",
            "duration_ms": 2100,
            "is_error": False,
            "result": final,
            "session_id": SESSION,
            "request_id": "req-1",
            "usage": {
                "inputTokens": 1200,
                "outputTokens": 34,
                "cacheReadTokens": 560,
                "cacheWriteTokens": 7,
            },
        },
    ]


SCENARIOS: dict[str, dict[str, Any]] = {
    # Answers without the JSON first; asked again in the same chat, it answers right.
    "structured": {"answer": "The cause is unclear.", "record": "record-structured.jsonl",
                   "resume": {"answer": 'Sorry:\n```json\n{"cause": "a | b"}\n```'}},
    # A third tool call starts, and then the stand-in would hang: the budget is 2.
    "budget": {"lines": [*_lines("Done.")[:5],
                         _tool("call-3", "shellToolCall", {"command": "make"}, {})[0]],
               "hang_after": 6},
    # The agent echoes a masked secret in a tool's output and its final message: no log line,
    # summary, output, result file or transcript may show it.
    "success": {
        "lines": _lines(
            f"Updated docs/guide.md. (debug: token {PLAIN_TOKEN})",
            stdout=f"listing: guide.md\nDEBUG_TOKEN={PLAIN_TOKEN}\n",
        ),
        "edits": {"docs/guide.md": "# Guide\n\nNew section.\n"},
        "record": "record-success.jsonl",
    },
    "crash": {"crash": {"after": 1, "stderr": "Error: model overloaded", "exit_code": 1}},
    "hang": {"hang_after": 1},
    "record": {"lines": _lines("Done."), "record": "record-prompt.jsonl"},
    "policy": {"lines": _lines("Done."), "record": "record-policy.jsonl"},
    "second": {"lines": _lines("Done.")},
    # Rate-limited once: with max-retries 0 that is the end of the run (the default retries).
    "wiring": {
        "fail_first": {
            "times": 1,
            "counter": "counter-wiring",
            "exit_code": 1,
            "stderr": "Error: 429 Too Many Requests",
        },
        "record": "record-wiring.jsonl",
    },
}


def _workflow(clis: dict[str, Path]) -> str:
    checkout = f"""      - uses: {CHECKOUT}
        with:
          persist-credentials: false
"""

    def agent(
        cli: str, *with_lines: str, prompt: str = "prompt: Update the guide", step: str = "agent"
    ) -> str:
        """A checkout (for the first step) and the action."""
        extra = "".join(f"\n          {line}" for line in with_lines)
        return f"""{checkout if step == "agent" else ""}      - id: {step}
        uses: ./
        with:
          {prompt}
          cli-path: {clis[cli]}{extra}
"""

    read_conclusion = """      - id: check
        if: always()
        env:
          CONCLUSION: ${{ steps.agent.outputs.conclusion }}
        run: echo "conclusion=$CONCLUSION" >>"$GITHUB_OUTPUT"
"""
    check_success = """      - id: check
        env:
          CONCLUSION: ${{ steps.agent.outputs.conclusion }}
          FILES: ${{ steps.agent.outputs.files-changed }}
          TOOLS: ${{ steps.agent.outputs.tool-calls }}
          SESSION: ${{ steps.agent.outputs.session-id }}
        run: |
          {
            echo "conclusion=$CONCLUSION"
            echo "files=$FILES"
            echo "tools=$TOOLS"
            echo "session=$SESSION"
            echo "status<<STATUS_END"
            git status --porcelain --untracked-files=all --ignored
            echo "STATUS_END"
          } >>"$GITHUB_OUTPUT"
      # act (host mode) can lose what a step prints in the moment before it exits; the
      # pause keeps this line from being lost (a runner does not need it).
      - run: |
          echo "a later step prints the key $CURSOR_API_KEY"
          sleep 1
""" + f"""      - uses: {UPLOAD}
        with:
          name: result-success
          path: ${{{{ steps.agent.outputs.result-file }}}}
"""
    check_policy = """      - id: check
        run: |
          if [[ -e .cursor/cli.json ]]; then left=yes; else left=no; fi
          echo "policy-left=$left" >>"$GITHUB_OUTPUT"
"""
    jobs = {
        # No api-key input: the key is the job's CURSOR_API_KEY (PLAIN_KEY).
        "success": agent(
            "success",
            "permissions: docs",
            "transcript-artifact: transcript-success",
            "mask-env: DEBUG_TOKEN",
            'verbose: "true"',  # tool output in the log too
        )
        + check_success,
        "failure": agent("crash", 'job-summary: "false"') + read_conclusion,
        "tolerated": agent("crash", 'fail-on-error: "false"') + read_conclusion,
        "timeout": agent("hang", 'timeout-minutes: "0.05"') + read_conclusion,
        "prompt-file": agent("record", prompt="prompt-file: prompts/task.md"),
        "policy": agent(
            "policy",
            "permissions: edit",
            "allow: |\n            Shell(npm)\n            Shell(make)",
            "deny: Write(secrets/**)",
            "pass-env: EXTRA_SETTING",
            'verbose: "true"',
        )
        + check_policy,
        "bad-input": agent("record", 'job-summary: "yes"'),
        "structured": agent(
            "structured",
            f"output-schema: '{SCHEMA}'",
            f"mcp-config: '{MCP_CONFIG}'",
            "pass-env: DOCS_TOKEN",
            "allow: Mcp(docs:search)",
        )
        + """      - id: check
        env:
          CAUSE: ${{ fromJSON(steps.agent.outputs.structured-output).cause }}
          STRUCTURED_FILE: ${{ steps.agent.outputs.structured-output-file }}
        run: |
          echo "cause=$CAUSE" >>"$GITHUB_OUTPUT"
          echo "file=$(cat "$STRUCTURED_FILE")" >>"$GITHUB_OUTPUT"
""",
        "budget": agent("budget", 'max-tool-calls: "2"', 'fail-on-error: "false"',
                        'timeout-minutes: "1"') + read_conclusion,
        "bad-mcp": agent("record", "mcp-config: '{\"mcpServers\": {}}'"),
        "bad-extra-args": agent("record", "extra-args: --yolo"),
        "bad-schema": agent("record", "output-schema: '{\"type\": \"strnig\"}'"),
        # A second use of the action in the same job keeps its own transcript.
        "twice": agent("crash", 'fail-on-error: "false"') + agent("second", step="agent2"),
        "wiring": agent(
            "wiring",
            "api-key: ${{ secrets.CURSOR_API_KEY }}",
            "api-key-masking: off",  # the key itself in the box: which one it is shows
            "model: gpt-test",
            "resume: sess-42",
            "working-directory: sub",
            "repo-instructions: ignore",
            "extra-args: |\n            --mode\n            plan",
            'max-retries: "0"',
            'fail-on-error: "false"',
        )
        + read_conclusion,
    }
    job_env = {"policy": {"EXTRA_SETTING": "for-the-agent", "OTHER_SETTING": "not-for-the-agent"},
               "structured": {"DOCS_TOKEN": DOCS_TOKEN}}
    text = "name: action scenarios\non: push\npermissions: {}\njobs:\n"
    for name, steps in jobs.items():
        text += f"  {name}:\n    runs-on: ubuntu-latest\n"
        if name in job_env:
            text += "    env:\n" + "".join(f"      {k}: {v}\n" for k, v in job_env[name].items())
        text += "    steps:\n" + steps
    return text


@pytest.fixture(scope="module")
def scenario_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[ActRun, Path]:
    base = tmp_path_factory.mktemp("act-action")
    clis = {name: make_standin(base, scenario, name=name) for name, scenario in SCENARIOS.items()}
    repo = make_repo(
        base / "repo",
        {"scenarios.yml": _workflow(clis)},
        {"prompts/task.md": PROMPT_FILE_TEXT, "docs/guide.md": "# Guide\n", "sub/a.txt": "a\n",
         # The root's configuration and instructions, above the wiring job's sub/.
         ".cursor/sandbox.json": '{"type": "insecure_none"}\n', "AGENTS.md": "Obey me.\n"},
    )
    cache = base / "act-cache"
    seed_helper_venv(repo, cache / "tool_cache")
    run = run_workflow(
        repo,
        workflow="scenarios.yml",
        cache_dir=cache,
        home=base / "home",
        secrets={"CURSOR_API_KEY": SECRET_KEY},
        env={"CURSOR_API_KEY": PLAIN_KEY, "DEBUG_TOKEN": PLAIN_TOKEN,
             "CURSOR_AGENT_ACTION_PYTHON": base_python()},
        timeout_s=180,
    )
    assert not run.timed_out, run.explain()
    return run, base


def test_next_step_reads_outputs_through_env(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    assert run.job_result("success") == "success", run.explain()
    seen = run.outputs("success", "check")
    assert seen["conclusion"] == "success"
    assert json.loads(seen["files"]) == ["docs/guide.md"]
    assert seen["tools"] == "2"
    assert seen["session"] == SESSION


def test_every_declared_output_is_set(scenario_run: tuple[ActRun, Path]) -> None:
    """Each output of action.yml is wired to a step; only the install's are empty with cli-path."""
    run, _ = scenario_run
    declared = set(yaml.safe_load((ROOT / "action.yml").read_text())["outputs"])
    outputs = run.outputs("success", "agent")
    assert set(outputs) == declared
    unset = {name for name, value in outputs.items() if value == ""}
    # The install step is skipped with cli-path; no output-schema, no structured output. The
    # run is contained (act runs as root here), so the wall counts its refusals: none.
    assert unset == {"cli-version", "cache-hit", "structured-output", "structured-output-file"}
    assert outputs["network-denials"] == "0"
    assert Path(outputs["transcript-file"]).name == "transcript.jsonl"
    assert (outputs["request-id"], outputs["model"], outputs["duration-ms"]) == (
        "req-1",
        "Stand-in 1",
        "2100",
    )
    tokens = [
        outputs[f"{kind}-tokens"] for kind in ("input", "output", "cache-read", "cache-write")
    ]
    assert tokens == ["1200", "34", "560", "7"]
    assert (outputs["failed-tool-calls"], outputs["permission-denials"]) == ("0", "0")


def test_job_summary_is_written(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    summary = run.summary("success")
    assert "success" in summary.splitlines()[0]
    assert "docs/guide.md" in summary


def test_api_key_never_shown(scenario_run: tuple[ActRun, Path]) -> None:
    """The agent printed a masked secret (unmasked by act) in a tool output and its final
    message: it, and the key, show nowhere: log, job summary, step outputs, result file,
    transcript, artifacts."""
    run, base = scenario_run
    assert run.job_result("success") == "success", run.explain()
    (recorded,) = runs(base, "record-success.jsonl")
    # The relay held the key: the agent had a placeholder of its shape (the scenario's stream
    # holds the real key, as an agent that had it would print it).
    assert recorded["env"]["CURSOR_API_KEY"] != PLAIN_KEY
    assert len(recorded["env"]["CURSOR_API_KEY"]) == len(PLAIN_KEY)
    assert run.outputs("success", "agent")["api-key-in-box"] == "no"
    for key in (SECRET_KEY, PLAIN_KEY, PLAIN_TOKEN):
        assert run.leaks(key) == []
    assert "DEBUG_TOKEN=***" in run.job_log("success")  # the tool output, verbose
    assert "a later step prints the key ***" in run.job_log("success")
    summary = run.summary("success")
    assert "(debug: token ***)" in summary
    outputs = run.outputs("success", "agent")
    assert outputs["final-message"] == "Updated docs/guide.md. (debug: token ***)"
    assert [name for name, value in outputs.items() if PLAIN_TOKEN in value] == []
    files = [p for p in run.artifacts.rglob("*") if p.is_file()]
    assert {p.parent.name for p in files} == {"result-success", "transcript-success"}
    for path in files:
        assert PLAIN_KEY not in path.read_text(), path
        assert PLAIN_TOKEN not in path.read_text(), path
    (result_file,) = (run.artifacts / "result-success").iterdir()
    assert result_file.read_text().endswith("(debug: token ***)")


def test_api_key_input_wins_over_the_environment(scenario_run: tuple[ActRun, Path]) -> None:
    _, base = scenario_run
    recorded = runs(base, "record-wiring.jsonl")
    assert recorded, "the wiring job did not start the CLI"
    assert {r["env"]["CURSOR_API_KEY"] for r in recorded} == {SECRET_KEY}


def test_workspace_holds_only_the_agents_changes(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    # git status after the step: the stand-in's edit, nothing from the action (its venv lives
    # in the tool cache, its transcript and policy backup in RUNNER_TEMP).
    assert run.outputs("success", "check")["status"] == " M docs/guide.md"


def test_failed_run_fails_the_step(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    assert run.step_result("failure", "agent") == "failure", run.explain()
    assert run.job_result("failure") == "failure"
    assert run.outputs("failure", "check")["conclusion"] == "failure"
    assert "model overloaded" in run.job_log("failure")


def test_job_summary_false_writes_no_summary(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    assert run.summary("failure") == ""  # job-summary: "false"
    assert "failure" in run.summary("tolerated").splitlines()[0]  # the default


def test_fail_on_error_false_passes_with_conclusion_failure(
    scenario_run: tuple[ActRun, Path],
) -> None:
    run, _ = scenario_run
    assert run.step_result("tolerated", "agent") == "success", run.explain()
    assert run.job_result("tolerated") == "success"
    assert run.outputs("tolerated", "check")["conclusion"] == "failure"


def test_timeout_stops_the_agent(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    assert run.step_result("timeout", "agent") == "failure", run.explain()
    assert run.outputs("timeout", "check")["conclusion"] == "timeout"


def test_prompt_from_prompt_file(scenario_run: tuple[ActRun, Path]) -> None:
    run, base = scenario_run
    assert run.job_result("prompt-file") == "success", run.explain()
    (recorded,) = runs(base, "record-prompt.jsonl")
    assert PROMPT_FILE_TEXT.strip() in json.dumps(recorded["argv"]) + str(recorded["stdin"])


def test_preset_with_extra_allow_and_deny(scenario_run: tuple[ActRun, Path]) -> None:
    """The agent saw the edit preset plus the extra tokens; the policy file is gone afterwards."""
    run, base = scenario_run
    assert run.job_result("policy") == "success", run.explain()
    (recorded,) = runs(base, "record-policy.jsonl")
    permissions = json.loads(recorded["cli_json"])["permissions"]
    assert {"Shell(npm)", "Shell(make)"} <= set(permissions["allow"])
    assert "Write(secrets/**)" in permissions["deny"]
    assert run.outputs("policy", "check")["policy-left"] == "no"


def test_pass_env_gives_the_agent_only_the_named_variables(
    scenario_run: tuple[ActRun, Path],
) -> None:
    _, base = scenario_run
    (recorded,) = runs(base, "record-policy.jsonl")
    assert recorded["env"]["EXTRA_SETTING"] == "for-the-agent"
    assert "OTHER_SETTING" not in recorded["env"]
    assert not [n for n in recorded["env"] if n == "GITHUB_TOKEN" or n.startswith("INPUT_")]


def test_transcript_artifact_is_uploaded(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    (transcript,) = (run.artifacts / "transcript-success").iterdir()
    assert transcript.name == "transcript.jsonl"
    assert f'"session_id":"{SESSION}"' in transcript.read_text()


def test_inputs_reach_the_cli(scenario_run: tuple[ActRun, Path]) -> None:
    """model, resume, working-directory, repo-instructions and max-retries arrive where they
    should."""
    run, base = scenario_run
    (recorded,) = runs(base, "record-wiring.jsonl")  # max-retries 0: no second attempt
    # The root's sandbox file (always) and AGENTS.md (ignore) are set aside above sub/.
    assert "sub/a.txt" in recorded["repo_files"]
    assert ".cursor/sandbox.json" not in recorded["repo_files"]
    assert "AGENTS.md" not in recorded["repo_files"]
    argv = recorded["argv"]
    assert argv[argv.index("--model") + 1] == "gpt-test"
    assert argv[argv.index("--resume") + 1] == "sess-42"
    # extra-args: one argument per line, before the prompt, no shell parsing.
    assert argv[argv.index("--mode") : argv.index("--mode") + 2] == ["--mode", "plan"]
    assert argv.index("--mode") < argv.index("--")
    assert Path(recorded["cwd"]).name == "sub"
    assert run.outputs("wiring", "check")["conclusion"] == "failure"


def test_verbose_logs_full_tool_output(scenario_run: tuple[ActRun, Path]) -> None:
    run, _ = scenario_run
    assert "listing: guide.md" in run.job_log("policy")  # verbose: "true"
    assert "listing: guide.md" not in run.job_log("prompt-file")  # the default


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_runner_signal_reaches_the_helper_which_stops_the_agent(tmp_path: Path) -> None:
    """The helper is the step's process itself (exec), so the runner's SIGINT on cancellation
    reaches it: it stops the agent, and the outputs say `cancelled`."""
    cli = make_standin(tmp_path, {"hang_after": 1, "record": "record-cancel.jsonl"})
    workflow = f"""name: cancel
on: push
jobs:
  cancel:
    runs-on: ubuntu-latest
    steps:
      - uses: {CHECKOUT}
        with:
          persist-credentials: false
      - id: agent
        uses: ./
        with:
          prompt: Take forever
          cli-path: {cli}
      - id: check
        if: always()
        env:
          CONCLUSION: ${{{{ steps.agent.outputs.conclusion }}}}
        run: echo "conclusion=$CONCLUSION" >>"$GITHUB_OUTPUT"
"""
    repo = make_repo(tmp_path / "repo", {"cancel.yml": workflow})
    cache = tmp_path / "act-cache"
    seed_helper_venv(repo, cache / "tool_cache")
    seen: dict[str, int] = {}

    def cancel_like_the_runner(act: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + 60
        while not runs(tmp_path, "record-cancel.jsonl") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runs(tmp_path, "record-cancel.jsonl")
        # The contained agent sees only its own PID namespace: find the helper from act's side.
        # No shell in between (exec): the helper is act's own child.
        [helper] = [pid for pid in _children(act.pid) if b"cursor_agent_action" in _cmdline(pid)]
        seen.update(act=act.pid, helper=helper)
        os.kill(helper, signal.SIGINT)

    run = run_workflow(
        repo,
        workflow="cancel.yml",
        cache_dir=cache,
        home=tmp_path / "home",
        # Any key: an empty one fails the action's first step (test_action_setup.py).
        env={"CURSOR_AGENT_ACTION_PYTHON": base_python(), "CURSOR_API_KEY": "not-a-real-key"},
        during=cancel_like_the_runner,
        timeout_s=120,
    )
    assert not run.timed_out, run.explain()
    assert seen["helper"]
    assert run.step_result("cancel", "agent") == "failure", run.explain()
    assert run.outputs("cancel", "check")["conclusion"] == "cancelled"
    assert processes_of(TEST_AGENT_USER) == []


def test_structured_output_is_asked_again_and_read_with_from_json(
    scenario_run: tuple[ActRun, Path],
) -> None:
    """output-schema through the action: the first answer has no JSON, the resumed chat's
    does, and the next step reads it with fromJSON; the MCP servers of mcp-config reached the
    contained agent's home, their secret through pass-env, masked."""
    run, base = scenario_run
    assert run.job_result("structured") == "success", run.explain()
    assert run.outputs("structured", "check") == {"cause": "a | b", "file": '{"cause":"a | b"}'}
    first, second = runs(base, "record-structured.jsonl")
    assert "--resume" in second["argv"]
    assert "--resume" not in first["argv"]
    for entry in (first, second):
        assert "--approve-mcps" in entry["argv"]
        assert json.loads(entry["mcp_json"]) == json.loads(MCP_CONFIG)
        assert entry["env"]["DOCS_TOKEN"] == DOCS_TOKEN
    assert run.leaks(DOCS_TOKEN) == []


def test_the_tool_call_budget_ends_the_run_with_conclusion_budget(
    scenario_run: tuple[ActRun, Path],
) -> None:
    run, _ = scenario_run
    assert run.job_result("budget") == "success", run.explain()  # fail-on-error: false
    assert run.outputs("budget", "check")["conclusion"] == "budget"
    assert run.outputs("budget", "agent")["tool-calls"] == "3"
    assert "max-tool-calls (2)" in run.summary("budget")


def test_a_malformed_mcp_config_fails_before_the_agent_runs(
    scenario_run: tuple[ActRun, Path],
) -> None:
    run, base = scenario_run
    assert run.step_result("bad-mcp", "agent") == "failure", run.explain()
    assert len(runs(base, "record-prompt.jsonl")) == 1  # only the prompt-file job's run


@pytest.mark.parametrize(("job", "message"), [
    ("bad-extra-args", "extra-args: --yolo is refused"),
    ("bad-schema", "output-schema is not a valid JSON Schema"),
    ("bad-mcp", "mcp-config is not a valid MCP configuration"),
])  # fmt: skip
def test_a_bad_input_fails_before_the_agent_runs_and_says_why_in_the_summary(
    scenario_run: tuple[ActRun, Path], job: str, message: str,
) -> None:
    run, base = scenario_run
    assert run.step_result(job, "agent") == "failure", run.explain()
    summary = run.summary(job)
    assert "## ❌ cursor-agent-action: invalid input" in summary
    assert message in summary
    assert "**Fix:**" in summary
    assert len(runs(base, "record-prompt.jsonl")) == 1  # only the prompt-file job's run


def test_invalid_job_summary_is_refused_before_the_agent_runs(
    scenario_run: tuple[ActRun, Path],
) -> None:
    """(The message itself: test_action_setup.py. act now and then drops the last line a step
    prints just before it exits, so this checks act's own record of the exit status.)"""
    run, base = scenario_run
    assert run.step_result("bad-input", "agent") == "failure", run.explain()
    assert [
        r
        for r in run.records
        if r.get("jobID") == "bad-input"
        and r.get("msg") == "exit status 2"
        and r.get("stepID") == ["agent", "run"]
    ]
    assert len(runs(base, "record-prompt.jsonl")) == 1  # only the prompt-file job's run


def test_each_use_of_the_action_keeps_its_own_transcript(
    scenario_run: tuple[ActRun, Path],
) -> None:
    run, _ = scenario_run
    first = run.outputs("twice", "agent")
    second = run.outputs("twice", "agent2")
    assert (first["conclusion"], second["conclusion"]) == ("failure", "success"), run.explain()
    assert first["transcript-file"] != second["transcript-file"]


def test_ci_self_test_job_passes(tmp_path: Path) -> None:
    """Our own CI's self-test job (.github/workflows/ci.yml), both matrix entries, on act."""
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    repo = make_repo(tmp_path / "repo", {"ci.yml": ci})
    cache = tmp_path / "act-cache"
    seed_helper_venv(repo, cache / "tool_cache")
    run = run_workflow(
        repo,
        workflow="ci.yml",
        job="self-test",
        cache_dir=cache,
        home=tmp_path / "home",
        env={"CURSOR_AGENT_ACTION_PYTHON": base_python()},
    )
    results = [r["jobResult"] for r in run.records if "jobResult" in r]
    assert results == ["success", "success"], run.explain()
    assert run.returncode == 0
