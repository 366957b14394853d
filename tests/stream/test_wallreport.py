"""The network wall's report as a typed contract: through JSON unchanged, read defensively
(wrong types dropped, lists bounded, never an exception but one clear error), redacted whole."""

from __future__ import annotations

import json
import time

import pytest

from cursor_agent_action.markdown import utf8_len
from cursor_agent_action.stream.record import Conclusion, RunReport, StreamResult
from cursor_agent_action.stream.render import wallsection
from cursor_agent_action.stream.render.summary import render_summary
from cursor_agent_action.stream.wallreport import (
    MAX_LISTED,
    AllowRule,
    Destination,
    NetReport,
    Refusal,
    ReportError,
)
from tests.stream.test_summary import DANGEROUS, rendered_markup
from tests.stream.test_wallsection import HOSTILE, SECRET, wall_json, wall_report

HUGE = 20 * MAX_LISTED

FULL = NetReport(
    "restricted",
    "",
    rules=(
        AllowRule("*.cursor.sh", (443,), "default"),
        AllowRule("a.example", (443, 80), "allowed-domains"),
    ),
    unreachable=("http://10.0.0.5/mcp",),
    allowed=(Destination("api2.cursor.sh:443", 3, 1, 1200, 56000),),
    refused=(
        Refusal("evil.example", "dns", 2, "no rule allows this name", "2026-11-25T10:00:00Z"),
    ),
    allowed_total=3,
    refused_total=2,
    omitted=4,
    error="the relay stopped: OSError: boom",
)


def test_a_report_goes_through_json_unchanged() -> None:
    for report in (FULL, NetReport("uncontained", "no root"), NetReport("open"), wall_report()):
        assert NetReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    assert FULL.to_json()["refused"][0] == {
        "destination": "evil.example",
        "kind": "dns",
        "count": 2,
        "first": "no rule allows this name",
        "first_at": "2026-11-25T10:00:00Z",
    }
    assert set(FULL.to_json()) == {
        "mode",
        "why",
        "rules",
        "unreachable",
        "allowed",
        "refused",
        "allowed_total",
        "refused_total",
        "omitted",
        "error",
    }


@pytest.mark.parametrize(
    "data",
    [None, "restricted", [], 5, {}, {"mode": None}, {"mode": ["restricted"]}, {"why": "no mode"}],
)
def test_a_report_that_is_no_object_or_has_no_mode_is_one_clear_error(data: object) -> None:
    with pytest.raises(ReportError, match="the network report is no object with a mode"):
        NetReport.from_json(data)


def test_wrong_types_are_dropped_or_zeroed() -> None:
    report = NetReport.from_json(
        {
            "mode": "restricted",
            "why": 7,
            "error": ["boom"],
            "omitted": "9",
            "allowed_total": 1.5,
            "refused_total": True,
            "unreachable": ["http://ok/", 5, None, {"u": 1}],
            "rules": [
                {"pattern": 3, "ports": [443, "80", True, 0, -1, None], "source": None},
                "x",
                None,
                {"ports": "443"},
            ],
            "allowed": [1, None, {"destination": 5, "connections": "3", "bytes_in": 2.0}],
            "refused": [
                {
                    "destination": {"nested": [SECRET]},
                    "kind": None,
                    "count": 2,
                    "first": ["x"],
                    "first_at": 0,
                }
            ],
        }
    )
    assert report == NetReport(
        "restricted",
        "",
        rules=(AllowRule("", (443, -1), ""), AllowRule("", (), "")),
        unreachable=("http://ok/",),
        allowed=(Destination(""),),
        refused=(Refusal("", "", 2),),
    )
    text = wallsection.section(report, 100_000)
    assert "<summary>Network: " in text
    assert SECRET not in text  # a non-string name is dropped, never str()'d into the summary
    assert wallsection.denials(report) == "0"


def test_a_huge_hostile_report_is_read_bounded_and_renders_within_budget() -> None:
    hostile = {
        "destination": HOSTILE,
        "kind": HOSTILE,
        "count": 10**30,
        "first": HOSTILE * 50,
        "first_at": HOSTILE,
    }
    data = wall_json(
        refused=[hostile] * HUGE,
        allowed=[{"destination": 1}] * HUGE,
        unreachable=[HOSTILE] * HUGE,
        omitted=7,
        rules=[{"pattern": HOSTILE, "ports": list(range(HUGE)), "source": "default"}]
        + [{"pattern": HOSTILE, "ports": [443], "source": "x"}] * 2 * MAX_LISTED,
    )
    started = time.monotonic()
    report = NetReport.from_json(json.loads(json.dumps(data)))
    assert (
        len(report.refused),
        len(report.allowed),
        len(report.unreachable),
        len(report.rules),
    ) == (MAX_LISTED, MAX_LISTED, MAX_LISTED, MAX_LISTED)
    assert len(report.rules[0].ports) == MAX_LISTED - 1  # the first MAX_LISTED read; 0 is none
    assert report.omitted == 7 + 2 * (HUGE - MAX_LISTED)  # the destinations not read
    text = wallsection.section(report, 1_000_000)
    assert time.monotonic() - started < 5
    assert f"**Refused ({MAX_LISTED + report.omitted:,}):**" in text
    assert text.count("\n| `") <= 2 * wallsection.ROWS
    for bad in DANGEROUS:
        assert bad not in rendered_markup(text), bad
    record = RunReport(StreamResult(model="m"), Conclusion.SUCCESS, network=report)
    assert utf8_len(render_summary(record, budget_bytes=20_000)) <= 20_000


def test_redacted_redacts_every_string_of_the_report() -> None:
    secret = NetReport(
        "restricted",
        f"why {SECRET}",
        rules=(AllowRule(f"{SECRET}.example", (443,), f"src {SECRET}"),),
        unreachable=(f"http://{SECRET}/mcp",),
        allowed=(Destination(f"{SECRET}.example:443", 1),),
        refused=(
            Refusal(f"{SECRET}.evil.test", f"k{SECRET}", 1, f"asked {SECRET}", f"at {SECRET}"),
        ),
        error=f"relay {SECRET}",
    )
    clean = secret.redacted(lambda text: text.replace(SECRET, "***"))
    assert SECRET in json.dumps(secret.to_json())
    assert SECRET not in json.dumps(clean.to_json())
    assert clean.refused[0].destination == "***.evil.test"
    assert clean.rules[0].ports == (443,)
    assert (clean.allowed[0].connections, clean.refused[0].count) == (1, 1)
