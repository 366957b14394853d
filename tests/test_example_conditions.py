"""The examples' ``if:`` conditions decide the same on GitHub and under act, for every result
of the jobs they need, so what try_example shows as posted is what GitHub would post.

The one difference that matters: a job that was skipped has empty outputs on GitHub, while
act leaves them as the unexpanded text of the job's ``outputs:`` (``${{
steps.publish.outputs.pr-url }}``). A condition such as ``needs.publish.outputs.pr-url != ''``
then lets a step run under act that GitHub skips, and the step posts the raw expression.
Each condition is evaluated both ways (tests/support/expressions.py: GitHub's semantics),
and a step that runs may read a needed job's outputs only where that job ran."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.act import ROOT
from tests.support.expressions import Status, condition, evaluate

EXAMPLES = sorted((ROOT / "examples").glob("*.yml"))
_NEEDS_OUTPUT = re.compile(r"needs\.([\w-]+)\.outputs\.([\w-]+)")
RESULTS = ("success", "failure", "skipped")
VALUES = ("", "true", "https://github.com/o/r/pull/2")


def _needs(job: dict[str, Any]) -> list[str]:
    needs = job.get("needs") or []
    return [needs] if isinstance(needs, str) else [str(n) for n in needs]


def _contexts(jobs: dict[str, Any], results: dict[str, str],
              values: dict[tuple[str, str], str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``needs`` context on GitHub and under act, for these results and output values."""
    github: dict[str, Any] = {}
    act: dict[str, Any] = {}
    for name, result in results.items():
        declared = {str(k): str(v) for k, v in (jobs[name].get("outputs") or {}).items()}
        ran = {key: values.get((name, key), "") for key in declared}
        github[name] = {"result": result, "outputs": ran if result != "skipped" else
                        dict.fromkeys(declared, "")}
        act[name] = {"result": result, "outputs": ran if result != "skipped" else declared}
    base: dict[str, Any] = {"github": {"event": {}}, "steps": {}, "env": {}, "inputs": {},
                            "matrix": {}}
    return {**base, "needs": github}, {**base, "needs": act}


def _possible(jobs: dict[str, Any], results: dict[str, str]) -> bool:
    """Whether these results can happen together: a job with no ``if:`` and nothing it needs
    is not skipped; a job whose need did not succeed is skipped unless its ``if:`` says
    otherwise (``always()``, ``failure()``)."""
    for name, result in results.items():
        job = jobs[name]
        guard = str(job.get("if") or "")
        if result == "skipped" and not guard and not _needs(job):
            return False
        unmet = [n for n in _needs(job) if results.get(n, "success") != "success"]
        if unmet and result != "skipped" and not re.search(r"always|failure|cancelled", guard):
            return False
    return True


def _cases(jobs: dict[str, Any], job: dict[str, Any]) -> list[tuple[dict[str, str],
                                                                    dict[tuple[str, str], str]]]:
    needs = _needs(job)
    referenced = sorted(set(_NEEDS_OUTPUT.findall(yaml.safe_dump(job))))
    cases = []
    for results in itertools.product(RESULTS, repeat=len(needs)):
        if not _possible(jobs, dict(zip(needs, results, strict=True))):
            continue
        for values in itertools.product(VALUES, repeat=len(referenced)):
            cases.append((dict(zip(needs, results, strict=True)),
                          dict(zip(referenced, values, strict=True))))
    return cases


def disagreements(workflow: dict[str, Any]) -> list[str]:
    """Where a condition decides differently on GitHub and under act, or a step that runs
    reads the outputs of a needed job that was skipped (act would show their raw text)."""
    jobs = workflow.get("jobs") or {}
    found: list[str] = []
    for name, job in jobs.items():
        if not _needs(job):
            continue
        for results, values in _cases(jobs, job):
            on_github, under_act = _contexts(jobs, results, values)
            status = Status(success=all(r == "success" for r in results.values()),
                            failure=any(r == "failure" for r in results.values()))
            runs = condition(job.get("if"), on_github, status)
            if runs != condition(job.get("if"), under_act, status):
                found.append(f"job {name} if {job.get('if')!r} with {results} {values}")
                continue
            if not runs:
                continue
            for index, step in enumerate(job.get("steps") or []):
                label = f"job {name} step {step.get('name') or step.get('uses') or index}"
                step_runs = condition(step.get("if"), on_github)
                if step_runs != condition(step.get("if"), under_act):
                    found.append(f"{label} if {step.get('if')!r} with {results} {values}")
                elif step_runs:
                    given = yaml.safe_dump({k: step.get(k) for k in ("with", "env", "run")})
                    skipped = sorted({need for need, _ in _NEEDS_OUTPUT.findall(given)
                                      if results.get(need) == "skipped"})
                    if skipped:
                        found.append(f"{label} reads the outputs of {skipped} (skipped) "
                                     f"with {results}")
    return sorted(set(found))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_conditions_decide_alike_on_github_and_under_act(example: Path) -> None:
    workflow = yaml.safe_load(example.read_text())
    assert disagreements(workflow) == []


def test_the_check_finds_the_comment_that_posted_an_unexpanded_pull_request_url() -> None:
    """Not vacuous: the ci-fix example as it was (``!= ''`` on the outputs of a job that may be
    skipped) is found, both by its condition and by what the step reads."""
    text = (ROOT / "examples" / "ci-fix.yml").read_text()
    workflow = yaml.safe_load(text)
    steps = workflow["jobs"]["comment"]["steps"]
    steps[0]["if"] = "needs.publish.outputs.pr-url != ''"
    steps[1]["if"] = "needs.publish.outputs.pr-url == ''"
    found = disagreements(workflow)
    assert any("step Link the proposed fix if" in line for line in found), found
    assert any("'result': 'skipped'" not in line and "skipped" in line for line in found)


@pytest.mark.parametrize(("text", "expected"), [
    ("'abc' == 'ABC'", True),
    ("1 == '1'", True),
    ("null == ''", True),
    ("'' || 'fallback'", "fallback"),
    ("'x' && 'y'", "y"),
    ("!''", True),
    ("fromJSON('{\"a\": [1, 2]}').a[1] == 2", True),
    ("startsWith('/cursor docs', '/CURSOR')", True),
    ("contains(fromJSON('[\"a\", \"b\"]'), 'B')", True),
    ("needs.j.outputs.missing", None),
    ("format('{0}-{1}', 'a', 1)", "a-1"),
])
def test_the_evaluator_reads_as_github_does(text: str, expected: Any) -> None:
    assert evaluate(text, {"needs": {"j": {"outputs": {}}}}) == expected


def test_a_condition_without_a_status_function_also_needs_success() -> None:
    failed = Status(success=False, failure=True)
    assert condition("'yes' == 'yes'", {}, failed) is False
    assert condition("${{ always() && 'yes' == 'yes' }}", {}, failed) is True
    assert condition(None, {}, failed) is False
