"""The network wall's report in the job summary and outputs: a Network section only when a
report exists, inert whatever names the agent asked for, redacted, within budget."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from cursor_agent_action.markdown import utf8_len
from cursor_agent_action.output_file import parse_output_file
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.record import Conclusion, RunReport, StreamResult
from cursor_agent_action.stream.render import wallsection
from cursor_agent_action.stream.render.report import report
from cursor_agent_action.stream.render.summary import render_summary
from cursor_agent_action.stream.wallreport import NetReport
from tests.stream.test_summary import DANGEROUS, rendered_markup

SECRET = "sk-live-0123456789abcdef"
HOSTILE = "x`|<script>alert(1)</script>\n## Heading ![img](http://e/)"


def wall_json(**changes: Any) -> dict[str, Any]:
    """The report as the box's status carries it (JSON)."""
    base: dict[str, Any] = {
        "mode": "restricted",
        "rules": [{"pattern": "*.cursor.sh", "ports": [443], "source": "default"},
                  {"pattern": "registry.npmjs.org", "ports": [443, 80],
                   "source": "allowed-domains"},
                  {"pattern": "mcp.example.com", "ports": [443], "source": "mcp-config"}],
        "unreachable": [],
        "allowed": [{"destination": "api2.cursor.sh:443", "connections": 3, "failed": 0,
                     "bytes_out": 2048, "bytes_in": 3 * 1024 * 1024}],
        "refused": [{"destination": f"{SECRET}.example.test", "kind": "dns", "count": 4,
                     "first": "no rule allows this name", "first_at": "2026-11-25T10:00:00Z"},
                    {"destination": HOSTILE, "kind": "sni-mismatch", "count": 1,
                     "first": HOSTILE, "first_at": "2026-11-25T10:00:01Z"}],
        "allowed_total": 3, "refused_total": 5, "omitted": 0, "error": "",
    }
    return {**base, **changes}


def wall_report(**changes: Any) -> NetReport:
    return NetReport.from_json(wall_json(**changes))


def test_without_a_report_the_summary_has_no_network_section_and_the_output_is_empty() -> None:
    record = RunReport(StreamResult(model="m"), Conclusion.SUCCESS)
    assert "Network" not in render_summary(record, budget_bytes=100_000)
    assert wallsection.denials(None) == ""


def test_the_section_lists_what_was_allowed_reached_and_refused() -> None:
    record = RunReport(StreamResult(model="m"), Conclusion.SUCCESS, network=wall_report())
    text = render_summary(record, budget_bytes=100_000)
    assert "**Refused:** 5 connections (network)" in text  # on top: what was refused
    section = text[text.index("<details><summary>Network: restricted, 5 refused</summary>"):]
    assert ("Allowed for this run: Cursor's own domains (`*.cursor.sh:443`); `allowed-domains` "
            "(`registry.npmjs.org:443,80`); `mcp-config`'s URL servers (`mcp.example.com:443`)"
            in section.replace("\n", " "))  # one paragraph, wrapped
    assert "**Refused (2):**" in section
    assert f"| `{SECRET}.example.test` | `dns` | 4 | `no rule allows this name` 2026-11-25" in (
        section)
    assert "| `api2.cursor.sh:443` | 3 | 0 | 2.0 KiB | 3.0 MiB |" in section
    markup = rendered_markup(text)
    for bad in DANGEROUS:
        assert bad not in markup, bad
    assert wallsection.denials(record.network) == "5"


def test_open_and_uncontained_runs_say_there_was_no_wall() -> None:
    opened = wallsection.section(NetReport("open"), 10_000)
    assert "`network: open`" in opened
    uncontained = wallsection.section(NetReport("uncontained", "no root"), 10_000)
    assert "No network wall: the agent was not contained (no root)" in uncontained
    assert wallsection.denials(NetReport("open")) == ""


def test_a_stopped_relay_and_unreachable_mcp_servers_are_called_out() -> None:
    text = wallsection.section(wall_report(error="the relay stopped: OSError: boom",
                                       unreachable=["http://10.0.0.5/mcp"]), 10_000)
    assert "> [!CAUTION]\n> the relay stopped: OSError: boom: from then on" in text
    assert "`http://10.0.0.5/mcp`" in text


def test_the_section_fits_its_budget_and_a_malformed_report_does_not_crash() -> None:
    many = [{"destination": f"h{i}.example", "kind": "dns", "count": i, "first": "x" * 300,
             "first_at": "t"} for i in range(200)]
    full = wallsection.section(wall_report(refused=many, refused_total=10_000, omitted=50),
                               1_000_000)
    assert "*200 more not listed.*" in full  # 250 destinations, 50 rows
    assert wallsection.section(wall_report(refused=many), 500) == (
        "*Network: left out to stay under the summary size limit.*\n\n")
    assert utf8_len(wallsection.section(wall_report(refused=many), 10)) <= 10
    junk = NetReport.from_json({"mode": "restricted", "rules": "x", "allowed": [1, None, {}],
                                "refused": [{"count": "many"}], "refused_total": True})
    assert "<summary>Network: " in wallsection.section(junk, 10_000)
    assert wallsection.denials(junk) == "0"


def test_report_redacts_the_network_report_and_sets_network_denials(tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = tmp_path / "summary.md"
    runner = Runner(stdout=io.StringIO(), output_file=out, summary_file=summary,
                    secrets=[SECRET])
    record = RunReport(StreamResult(model="m"), Conclusion.SUCCESS, network=wall_report())
    report(record, runner, result_dir=tmp_path / "r")
    assert parse_output_file(out.read_text())["network-denials"] == "5"
    assert SECRET not in summary.read_text()
    assert "`***.example.test`" in summary.read_text()
