"""Landlock rules as the agent gets them where the box cannot be made: all but the masked places
readable, writes only where given; every ABI's rights; links neither followed nor a way in.

Each restriction is checked in a forked child that restricts itself (Landlock needs no
privilege), reading through the kernel, never by looking at the rule list alone."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import landlock
from tests.support.forked import in_child

ABI = landlock.abi()
needs_landlock = pytest.mark.skipif(ABI < 1, reason="this kernel has no Landlock")


def _in_child(rules: landlock.Rules, version: int, probe: Callable[[], dict[str, str]]
              ) -> dict[str, str]:
    """What ``probe`` saw in a child restricted by ``rules`` (as ABI ``version``)."""
    ruleset = landlock.make_ruleset(rules, version)
    try:
        return in_child(probe, before=lambda: landlock.restrict_self(ruleset))
    finally:
        os.close(ruleset)


def _try(action: Callable[[], object]) -> str:
    try:
        action()
    except OSError as exc:
        return exc.strerror or "refused"
    return "ok"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    places = {"home": tmp_path / "home", "temp": tmp_path / "temp", "mine": tmp_path / "mine",
              "other": tmp_path / "other"}
    for path in places.values():
        path.mkdir()
    (places["home"] / "token").write_text("secret")
    (places["temp"] / "set_env").write_text("secret")
    (places["other"] / "readme").write_text("public")
    return places


def test_read_roots_leave_out_the_masks_and_never_a_link(world: dict[str, Path],
                                                         tmp_path: Path) -> None:
    (tmp_path / "shortcut").symlink_to(world["home"])
    roots = landlock.read_roots([str(world["home"]), str(world["temp"])])
    assert str(world["home"]) not in roots
    assert str(world["temp"]) not in roots
    assert str(world["other"]) in roots
    assert str(tmp_path / "shortcut") not in roots  # a link gets no rule of its own
    assert not any(root == str(tmp_path) or str(tmp_path).startswith(root + "/")
                   for root in roots)  # no rule above a masked place


def test_each_abi_handles_the_rights_it_knows() -> None:
    assert landlock.handled_rights(1) == (1 << 13) - 1
    assert landlock.handled_rights(2) & landlock.REFER
    assert not landlock.handled_rights(2) & landlock.TRUNCATE
    assert landlock.handled_rights(3) & landlock.TRUNCATE
    assert not landlock.handled_rights(4) & landlock.IOCTL_DEV
    assert landlock.handled_rights(7) & landlock.IOCTL_DEV


@needs_landlock
@pytest.mark.parametrize("version", sorted({1, 3, ABI}))
def test_the_masked_places_cannot_be_read_or_reached_by_a_link_or_a_hard_link(
    world: dict[str, Path], tmp_path: Path, version: int,
) -> None:
    """The attack: read the token directly, through a link in a writable place, and by hard
    linking it into a writable place; write beside a masked place. All refused, at each ABI
    this kernel can be asked for; reading the rest and writing its own place still work."""
    (world["mine"] / "via-link").symlink_to(world["home"] / "token")
    rules = landlock.agent_rules(masks=[str(world["home"]), str(world["temp"])],
                                 writable=[str(world["mine"])])

    def probe() -> dict[str, str]:
        return {
            "token": _try((world["home"] / "token").read_text),
            "set_env": _try((world["temp"] / "set_env").read_text),
            "via_link": _try((world["mine"] / "via-link").read_text),
            "hard_link": _try(lambda: os.link(world["home"] / "token",
                                              world["mine"] / "stolen")),
            "list_home": _try(lambda: os.listdir(world["home"])),
            "write_beside": _try(lambda: (tmp_path / "planted").write_text("x")),
            "write_other": _try(lambda: (world["other"] / "readme").write_text("x")),
            "read_other": _try((world["other"] / "readme").read_text),
            "write_mine": _try(lambda: (world["mine"] / "made").write_text("x")),
            "read_etc": _try(lambda: Path("/etc/hostname").read_bytes()),
        }

    seen = _in_child(rules, version, probe)
    assert {name: seen[name] for name in ("read_other", "write_mine", "read_etc")} == {
        "read_other": "ok", "write_mine": "ok", "read_etc": "ok"}
    refused = {name: seen[name] for name in ("token", "set_env", "via_link", "hard_link",
                                             "list_home", "write_beside", "write_other")}
    assert "ok" not in refused.values(), refused
    assert not (world["mine"] / "stolen").exists()


@needs_landlock
def test_a_revealed_place_inside_a_mask_is_readable_but_not_what_is_masked_inside_it(
    world: dict[str, Path],
) -> None:
    """The CLI's install in the masked tool cache is shown again; a masked place inside the
    shown one (the real tree beside the CLI, in the tests) stays masked."""
    cli = world["temp"] / "cli"
    cli.mkdir()
    (cli / "agent").write_text("#!/bin/sh\n")
    (cli / "repo").mkdir()
    (cli / "repo" / "config").write_text("token")
    rules = landlock.agent_rules(masks=[str(world["temp"]), str(cli / "repo")], writable=[],
                                 readable=[str(cli)])
    seen = _in_child(rules, ABI, lambda: {
        "cli": _try((cli / "agent").read_text),
        "inner": _try((cli / "repo" / "config").read_text),
        "outer": _try((world["temp"] / "set_env").read_text),
    })
    assert seen["cli"] == "ok"
    assert seen["inner"] != "ok"
    assert seen["outer"] != "ok"


def test_no_landlock_is_said_plainly() -> None:
    with pytest.raises(landlock.LandlockError, match="has no Landlock"):
        landlock.make_ruleset(landlock.Rules(), 0)
