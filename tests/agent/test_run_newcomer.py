"""What a newcomer's first runs meet: a blank API key warns like a missing one, and a run piped
into a file still writes the readable outputs list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.agent_run import run

pytestmark = pytest.mark.usefixtures("run_env")


KEYS = {"empty": ("", "is set but empty"), "blank": ("  ", "is set but empty"),
        "unset": (None, "is not set")}


@pytest.mark.parametrize("case", KEYS)
def test_an_empty_or_blank_key_warns_like_a_missing_one(
    case: str, tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    value, said = KEYS[case]
    if value is None:
        monkeypatch.delenv("CURSOR_API_KEY")
    else:
        monkeypatch.setenv("CURSOR_API_KEY", value)
    result = run(tmp_path, workspace, capsys, {}, "--isolation", "none")
    assert result.code == 0
    [warning] = [line for line in result.log.splitlines()
                 if line.startswith("::warning title=no API key::")]
    assert f"CURSOR_API_KEY {said}: the CLI will fail to authenticate" in warning


def test_a_piped_run_off_a_runner_writes_the_readable_outputs(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    result = run(tmp_path, workspace, capsys, {}, "--isolation", "none")
    assert result.code == 0
    listed = (tmp_path / "outputs.readable.txt").read_text().splitlines()
    assert "conclusion=success" in listed
