"""The helper <-> root contract of the box: typed, versioned, refused when of another shape."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cursor_agent_action.agent.box.contract import (
    LISTED,
    VERSION,
    BoxLimits,
    BoxSpec,
    BoxStatus,
    ContractError,
    Finished,
    Listed,
)
from cursor_agent_action.agent.box.net.policy import NetPolicy, Rule

LIMITS = BoxLimits(memory_bytes=1 << 30, tmp_bytes=1 << 20, max_file_bytes=100,
                   max_total_bytes=1000, write_bytes=2000, max_files=10)


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
                       network={"refused": []}, patch="/p", changed=3,
                       protected=Listed.of([".cursor/cli.json"]), left_behind=2)
    assert BoxStatus.from_json(json.loads(json.dumps(status.to_json()))) == status


@pytest.mark.parametrize("data", [
    {}, [], None, {"version": VERSION + 1, "started": True},
    {"version": VERSION, "started": "yes"},
    {"version": VERSION, "started": True, "returncode": "0"},
    {"version": VERSION, "started": True, "surprise": 1},
    {"version": VERSION, "started": True, "protected": {"paths": ["a"]}},
])
def test_a_status_of_another_shape_is_refused(data: object) -> None:
    with pytest.raises(ContractError):
        BoxStatus.from_json(data)


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
                       network={"events": ["y" * 100_000]})
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
