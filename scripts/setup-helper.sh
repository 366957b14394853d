#!/usr/bin/env bash
# Set up the helper (the cursor_agent_action package of this repository) in a virtual
# environment and write `python=<its interpreter>` and `cache-hit=true|false` to $GITHUB_OUTPUT.
#
#     setup-helper.sh [run|gh] [--print-dir]
#
# `run` (default) installs what the action's own steps import (requirements/run.txt: orjson,
# httpx); `gh` what the publish, comment, ci-context and gate sub-actions import as well
# (requirements/gh.txt: PyGithub). Every package is pinned by hash and installed as a wheel. The
# helper itself is not built: its package directory is copied from this checkout.
#
# Fast on a fresh runner: the venv is made without pip (`venv --without-pip`) and the base
# interpreter's pip installs into it (`pip --python`, pip >= 22.3); without such a pip the venv
# gets its own (slower). Only the venv's site-packages are byte-compiled. It runs before the
# helper exists, so it is plain bash plus the runner's python3 (>= 3.10; pick another one with
# actions/setup-python or CURSOR_AGENT_ACTION_PYTHON). Every Python call is isolated (-I).
#
# The venv is kept in the runner's tool cache under a key made of the set, the lock file, the
# interpreter and every source file, so a runner that keeps its tool cache
# (self-hosted, act) reuses it and any change to the action makes a new one. GitHub-hosted
# runners are fresh for every job. With CURSOR_AGENT_ACTION_HELPER_CACHE set to false the venv
# goes under RUNNER_TEMP, for this job only.
# https://docs.github.com/en/actions/reference/variables-reference#default-environment-variables
set -euo pipefail

group_open=false
fail() {
  # One annotation, the way the helper reports setup errors (exit code 3), outside any group.
  if [[ "$group_open" == true ]]; then echo "::endgroup::"; fi
  printf '::error title=cursor-agent-action setup failed::%s\n' "$1"
  exit 3
}

case "${RUNNER_OS:-$(uname -s)}" in
  Windows | MINGW* | MSYS* | CYGWIN*)
    fail "Windows runners are not supported: the Cursor CLI runs on Linux and macOS only. Fix: run this job on ubuntu-latest or macos-latest."
    ;;
esac

root=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
set_name=run
print_dir=false
for arg in "$@"; do
  case "$arg" in
    run | gh) set_name=$arg ;;
    --print-dir) print_dir=true ;;
    *) fail "setup-helper.sh: unknown argument '$arg' (use run, gh or --print-dir)." ;;
  esac
done
lock=$root/requirements/$set_name.txt
python=${CURSOR_AGENT_ACTION_PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 ||
  fail "No Python interpreter '$python' on PATH. Fix: add an actions/setup-python step (python-version: '3.12') before this action."
"$python" -I -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "The helper needs Python >= 3.10, but '$python' is $("$python" -I -c 'import platform; print(platform.python_version())'). Fix: add an actions/setup-python step (python-version: '3.12') before this action."

# The key: interpreter, platform, set, lock file and every source file.
key=$("$python" -I - "$root" "$set_name" <<'PY'
import hashlib
import platform
import sys
from pathlib import Path

root, set_name = Path(sys.argv[1]), sys.argv[2]
digest = hashlib.sha256()
digest.update(f"{sys.version}|{sys.platform}|{platform.machine()}|{sys.executable}".encode())
digest.update(f"|{set_name}|".encode())
files = [root / "requirements" / f"{set_name}.txt"]
files += sorted(p for p in (root / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
for path in files:
    digest.update(str(path.relative_to(root)).encode() + b"\0")
    digest.update(path.read_bytes() + b"\0")
print(f"{set_name}-{digest.hexdigest()[:20]}")
PY
)
# CURSOR_AGENT_ACTION_HELPER_CACHE=false (the action's helper-cache input): this job only.
case "${CURSOR_AGENT_ACTION_HELPER_CACHE:-true}" in
  true) cache_root=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}}/cursor-agent-action/helper ;;
  false) cache_root=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/cursor-agent-action/helper ;;
  *) fail "helper-cache must be 'true' or 'false'." ;;
esac
venv=$cache_root/$key

if [[ "$print_dir" == true ]]; then
  printf '%s\n' "$venv"
  exit 0
fi

