"""The wall's inputs: allowed-domains and network reach the run's options, MCP URL hosts are
allowed for the run, and a bad value stops the run before the agent starts."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from cursor_agent_action.agent.launch.run_options import add_run_options, options_from_args
from tests.support.agent_run import run


def _options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> argparse.Namespace:
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path))
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    return parser.parse_args(["--prompt", "x", "--agent-bin", sys.executable,
                              "--working-directory", str(tmp_path), *argv])


def test_the_policy_holds_the_defaults_the_input_and_the_mcp_url_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CURSOR_AGENT_ACTION_ALLOWED_DOMAINS",
                       "registry.npmjs.org\n*.corp.example:8443")
    config = {"mcpServers": {"docs": {"url": "https://mcp.example.com/sse"},
                             "local": {"command": "x"}}}
    options = options_from_args(_options(tmp_path, monkeypatch, "--mcp-config",
                                         json.dumps(config)))
    assert options.network == "restricted"
    assert options.net_policy is not None
    assert [(r.pattern, r.source) for r in options.net_policy.rules[-3:]] == [
        ("registry.npmjs.org", "allowed-domains"), ("*.corp.example", "allowed-domains"),
        ("mcp.example.com", "mcp-config")]
    assert options.net_policy.allows("mcp.example.com", 443)
    assert options_from_args(_options(tmp_path, monkeypatch, "--network", "open")).network == (
        "open")


@pytest.mark.parametrize(("args", "message"), [
    (("--allowed-domains", "https://evil.example/x"),
     "allowed-domains: 'https://evil.example/x' is a URL"),
    (("--allowed-domains", "ok.example\n169.254.169.254"),
     "allowed-domains: '169.254.169.254' is an IP address"),
])  # fmt: skip
def test_a_bad_allowed_domains_line_stops_the_run_before_the_agent_starts(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...], message: str,
) -> None:
    result = run(tmp_path, workspace, capsys, {}, *args)
    assert result.code == 2
    assert result.runs == []
    assert message in result.log


def test_a_bad_network_value_names_the_input(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CURSOR_AGENT_ACTION_VOCABULARY", "inputs")
    monkeypatch.setenv("CURSOR_AGENT_ACTION_NETWORK", "closed")
    result = run(tmp_path, workspace, capsys, {})
    assert result.code == 2
    assert result.runs == []
    assert "network must be restricted or open, not 'closed'" in result.log
