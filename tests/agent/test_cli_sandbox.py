"""The CLI's own sandbox made explicit: the home ``sandbox.json`` from the preset and the
network allow-list, the mode chosen from what the runner supports, and the CLI's "Sandbox mode
is enabled but not available" as a known failure. The stand-in CLI plays that failure and
every late-2026 stream shape."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent.contain.sandbox import AgentExit, EndedBy
from cursor_agent_action.agent.guards.cli_sandbox import (
    CURSOR_DOMAINS,
    SandboxSupport,
    describe,
    environment_tmpdir,
    lists_sandbox_flag,
    probe,
    sandbox_json,
    sandbox_mode,
)
from cursor_agent_action.agent.guards.permissions import PRESETS, build_policy
from cursor_agent_action.agent.judge.failures import classify, explain_exit
from cursor_agent_action.standin.answers import SANDBOX_UNAVAILABLE
from cursor_agent_action.stream.engine import process_stream
from tests.support.standin import make_standin, records

# -- sandbox.json ------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", PRESETS)
def test_the_preset_decides_the_file_mode_read_only_presets_get_workspace_readonly(
    preset: str,
) -> None:
    """A hostile agent in a read-only run that writes through a shell command (``echo x >
    README.md``) meets ``workspace_readonly``, not the CLI's default ``workspace_readwrite``."""
    policy = build_policy(preset, [], [])
    settings = json.loads(sandbox_json(read_only=not policy.allows_writes,
                                       domains=CURSOR_DOMAINS, writable=["/home/a/tmp"]))
    expected = "workspace_readwrite" if policy.allows_writes else "workspace_readonly"
    assert settings["type"] == expected
    assert settings["additionalReadwritePaths"] == (["/home/a/tmp"] if policy.allows_writes
                                                     else [])  # fmt: skip


def test_the_network_policy_denies_all_but_the_allow_list() -> None:
    settings = json.loads(sandbox_json(read_only=True,
                                       domains=["API2.cursor.sh", "*.cursorapi.com", " ", "x.io"]))
    assert settings["networkPolicy"] == {
        "default": "deny", "allow": ["*.cursorapi.com", "api2.cursor.sh", "x.io"], "deny": []}
    assert settings["disableTmpWrite"] is False
    nothing = json.loads(sandbox_json(read_only=False, domains=[]))
    assert nothing["networkPolicy"]["allow"] == []  # no domain: no network for commands


@pytest.mark.parametrize("domain", ["evil.com\",\"default\":\"allow", "*", "a b.com", "http://x",
                                    "*.*.com", "-x.com"])
def test_a_value_that_is_not_a_domain_never_reaches_the_policy(domain: str) -> None:
    with pytest.raises(ValueError, match="not a domain"):
        sandbox_json(read_only=True, domains=["cursor.com", domain])


def test_the_agents_tmpdir_is_its_writable_extra_path() -> None:
    assert environment_tmpdir({"TMPDIR": "/home/agent/tmp"}) == ["/home/agent/tmp"]
    assert environment_tmpdir({"TMPDIR": "relative"}) == []
    assert environment_tmpdir({}) == []


# -- the mode ----------------------------------------------------------------------------------


def _reader(files: dict[str, str]) -> Any:
    return files.get


UBUNTU_2404 = {  # what GitHub's ubuntu-24.04 images show
    "/sys/kernel/security/lsm": "lockdown,capability,landlock,yama,apparmor",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1",
    "/proc/sys/user/max_user_namespaces": "63936",
}


def test_the_sandbox_is_off_where_apparmor_restricts_user_namespaces() -> None:
    support = probe("Linux", "6.8.0-1017-azure", _reader(UBUNTU_2404))
    assert not support.available
    assert "apparmor_restrict_unprivileged_userns=1" in support.reason
    assert sandbox_mode(support, listed=True) == "disabled"
    assert "box contains the agent" in describe("disabled", support)


@pytest.mark.parametrize(("release", "files", "why"), [
    ("5.15.0-1064-azure", {}, "older than 6.2"),
    ("6.8.0", {"/sys/kernel/security/lsm": "capability,yama,apparmor"}, "Landlock"),
    ("6.8.0", {"/proc/sys/kernel/unprivileged_userns_clone": "0"}, "unprivileged_userns_clone"),
    ("6.8.0", {"/proc/sys/user/max_user_namespaces": "0"}, "max_user_namespaces"),
])  # fmt: skip
def test_each_missing_requirement_turns_it_off_naming_why(
    release: str, files: dict[str, str], why: str
) -> None:
    support = probe("Linux", release, _reader(files))
    assert not support.available
    assert why in support.reason


