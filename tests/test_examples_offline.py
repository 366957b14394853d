"""Every action an example uses, its own and those of the actions it uses (the action's
``action.yml`` uploads the transcript with actions/upload-artifact), is served from this
machine when the example runs in a repository with no workflow of its own: act fetches
nothing (offline it cannot, and the job fails with ``failed to fetch``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.act import ROOT, STUBS, unserved_actions
from tests.support.example_world import World

EXAMPLES = sorted((ROOT / "examples").glob("*.yml"))


def _world(tmp_path: Path, example: Path) -> World:
    """The world's layout without its servers: a repository holding only ``example``, and
    this checkout as the action (read only)."""
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / example.name).write_text(example.read_text())
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, timeout=60)
    return World(tmp_path, repo, tmp_path / "remote.git", ROOT, cast(Any, None),
                 cast(Any, None), main_sha="0" * 40, head_sha="1" * 40)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_action_an_example_uses_is_served_offline(tmp_path: Path, example: Path) -> None:
    world = _world(tmp_path, example)
    assert world.unserved_actions(example.name) == []


def test_the_check_sees_an_action_uses_through_another_action(tmp_path: Path) -> None:
    """Not vacuous: served as act was before (stand-ins only for the refs the repository's own
    workflows name), the triage example's upload through the action is found missing."""
    example = ROOT / "examples" / "ci-triage.yml"
    world = _world(tmp_path, example)
    local = world.local_actions(example.name)
    by_repository_only = {f"actions/download-artifact@{ref}": STUBS / "download-artifact"
                          for ref in ("d3f86a106a0bac45b974a628896c90dbdf5c8093",)}
    missing = unserved_actions(world.repo / ".github" / "workflows" / example.name,
                               {**by_repository_only, **local})
    assert [m.partition("@")[0] for m in missing] == ["actions/upload-artifact"]
    assert "uses: actions/upload-artifact@" in (ROOT / "action.yml").read_text()


def test_an_action_with_no_stand_in_is_named(tmp_path: Path) -> None:
    """Your own workflow may use an action act cannot have offline: it is named before the
    run (try_example warns), while local and docker actions are left alone."""
    workflow = tmp_path / "ci.yml"
    workflow.write_text("""jobs:
  test:
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
      - uses: ./.github/actions/local
      - uses: docker://alpine:3
      - uses: "cursor-agent-action/cursor-agent-action/publish@v1" # a sub-action
""")
    served = {"actions/checkout@v4": STUBS / "checkout",
              "cursor-agent-action/cursor-agent-action@v1": ROOT}
    assert unserved_actions(workflow, served) == ["actions/setup-node@v4"]