# The manifest check runs on the base interpreter, before anything runs from the venv: code
# of an earlier job (an agent) on this runner may have changed it.
manifest=("$python" -I "$root/scripts/venv_manifest.py")
cache_hit=false
if [[ -f "$venv/.complete" ]]; then
  if difference=$("${manifest[@]}" check "$venv") &&
    "$venv/bin/python" -I -c 'import cursor_agent_action' 2>/dev/null; then
    cache_hit=true
    echo "Helper venv found in the tool cache (unchanged since its build): $venv"
  else
    printf '::warning title=cursor-agent-action helper venv rebuilt::The cached helper venv %s %s; building it again.\n' \
      "$venv" "${difference:+changed since it was built: $difference}${difference:-does not start}"
    rm -rf "$venv"
  fi
fi
if [[ "$cache_hit" == false ]]; then
  mkdir -p "$cache_root"
  build=$(mktemp -d "$cache_root/.build.XXXXXX")
  trap 'rm -rf "$build"' EXIT
  group_open=true
  echo "::group::Set up the helper venv (Python $("$python" -I -c 'import platform; print(platform.python_version())'))"
  "$python" -I -m venv --without-pip "$build/venv" ||
    fail "Could not create a virtual environment with '$python'. Fix: install the venv module (Debian/Ubuntu: apt-get install python3-venv) or add an actions/setup-python step."
  site=$("$build/venv/bin/python" -I -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  install=(install --disable-pip-version-check --no-input --no-deps --require-hashes --only-binary :all: -r "$lock")
  # pip --python runs the venv's interpreter itself, without -I: so no PYTHON* variable and
  # no user site for any pip call.
  isolated=(env)
  while IFS= read -r name; do isolated+=(-u "$name"); done < <(compgen -e | grep '^PYTHON' || true)
  isolated+=(PYTHONNOUSERSITE=1)
  # The base interpreter's pip, installing into the venv (pip >= 22.3); else the venv's own.
  if ! "${isolated[@]}" "$python" -I -m pip --python "$build/venv/bin/python" --version >/dev/null 2>&1; then
    "$build/venv/bin/python" -I -m ensurepip --default-pip >/dev/null ||
      fail "'$python' has no pip that can install into a venv, and the venv cannot get one (ensurepip). Fix: add an actions/setup-python step, or install python3-pip."
    pip=("$build/venv/bin/python" -I -m pip)
  else
    pip=("$python" -I -m pip --python "$build/venv/bin/python")
  fi
  "${isolated[@]}" "${pip[@]}" "${install[@]}" ||
    fail "Could not install the helper's pinned dependencies (requirements/$set_name.txt). Fix: make sure the runner reaches PyPI, or point PIP_INDEX_URL (or PIP_FIND_LINKS with PIP_NO_INDEX=1) at a mirror that has these exact files."
  # The helper itself, copied from this checkout as it is: nothing is built. A copy, not a
  # .pth to src/: its compiled files then live in the venv, under the manifest.
  cp -R "$root/src/cursor_agent_action" "$site/cursor_agent_action"
  find "$site/cursor_agent_action" -name __pycache__ -prune -exec rm -rf {} +
  "$build/venv/bin/python" -I -m cursor_agent_action --version ||
    fail "The helper does not start from $build/venv (output above). Fix: use a full checkout of the action (a release tag or a commit SHA); re-running may help if the runner's disk was full."
  # Compiled now, so running the helper adds no .pyc file to the manifest's venv. A file that
  # does not compile cannot be imported either: its error does not matter here.
  "$build/venv/bin/python" -I -m compileall -q -j 0 "$site" >/dev/null || true
  "${manifest[@]}" write "$build/venv" ||
    fail "Could not write the helper venv's manifest. Fix: make sure RUNNER_TOOL_CACHE is writable."
  : >"$build/venv/.complete"
  echo "::endgroup::"
  group_open=false
  # An entry without its marker is a broken leftover (nothing runs from one): replace it.
  if [[ -d "$venv" && ! -f "$venv/.complete" ]]; then rm -rf "$venv"; fi
  # Atomic: when another job of this runner finished the same venv first, keep theirs.
  "$python" -I -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$build/venv" "$venv" 2>/dev/null ||
    [[ -f "$venv/.complete" ]] ||
    fail "Could not move the helper venv into $venv. Fix: make sure RUNNER_TOOL_CACHE is writable."
fi

{
  echo "python=$venv/bin/python"
  echo "cache-hit=$cache_hit"
} >>"${GITHUB_OUTPUT:-/dev/stdout}"