def test_the_sandbox_is_on_where_the_runner_can_host_it() -> None:
    able = dict(UBUNTU_2404, **{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "0"})
    assert probe("Linux", "6.11.0", _reader(able)) == SandboxSupport(True)
    assert probe("Darwin", "24.0.0", _reader({})) == SandboxSupport(True)
    assert sandbox_mode(SandboxSupport(True), listed=True) == "enabled"
    assert not probe("Windows", "10", _reader({})).available


def test_a_build_without_the_flag_gets_none(tmp_path: Path) -> None:
    help_text = subprocess.run([str(make_standin(tmp_path, {})), "--help"], capture_output=True,
                               check=True, timeout=20).stdout  # fmt: skip
    assert lists_sandbox_flag(help_text)
    assert not lists_sandbox_flag(b"Options:\n  --sandboxes-are-fun\n  -p, --print\n")
    assert sandbox_mode(SandboxSupport(True), listed=False) == ""


# -- the known failure, played by the stand-in -------------------------------------------------


def _run_standin(tmp_path: Path, scenario: dict[str, Any],
                 *args: str) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    agent = make_standin(tmp_path, scenario)
    return subprocess.run([str(agent), "-p", "--output-format", "stream-json", *args, "--",
                           "go"], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=20, check=False)  # fmt: skip


def test_sandbox_unavailable_stops_the_cli_before_any_event_unless_disabled(
    tmp_path: Path,
) -> None:
    scenario = {"sandbox_unavailable": True, "answer": "ok", "record": "r.jsonl"}
    for args in ((), ("--sandbox", "enabled")):
        failed = _run_standin(tmp_path, scenario, *args)
        assert failed.returncode == 1
        assert failed.stdout == b""
        assert failed.stderr.decode() == SANDBOX_UNAVAILABLE
    ran = _run_standin(tmp_path, scenario, "--sandbox", "disabled")
    assert ran.returncode == 0
    assert json.loads(ran.stdout.splitlines()[-1])["result"] == "ok"
    assert [r["argv"][3:5] for r in records(tmp_path, "r.jsonl")][-1] == ["--sandbox",
                                                                           "disabled"]


def test_the_failure_is_known_and_its_fix_is_given(tmp_path: Path) -> None:
    stderr = _run_standin(tmp_path, {"sandbox_unavailable": True}).stderr.decode()
    known = classify(stderr)
    assert known is not None
    assert known.title == "the CLI's own sandbox is not available"
    assert not known.transient  # the same command line fails the same way
    ended = AgentExit(ended_by=EndedBy.EXIT, returncode=1, stderr=stderr, pgid=0)
    paragraph = explain_exit(ended, 10)
    assert paragraph.startswith("cursor-agent failed: the CLI's own sandbox is not available.")
    assert "--sandbox disabled" in paragraph
    assert "AppArmor" in paragraph


def test_the_standin_records_the_home_sandbox_file_the_cli_would_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cursor").mkdir(parents=True)
    text = sandbox_json(read_only=True, domains=CURSOR_DOMAINS)
    (home / ".cursor" / "sandbox.json").write_text(text)
    agent = make_standin(tmp_path, {"record": "r.jsonl"})
    subprocess.run([str(agent), "-p", "--", "go"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                   env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, capture_output=True,
                   timeout=20, check=True)  # fmt: skip
    assert records(tmp_path, "r.jsonl")[0]["sandbox_json"] == text


def test_the_standin_plays_every_new_shape(tmp_path: Path) -> None:
    out = _run_standin(tmp_path, {"new_shapes": True})
    assert out.returncode == 0
    record = process_stream(io.BytesIO(out.stdout), None)
    groups = record.stream.grouped()
    assert [c.target for c in groups.hook_denied] == ["docs/frozen.md", "curl example.com"]
    assert [(i.label, i.answer) for i in record.stream.interactions] == [
        ("question", "rejected"), ("plan for approval", "")]
    assert [n.subtype for n in record.stream.notices] == ["task_notification",
                                                   "background_shell_timeout"]
    stream = record.stream
    tokens = (stream.input_tokens, stream.output_tokens, stream.cache_read_tokens,
              stream.cache_write_tokens)
    assert tokens == (1200, 34, 560, 7)
