#!/usr/bin/env bash
# Set up the helper (the cursor_agent_action package of this repository) in a virtual
# environment and write `python=<its interpreter>` and `cache-hit=true|false` to $GITHUB_OUTPUT.
#
# Used by action.yml and the sub-actions (publish/, comment/, ci-context/). It runs before the
# helper exists, so it is plain bash plus the runner's python3 (>= 3.10; pick another one with
# actions/setup-python or CURSOR_AGENT_ACTION_PYTHON).
#
# Every package comes from requirements/action.txt, pinned by hash, as wheels only; the helper
# itself is then built offline from this checkout (--no-build-isolation --no-index).
#
# The venv is kept in the runner's tool cache under a key made of the helper's source, the lock
# file and the interpreter, so a runner that keeps its tool cache (self-hosted, act) reuses it
# and any change to the action makes a new one. GitHub-hosted runners are fresh for every job:
# nothing is shared between jobs or repositories there. With CURSOR_AGENT_ACTION_HELPER_CACHE
# set to false the venv goes under RUNNER_TEMP, for this job only.
# https://docs.github.com/en/actions/reference/variables-reference#default-environment-variables
#
# `setup-helper.sh --print-dir` prints the venv directory for the current key and exits.
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
python=${CURSOR_AGENT_ACTION_PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 ||
  fail "No Python interpreter '$python' on PATH. Fix: add an actions/setup-python step (python-version: '3.12') before this action."
"$python" -I -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "The helper needs Python >= 3.10, but '$python' is $("$python" -I -c 'import platform; print(platform.python_version())'). Fix: add an actions/setup-python step (python-version: '3.12') before this action."

# The key: interpreter, platform, lock file, packaging metadata and every source file.
key=$("$python" -I - "$root" <<'PY'
import hashlib
import platform
import sys
from pathlib import Path

root = Path(sys.argv[1])
digest = hashlib.sha256()
digest.update(f"{sys.version}|{sys.platform}|{platform.machine()}|{sys.executable}".encode())
files = [root / "pyproject.toml", root / "requirements" / "action.txt"]
files += sorted(p for p in (root / "src").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
for path in files:
    digest.update(str(path.relative_to(root)).encode() + b"\0")
    digest.update(path.read_bytes() + b"\0")
print(digest.hexdigest()[:20])
PY
)
# CURSOR_AGENT_ACTION_HELPER_CACHE=false (the action's helper-cache input): this job only.
case "${CURSOR_AGENT_ACTION_HELPER_CACHE:-true}" in
  true) cache_root=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}}/cursor-agent-action/helper ;;
  false) cache_root=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/cursor-agent-action/helper ;;
  *) fail "helper-cache must be 'true' or 'false'." ;;
esac
venv=$cache_root/$key

if [[ "${1:-}" == "--print-dir" ]]; then
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
  "$python" -I -m venv "$build/venv" ||
    fail "Could not create a virtual environment with '$python'. Fix: install the venv module (Debian/Ubuntu: apt-get install python3-venv) or add an actions/setup-python step."
  pip=("$build/venv/bin/python" -I -m pip --disable-pip-version-check --no-input)
  "${pip[@]}" install --require-hashes --only-binary :all: -r "$root/requirements/action.txt" ||
    fail "Could not install the helper's pinned dependencies (requirements/action.txt). Fix: make sure the runner reaches PyPI, or point PIP_INDEX_URL (or PIP_FIND_LINKS with PIP_NO_INDEX=1) at a mirror that has these exact files."
  "${pip[@]}" install --no-deps --no-build-isolation --no-index "$root" ||
    fail "Could not install the helper from $root. Fix: use a full checkout of the action (a release tag such as @v1)."
  "$build/venv/bin/python" -I -m cursor_agent_action --version ||
    fail "The helper installed in $build/venv does not start (output above). Fix: report this with the log; re-running may help if the runner's disk was full."
  # Everything compiled now, so running the helper adds no .pyc file to the manifest's venv.
  # A file that does not compile cannot be imported either: its error does not matter here.
  "$build/venv/bin/python" -I -m compileall -q -j 0 "$build/venv" >/dev/null || true
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
