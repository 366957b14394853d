"""The helper <-> root contract of the box: typed, versioned, refused when of another shape."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain.box.contract import (
    LISTED,
    VERSION,
    BoxLimits,
    BoxSpec,
    BoxStatus,
    ContractError,
    Finished,
    Listed,
)
from cursor_agent_action.agent.contain.box.net.ledger import Ledger
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy, Rule
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.record import Conclusion, RunReport, StreamResult
from cursor_agent_action.stream.render.report import report
from cursor_agent_action.stream.render.summary import render_summary
from cursor_agent_action.stream.wallreport import AllowRule, Destination, NetReport, Refusal

SECRET = "sk-live-0123456789abcdef"
ESCAPED = "tok_live_0123456789_x"
LIMITS = BoxLimits(memory_bytes=1 << 30, tmp_bytes=1 << 20, max_file_bytes=100,
                   max_total_bytes=1000, write_bytes=2000, max_files=10)
REPORT = NetReport("restricted", rules=(AllowRule("*.cursor.sh", (443,), "default"),),
                   unreachable=("http://10.0.0.5/mcp",),
                   allowed=(Destination("api2.cursor.sh:443", 3, 0, 1200, 56000),),
                   refused=(Refusal("evil.example", "dns", 2, "no rule allows this name",
                                    "2026-11-25T10:00:00Z"),),
                   allowed_total=3, refused_total=2, omitted=1, error="")


def _spec() -> BoxSpec:
    return BoxSpec(user="u", argv=("/bin/agent", "-p"), env={"A": "b"}, cwd="/w", repo_root="/w",
                   home="/h", box_dir="/s/box", chats_store="/s/chats", status_file="/s/st",
                   patch_file="/s/p", network_events="/s/ev", limits=LIMITS,
                   masks=("/m",),
                   network=NetPolicy((Rule("*.cursor.sh", (443,), "default"),)),
                   storage="copy", owner=(1000, 1000))


def test_the_spec_goes_through_json_unchanged() -> None:
    spec = _spec()
    assert BoxSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    assert spec.to_json()["version"] == VERSION
    bare = replace(spec, network=None)
    assert BoxSpec.from_json(json.loads(json.dumps(bare.to_json()))) == bare


def test_the_status_goes_through_json_unchanged() -> None:
    status = BoxStatus(True, returncode=-9, limits="memory 1 GiB", storage="overlay",
                       network=REPORT, patch="/p", changed=3,
                       protected=Listed.of([".cursor/cli.json"]), left_behind=2)
    assert BoxStatus.from_json(json.loads(json.dumps(status.to_json()))) == status


@pytest.mark.parametrize("data", [
    {}, [], None, {"version": VERSION + 1, "started": True},
    {"version": VERSION, "started": "yes"},
    {"version": VERSION, "started": True, "returncode": "0"},
    {"version": VERSION, "started": True, "surprise": 1},
    {"version": VERSION, "started": True, "protected": {"paths": ["a"]}},
    {"version": VERSION, "started": True, "network": "restricted"},
    {"version": VERSION, "started": True, "network": {"mode": 1, "refused_total": 5}},
])
def test_a_status_of_another_shape_is_refused(data: object) -> None:
    with pytest.raises(ContractError):
        BoxStatus.from_json(data)


@pytest.mark.parametrize("count", [float("inf"), float("-inf"), float("nan"), 1e400, "9" * 5000])
def test_a_count_no_integer_can_hold_is_refused_not_raised(count: object) -> None:
    """JSON's Infinity (Python's json reads it) in a count of the status or of the finish is
    one ContractError (the helper then fails closed), never an OverflowError out of the run."""
    listed = {"paths": [], "count": count}
    with pytest.raises(ContractError):
        BoxStatus.from_json({"version": VERSION, "started": True, "protected": listed})
    with pytest.raises(ContractError):
        Finished.from_json(json.loads(json.dumps({"version": VERSION, "skipped": listed})))


def test_a_spec_of_another_version_or_shape_is_refused() -> None:
    data = _spec().to_json()
    with pytest.raises(ContractError, match="version"):
        BoxSpec.from_json({**data, "version": VERSION + 1})
    del data["limits"]["max_files"]
    with pytest.raises(ContractError):
        BoxSpec.from_json(data)


def test_a_status_too_long_for_its_file_keeps_what_decides_the_run() -> None:
    many = Listed.of([f"dir/{'x' * 200}{n}" for n in range(5000)])
    assert len(many.paths) == LISTED
    assert many.count == 5000
    status = BoxStatus(True, returncode=0, patch="/p", changed=1, protected=many,
                       network=NetReport("restricted", refused=(Refusal("y" * 100_000, "dns"),)))
    data = status.encoded(4096)
    assert len(data) < 4096
    back = BoxStatus.from_json(json.loads(data))
    assert (back.returncode, back.patch, back.changed, back.protected.count) == (0, "/p", 1, 5000)
    assert back.protected.paths == ()  # the count still fails the run


def test_finished_merges_into_the_status() -> None:
    done = Finished(patch="/p", changed=2, skipped=Listed.of(["sub/x"]))
    merged = done.into(BoxStatus(True, returncode=0, limits="l"))
    assert (merged.patch, merged.changed, merged.skipped.count, merged.limits) == ("/p", 2, 1, "l")
    assert Finished.from_json(json.loads(json.dumps(done.to_json()))) == done


def test_a_hostile_network_report_in_the_status_renders_safely() -> None:
    """The root side's report names what the agent asked for: of the wrong types, it is still
    read (or refused whole), never a crash of the summary, never a value str()'d into it."""
    hostile = {
        "mode": "restricted",
        "rules": [{"pattern": 5, "ports": 443, "source": None}],
        "unreachable": "http://x/",
        "allowed": [{"destination": ["a"], "connections": "3"}],
        "refused": [{"destination": {"x": SECRET}, "kind": 1, "count": "2"}, None],
        "refused_total": "many",
        "error": 5,
    }
    data = json.dumps({"version": VERSION, "started": True, "network": hostile})
    status = BoxStatus.from_json(json.loads(data))
    record = RunReport(StreamResult(model="m"), Conclusion.SUCCESS, network=status.network)
    text = render_summary(record, budget_bytes=100_000)
    assert "<summary>Network: restricted, 0 refused</summary>" in text
    assert "**Refused (1):**" in text
    assert SECRET not in text


def test_a_secret_in_a_refused_name_is_redacted_from_the_summary_and_outputs(
    tmp_path: Path,
) -> None:
    ledger = Ledger(NetPolicy((Rule("*.cursor.sh", (443,), "default"),)))
    ledger.refused("dns", f"{SECRET}.evil.test", f"no rule allows {SECRET}.evil.test")
    ledger.connected(f"{SECRET}.allowed.test:443")
    ledger.broke(f"relay: {ESCAPED}")  # the summary escapes it: only redacting first hides it
    status = BoxStatus(True, returncode=0, network=ledger.report())
    back = BoxStatus.from_json(json.loads(status.encoded(256 * 1024)))
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    runner = Runner(stdout=io.StringIO(), output_file=out, summary_file=summary,
                    secrets=[SECRET, ESCAPED])
    report(RunReport(StreamResult(model="m"), Conclusion.SUCCESS, network=back.network), runner,
           result_dir=tmp_path / "r")
    written = summary.read_text() + out.read_text()
    assert SECRET not in written
    assert "0123456789" not in written  # tok\\_live\\_0123456789\\_x: escaped, yet a leak
    assert "`***.evil.test`" in written
    assert "`***.allowed.test:443`" in written
    assert "> relay: \\*\\*\\*: from then on" in written
