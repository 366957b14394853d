"""``cursor-agent-action lint``: every with: key the action or a sub-action does not declare is
named, on its line, with the closest valid name; the inputs it knows are action.yml's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from cursor_agent_action.actionrefs import declared_inputs
from cursor_agent_action.cli import main
from cursor_agent_action.lint import check

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "cursor_agent_action" / "data" / "action-inputs.json"
SUBS = ("publish", "comment", "ci-context", "gate", "review", "pr-context")


def _from_action_yml() -> dict[str, list[str]]:
    found = {}
    for sub in ("", *SUBS):
        spec = yaml.safe_load((ROOT / (sub or ".") / "action.yml").read_text())
        found[sub] = list(spec.get("inputs") or {})
    return found


def test_the_inputs_lint_knows_are_those_of_every_action_yml() -> None:
    assert {k: list(v) for k, v in declared_inputs().items()} == _from_action_yml(), (
        "renew with: .venv/bin/python -m tests.test_lint --write")


WORKFLOW = """on: pull_request
jobs:
  agent:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          permision: not ours
      - uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA
        with:
          prompt: Update the docs.
          permision: docs
          api-kye: x
          totally-unrelated-name: 1
      - uses: "cursor-agent-action/cursor-agent-action/publish@COMMIT_SHA"
        with:
          patch-file: x
          allowed-path: '**/*.md'
      - uses: cursor-agent-action/cursor-agent-action/publsh@COMMIT_SHA
"""


def test_each_unknown_key_is_named_on_its_line_with_the_closest_input() -> None:
    found = [(f.line, f.message) for f in check(WORKFLOW)]
    assert [line for line, _ in found] == [12, 13, 14, 18, 19]
    assert found[0][1].startswith("`permision` is not an input of cursor-agent-action/"
                                  "cursor-agent-action: did you mean `permissions`?")
    assert "did you mean `api-key`?" in found[1][1]
    assert "its inputs are prompt, prompt-file, api-key" in found[2][1]
    assert ("`allowed-path` is not an input of cursor-agent-action/cursor-agent-action/publish: "
            "did you mean `allowed-paths`?") in found[3][1]
    assert found[4][1] == ("cursor-agent-action/cursor-agent-action/publsh is not an action "
                           "of cursor-agent-action/cursor-agent-action: did you mean "
                           "cursor-agent-action/cursor-agent-action/publish?")


def test_the_examples_are_clean() -> None:
    for path in sorted((ROOT / "examples").glob("*.yml")):
        assert check(path.read_text()) == [], path


def test_the_command_warns_per_key_and_exits_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad, good = tmp_path / "bad.yml", tmp_path / "good.yml"
    bad.write_text(WORKFLOW)
    good.write_text((ROOT / "examples" / "docs-update.yml").read_text())
    assert main(["lint", str(bad), str(good)]) == 2
    out = capsys.readouterr().out
    assert out.count("::warning title=lint,file=") == 5
    assert (f"::warning title=lint,file={bad},line=12::{bad}:12: `permision` is not an input"
            in out)
    assert "lint: 5 problem(s) in 2 workflow file(s)." in out
    assert main(["lint", str(good)]) == 0
    assert "is an input of the action it is given to" in capsys.readouterr().out


def test_bad_files_are_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("jobs: [\n")
    assert main(["lint", str(broken)]) == 2
    assert f"{broken} is not YAML" in capsys.readouterr().out
    assert main(["lint", str(tmp_path / "missing.yml")]) == 2
    assert "cannot read" in capsys.readouterr().out
    monkeypatch.chdir(tmp_path)
    assert main(["lint"]) == 2
    assert "no workflow files given, and none in .github/workflows here." in (
        capsys.readouterr().out)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    DATA.write_text(json.dumps(_from_action_yml(), indent=1) + "\n")
