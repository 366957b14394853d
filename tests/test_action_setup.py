"""The action's own shell: scripts/setup-helper.sh (which builds or reuses the helper's venv)
and the input checks in action.yml's run step.

The cache-hit path runs under act in test_action_act.py; here: refusals, the cache key, a
failed install that must leave nothing half-built behind, and the schema support installed on
first need. No network: pip is pointed at an empty local index, or at wheels made from this dev
venv's packages with locks that pin them (tests/support/wheels.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from cursor_agent_action.output_file import parse_output_file
from tests.support.act import ROOT, base_python, copy_project, seed_helper_venv
from tests.support.agent_run import API_KEY, make_workspace
from tests.support.standin import make_standin
from tests.support.wheels import lock_of

SCRIPT = ROOT / "scripts" / "setup-helper.sh"


def _project_copy(tmp_path: Path) -> Path:
    return copy_project(tmp_path / "action")


def _setup(
    tmp_path: Path, *args: str, script: Path = SCRIPT, **env: str
) -> subprocess.CompletedProcess[str]:
    output = tmp_path / "github_output"
    full_env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path / "home"),
        "RUNNER_OS": "Linux",
        "RUNNER_TOOL_CACHE": str(tmp_path / "tool_cache"),
        "RUNNER_TEMP": str(tmp_path / "temp"),
        "GITHUB_OUTPUT": str(output),
        "CURSOR_AGENT_ACTION_PYTHON": base_python(),
        # Offline: an empty index, and no pip configuration of this machine.
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(tmp_path / "no-wheels"),
        **env,
    }
    (tmp_path / "no-wheels").mkdir(exist_ok=True)
    return subprocess.run(
        ["bash", str(script), *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _outputs(tmp_path: Path) -> dict[str, str]:
    text = (tmp_path / "github_output").read_text()
    return dict(line.split("=", 1) for line in text.splitlines())


@pytest.mark.parametrize("runner_os", ["Windows", "MINGW64_NT-10.0"])
def test_windows_is_refused_with_a_fix(tmp_path: Path, runner_os: str) -> None:
    result = _setup(tmp_path, RUNNER_OS=runner_os)
    assert result.returncode == 3
    assert result.stdout.startswith("::error title=cursor-agent-action setup failed::Windows")
    assert "ubuntu-latest or macos-latest" in result.stdout
    assert not (tmp_path / "tool_cache").exists()


def test_missing_python_is_reported(tmp_path: Path) -> None:
    result = _setup(tmp_path, CURSOR_AGENT_ACTION_PYTHON="python-that-does-not-exist")
    assert result.returncode == 3
    assert "No Python interpreter 'python-that-does-not-exist'" in result.stdout
    assert "actions/setup-python" in result.stdout


def test_old_python_is_refused(tmp_path: Path) -> None:
    old = tmp_path / "python3.8"
    # Answers like a Python 3.8 would: the version check fails, the version prints 3.8.18.
    old.write_text('#!/bin/sh\ncase "$*" in *version_info*) exit 1 ;; *) echo 3.8.18 ;; esac\n')
    old.chmod(0o755)
    result = _setup(tmp_path, CURSOR_AGENT_ACTION_PYTHON=str(old))
    assert result.returncode == 3
    assert "needs Python >= 3.10" in result.stdout
    assert "is 3.8.18" in result.stdout


def test_cache_key_follows_the_helper_source(tmp_path: Path) -> None:
    """Same content, same venv; any change to the source or the lock file, a new one."""
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"

    def venv_dir() -> str:
        result = _setup(tmp_path, "--print-dir", script=script)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout.strip()

    first = venv_dir()
    assert first.startswith(str(tmp_path / "tool_cache" / "cursor-agent-action" / "helper"))
    assert venv_dir() == first
    (copy / "README.md").write_text("docs do not change the helper\n")
    assert venv_dir() == first
    with (copy / "src" / "cursor_agent_action" / "errors.py").open("a") as handle:
        handle.write("\n# changed\n")
    second = venv_dir()
    assert second != first
    with (copy / "requirements" / "run.txt").open("a") as handle:
        handle.write("\n")
    assert venv_dir() not in (first, second)


def test_failed_install_explains_and_leaves_no_partial_venv(tmp_path: Path) -> None:
    result = _setup(tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Could not install the helper's pinned dependencies" in result.stdout
    assert "PIP_INDEX_URL" in result.stdout
    helper = tmp_path / "tool_cache" / "cursor-agent-action" / "helper"
    assert list(helper.iterdir()) == []
    assert not (tmp_path / "github_output").exists()


def test_a_complete_cached_venv_is_reused(tmp_path: Path) -> None:
    copy = _project_copy(tmp_path)
    venv = seed_helper_venv(copy, tmp_path / "tool_cache")
    result = _setup(tmp_path, script=copy / "scripts" / "setup-helper.sh")
    assert result.returncode == 0, result.stdout + result.stderr
    assert _outputs(tmp_path) == {"python": f"{venv}/bin/python", "cache-hit": "true"}


def test_an_incomplete_cached_venv_is_not_used(tmp_path: Path) -> None:
    """A venv without its completion marker (a job killed mid-install) is rebuilt, not run."""
    copy = _project_copy(tmp_path)
    venv = seed_helper_venv(copy, tmp_path / "tool_cache")
    (venv / ".complete").unlink()
    result = _setup(tmp_path, script=copy / "scripts" / "setup-helper.sh")
    # Rebuilding needs the (here unreachable) index: the failure proves it was not reused.
    assert result.returncode == 3
    assert "Could not install the helper's pinned dependencies" in result.stdout


def _python_with_fake_pip(tmp_path: Path) -> Path:
    """A python3 whose pip installs nothing and succeeds (the real one would need the network;
    the helper's code comes from the checkout through a .pth file, not from pip)."""
    python = tmp_path / "python3"
    python.write_text(
        f"""#!/bin/sh
if [ "$1" = "-I" ]; then shift; fi  # the script isolates every call
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then exit 0; fi
exec {base_python()} -I "$@"
"""
    )
    python.chmod(0o755)
    return python


def test_cold_build_lands_complete_in_the_cache_then_is_reused(tmp_path: Path) -> None:
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"
    python = str(_python_with_fake_pip(tmp_path))
    first = _setup(tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=python)
    assert first.returncode == 0, first.stdout + first.stderr
    venv = Path(_setup(tmp_path, "--print-dir", script=script).stdout.strip())
    assert _outputs(tmp_path) == {"python": f"{venv}/bin/python", "cache-hit": "false"}
    assert (venv / ".complete").is_file()
    assert [p.name for p in venv.parent.iterdir()] == [venv.name]  # no build dir left
    (tmp_path / "github_output").unlink()
    again = _setup(tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=python)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _outputs(tmp_path) == {"python": f"{venv}/bin/python", "cache-hit": "true"}


def test_a_broken_leftover_is_replaced_by_a_fresh_build(tmp_path: Path) -> None:
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"
    venv = Path(_setup(tmp_path, "--print-dir", script=script).stdout.strip())
    (venv / "bin").mkdir(parents=True)  # a venv dir without its completion marker
    result = _setup(
        tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=str(_python_with_fake_pip(tmp_path))
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (venv / ".complete").is_file()
    assert _outputs(tmp_path)["cache-hit"] == "false"


def test_helper_cache_false_builds_for_this_job_only(tmp_path: Path) -> None:
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"
    result = _setup(
        tmp_path,
        script=script,
        CURSOR_AGENT_ACTION_PYTHON=str(_python_with_fake_pip(tmp_path)),
        CURSOR_AGENT_ACTION_HELPER_CACHE="false",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    python = Path(_outputs(tmp_path)["python"])
    assert python.is_relative_to(tmp_path / "temp" / "cursor-agent-action" / "helper")
    assert not (tmp_path / "tool_cache").exists()


def test_helper_cache_must_be_true_or_false(tmp_path: Path) -> None:
    result = _setup(tmp_path, CURSOR_AGENT_ACTION_HELPER_CACHE="yes")
    assert result.returncode == 3
    assert "helper-cache must be 'true' or 'false'" in result.stdout


def _run_step(
    fake_python_body: str, tmp_path: Path, job_summary: str
) -> subprocess.CompletedProcess[str]:
    """Run action.yml's `run` step script with a stand-in python and a job-summary value."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "run"]
    fake_python = tmp_path / "python"
    fake_python.write_text(fake_python_body)
    fake_python.chmod(0o755)
    return subprocess.run(
        ["bash", "-c", step["run"]],
        env={
            "PATH": os.environ["PATH"],
            "CAA_API_KEY": "",
            "CAA_PYTHON": str(fake_python),
            "CAA_JOB_SUMMARY": job_summary,
        },
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("value", ["yes", "", "TRUE "])
def test_run_step_refuses_a_bad_job_summary_value(tmp_path: Path, value: str) -> None:
    """Exit code 2 and one annotation; the helper (here: a python that records) never starts."""
    marker = tmp_path / "started"
    result = _run_step(f"#!/bin/sh\ntouch {marker}\n", tmp_path, value)
    assert result.returncode == 2
    assert result.stdout == (
        "::error title=invalid input::job-summary must be 'true' or 'false'. Fix: Set the "
        'job-summary input to "true" or "false" (quoted in YAML).\n')
    assert not marker.exists()


@pytest.mark.parametrize(("value", "extra"), [("true", ""), ("false", " --summary-file /dev/null")])
def test_run_step_starts_the_helper_with_the_summary_choice(
    tmp_path: Path, value: str, extra: str
) -> None:
    result = _run_step('#!/bin/sh\necho "$@"\n', tmp_path, value)
    assert (result.returncode, result.stdout) == (0, f"-I -m cursor_agent_action run{extra}\n")


@pytest.mark.parametrize(
    ("tamper", "difference"),
    [
        ("edit", 'cursor_agent_action/__init__.py" was changed'),
        ("add", '/evil.pth" was added'),
    ],
)
def test_a_changed_cached_venv_is_rebuilt_with_a_warning(
    tmp_path: Path, tamper: str, difference: str
) -> None:
    """A job on the same runner (an agent) changed the cached venv: the manifest check sees
    it before anything runs from the venv, and the venv is built again."""
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"
    python = str(_python_with_fake_pip(tmp_path))
    assert _setup(tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=python).returncode == 0
    venv = Path(_outputs(tmp_path)["python"]).parents[1]
    (module,) = venv.glob("lib/python*/site-packages/cursor_agent_action/__init__.py")
    original = module.read_bytes()
    if tamper == "edit":
        module.write_bytes(original + b"\nimport os; os.system('echo pwned')\n")
    else:
        (module.parents[1] / "evil.pth").write_text("import os; os.system('echo pwned')\n")
    (tmp_path / "github_output").unlink()
    again = _setup(tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=python)
    assert again.returncode == 0, again.stdout + again.stderr
    (warning,) = [line for line in again.stdout.splitlines() if line.startswith("::warning")]
    assert "helper venv rebuilt" in warning
    assert difference in warning
    assert "pwned" not in again.stdout + again.stderr  # checked before anything ran from it
    assert _outputs(tmp_path)["cache-hit"] == "false"
    assert module.read_bytes() == original
    assert not (module.parents[1] / "evil.pth").exists()


def test_a_hostile_user_site_or_python_variable_runs_nothing_during_setup(
    tmp_path: Path,
) -> None:
    """An earlier step (or agent) that planted a .pth in the user site, a sitecustomize on
    PYTHONPATH or a PYTHONSTARTUP file gets none of it run: every Python call is isolated."""
    version = subprocess.run(
        [base_python(), "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    marker = tmp_path / "ran"
    payload = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('pwned')\n"
    user_site = tmp_path / "home" / ".local" / "lib" / f"python{version}" / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "evil.pth").write_text(payload.replace("\n", "") + "\n")
    evil_path = tmp_path / "evil-path"
    evil_path.mkdir()
    (evil_path / "sitecustomize.py").write_text(payload)
    (evil_path / "startup.py").write_text(payload)
    result = _setup(tmp_path, PYTHONPATH=str(evil_path),
                    PYTHONSTARTUP=str(evil_path / "startup.py"), PYTHONINSPECT="")
    # Offline, the pinned install fails; everything before it (version checks, the cache key,
    # the venv) ran its Python, and none of it ran the planted code.
    assert result.returncode == 3, result.stdout + result.stderr
    assert not marker.exists()


API_KEY_EMPTY = ("api-key is empty: check the secret's name; pull requests from forks get no "
                 "secrets.")


def _mask_step(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run action.yml's first step (it masks the key) as the runner would; returns the result
    and what it wrote to the job summary."""
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    assert steps[0]["name"] == "Mask the API key"  # first: before the helper is installed
    assert set(steps[0]["env"]) == {"CAA_API_KEY"}  # the input reaches it through env only
    summary = tmp_path / "summary.md"
    result = subprocess.run(
        ["bash", "-c", steps[0]["run"]],
        env={"PATH": os.environ["PATH"], "GITHUB_STEP_SUMMARY": str(summary), **env},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return result, summary.read_text() if summary.exists() else ""


@pytest.mark.parametrize("given", [{"CAA_API_KEY": ""}, {"CAA_API_KEY": " \n"},
                                   {"CAA_API_KEY": "", "CURSOR_API_KEY": ""}])
def test_an_empty_api_key_fails_the_first_step_with_the_likely_causes(
    tmp_path: Path, given: dict[str, str]
) -> None:
    """A misspelled secret (`secrets.CURSOR_APIKEY` is an empty string) or a fork's pull request
    (no secrets) fails here, before the helper or the CLI is installed, not later at
    authentication."""
    result, summary = _mask_step(tmp_path, **given)
    assert result.returncode == 2
    assert result.stdout == f"::error title=invalid input::{API_KEY_EMPTY}\n"
    assert "## ❌ cursor-agent-action: invalid input" in summary
    assert API_KEY_EMPTY in summary
    assert "**Fix:**" in summary


@pytest.mark.parametrize("given", [{"CAA_API_KEY": "crsr-key"},
                                   {"CAA_API_KEY": "", "CURSOR_API_KEY": "crsr-env"}])
def test_a_key_from_the_input_or_the_environment_is_masked_and_passes(
    tmp_path: Path, given: dict[str, str]
) -> None:
    result, summary = _mask_step(tmp_path, **given)
    assert result.returncode == 0
    assert result.stdout == f"::add-mask::{next(v for v in given.values() if v)}\n"
    assert summary == ""


def _offline_locks(copy: Path, tmp_path: Path) -> Path:
    """The copy's run and schema locks pinned to wheels of this venv's packages; their folder."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("run", "schema"):
        lock = lock_of(ROOT / "requirements" / f"{name}.txt", wheels)
        (copy / "requirements" / f"{name}.txt").write_text(lock)
    return wheels


_WHERE = "import importlib, sys\nfor m in sys.argv[1:]: print(importlib.import_module(m).__file__)"


def _import_paths(python: str, *modules: str) -> list[Path]:
    done = subprocess.run([python, "-I", "-c", _WHERE, *modules], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    return [Path(line) for line in done.stdout.splitlines()]


def test_a_run_with_a_yaml_output_schema_works_from_a_cold_cache(tmp_path: Path) -> None:
    """Empty tool cache, output-schema given: pip installs the run set and, beside it, the
    schema support (the same rules: hashes, wheels only, no dependencies resolved), and the
    helper built so runs the agent and checks its answer against a YAML schema."""
    copy = _project_copy(tmp_path)
    wheels = _offline_locks(copy, tmp_path)
    result = _setup(tmp_path, script=copy / "scripts" / "setup-helper.sh",
                    PIP_FIND_LINKS=str(wheels), CURSOR_AGENT_ACTION_HELPER_SCHEMA="true")
    assert result.returncode == 0, result.stdout + result.stderr
    python = _outputs(tmp_path)["python"]
    assert _outputs(tmp_path)["cache-hit"] == "false"
    venv = Path(python).parents[1]
    for path in _import_paths(python, "jsonschema", "referencing"):  # (PyYAML is the run's)
        assert path.is_relative_to(venv / "extras" / "schema")
    workspace = make_workspace(tmp_path)
    answer = 'Found it.\n\n```json\n{"cause": "a flaky test", "confidence": 0.7}\n```\n'
    agent = make_standin(tmp_path, {"answer": answer})
    schema = ("type: object\nrequired: [cause, confidence]\nproperties:\n"
              "  cause: {type: string}\n  confidence: {type: number, maximum: 1}\n")
    out = tmp_path / "outputs.txt"
    done = subprocess.run(
        [python, "-I", "-m", "cursor_agent_action", "run", "--agent-bin", str(agent),
         "--working-directory", str(workspace), "--output-file", str(out),
         "--summary-file", str(tmp_path / "summary.md"), "--output-schema", schema,
         "--prompt", "Why did CI fail?"],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path / "home"), "CI": "true",
             "RUNNER_TEMP": str(tmp_path / "runner-temp"), "CURSOR_API_KEY": API_KEY,
             "LC_ALL": "C.UTF-8"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = parse_output_file(out.read_text())
    assert outputs["structured-output"] == '{"cause":"a flaky test","confidence":0.7}'
    # Nothing the run did changed the cached venv or its schema support.
    manifest = [base_python(), "-I", str(copy / "scripts" / "venv_manifest.py"), "check"]
    subprocess.run([*manifest, str(venv), str(venv / "extras" / "schema")], check=True)


def test_the_schema_support_is_added_beside_a_cached_venv_on_first_need(tmp_path: Path) -> None:
    """A venv built for runs without a schema gets the schema support when a run needs it;
    the venv's own files stay as built (its manifest still holds), later runs reuse both."""
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"
    wheels = _offline_locks(copy, tmp_path)

    def setup(schema: str) -> dict[str, str]:
        (tmp_path / "github_output").unlink(missing_ok=True)
        result = _setup(tmp_path, script=script, PIP_FIND_LINKS=str(wheels),
                        CURSOR_AGENT_ACTION_HELPER_SCHEMA=schema)
        assert result.returncode == 0, result.stdout + result.stderr
        return _outputs(tmp_path)

    assert setup("false")["cache-hit"] == "false"
    venv = Path(_outputs(tmp_path)["python"]).parents[1]
    assert not (venv / "extras" / "schema").exists()
    failed = subprocess.run([_outputs(tmp_path)["python"], "-I", "-c", "import jsonschema"],
                            capture_output=True, check=False)  # fmt: skip
    assert failed.returncode != 0  # not installed for a run that does not need it
    assert setup("true") == {"python": f"{venv}/bin/python", "cache-hit": "false"}
    assert (venv / "extras" / "schema" / ".complete").is_file()
    assert [p.name for p in (venv / "extras").iterdir()] == ["schema"]  # no build dir left
    manifest = [base_python(), "-I", str(copy / "scripts" / "venv_manifest.py"), "check"]
    assert subprocess.run([*manifest, str(venv)], check=False).returncode == 0
    assert _import_paths(f"{venv}/bin/python", "jsonschema")[0].is_relative_to(venv / "extras")
    assert setup("true")["cache-hit"] == "true"
    assert setup("false")["cache-hit"] == "true"


def test_a_failed_schema_install_names_its_lock_and_leaves_the_venv_as_it_was(
    tmp_path: Path,
) -> None:
    copy = _project_copy(tmp_path)
    venv = seed_helper_venv(copy, tmp_path / "tool_cache")
    shutil.rmtree(venv / "extras")  # a venv built before any run needed a schema
    result = _setup(tmp_path, script=copy / "scripts" / "setup-helper.sh",
                    CURSOR_AGENT_ACTION_HELPER_SCHEMA="true")
    assert result.returncode == 3, result.stdout + result.stderr
    assert ("Could not install the helper's pinned dependencies (requirements/schema.txt). "
            "Fix: make sure the runner reaches PyPI") in result.stdout
    assert list((venv / "extras").iterdir()) == []  # its build directory is gone
    assert (venv / ".complete").is_file()
    assert not (tmp_path / "github_output").exists()


@pytest.mark.parametrize("layer", ["planted", "edited"])
def test_code_planted_in_the_schema_support_never_runs(tmp_path: Path, layer: str) -> None:
    """The run venv's .pth puts extras/schema on sys.path, and Python imports a sitecustomize
    module from there at every start. An earlier job's agent that plants one (in a venv
    without the schema support, or in the support itself) gets the venv rebuilt, with a
    warning, before anything runs from it."""
    copy = _project_copy(tmp_path)
    script = copy / "scripts" / "setup-helper.sh"
    python = str(_python_with_fake_pip(tmp_path))
    assert _setup(tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=python).returncode == 0
    venv = Path(_outputs(tmp_path)["python"]).parents[1]
    support = venv / "extras" / "schema"
    if layer == "edited":  # a complete schema support, as a build leaves it
        support.mkdir(parents=True)
        subprocess.run([base_python(), "-I", str(copy / "scripts" / "venv_manifest.py"), "write",
                        str(support)], check=True)  # fmt: skip
        (support / ".complete").touch()
    marker = tmp_path / "ran"
    support.mkdir(parents=True, exist_ok=True)
    (support / "sitecustomize.py").write_text(
        f"import pathlib; pathlib.Path({str(marker)!r}).write_text('pwned')\n")
    (tmp_path / "github_output").unlink()
    again = _setup(tmp_path, script=script, CURSOR_AGENT_ACTION_PYTHON=python)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not marker.exists()
    (warning,) = [line for line in again.stdout.splitlines() if line.startswith("::warning")]
    assert "helper venv rebuilt" in warning
    assert ("manifest is missing" if layer == "planted" else "sitecustomize.py") in warning
    assert not support.exists()
    assert _outputs(tmp_path)["cache-hit"] == "false"


@pytest.mark.parametrize(
    ("args", "value", "message"),
    [((), "yes", "CURSOR_AGENT_ACTION_HELPER_SCHEMA must be 'true' or 'false'."),
     (("gh",), "true", "(CURSOR_AGENT_ACTION_HELPER_SCHEMA) is for the run set only")],
)  # fmt: skip
def test_the_schema_switch_is_checked(
    tmp_path: Path, args: tuple[str, ...], value: str, message: str
) -> None:
    result = _setup(tmp_path, *args, CURSOR_AGENT_ACTION_HELPER_SCHEMA=value)
    assert result.returncode == 3
    assert message in result.stdout
    assert not (tmp_path / "tool_cache").exists()


def test_action_yml_asks_for_the_schema_support_exactly_with_the_inputs_that_need_it() -> None:
    """output-schema, output-schema-file and mcp-config are the inputs whose parsing imports
    jsonschema or PyYAML (agent/launch/output_schema.py, agent/launch/mcp.py)."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "helper"]
    wanted = step["env"]["CURSOR_AGENT_ACTION_HELPER_SCHEMA"]
    named = set(re.findall(r"inputs\.([a-z-]+) != ''", wanted))
    assert named == {"output-schema", "output-schema-file", "mcp-config"}
    assert wanted.count("||") == 2
