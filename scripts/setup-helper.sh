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
# The schema support (requirements/schema.txt: jsonschema and PyYAML, for output-schema and
# mcp-config) only when CURSOR_AGENT_ACTION_HELPER_SCHEMA is true (action.yml sets it from those
# inputs): installed, with the same rules, into the run venv's extras/schema, which a .pth file of
# the venv puts on sys.path when it exists. The venv itself is never changed once built (other
# jobs may be using it): the schema support is added beside it, atomically, on first need, with
# its own manifest, in parallel with the venv's own packages when both are built.
#
# Fast on a fresh runner: the venv is made without pip (`venv --without-pip`) and the base
# interpreter's pip installs into it (`pip --python`, pip >= 22.3); without such a pip the venv
# gets its own (slower). Several pips install at once (the lock cut into parts). Only the
# venv's site-packages are byte-compiled. It runs before the
# helper exists, so it is plain bash plus the runner's python3 (>= 3.10; pick another one with
# actions/setup-python or CURSOR_AGENT_ACTION_PYTHON). Every Python call is isolated (-I).
#
# The venv is kept in the runner's tool cache under a key made of the set, the lock files, the
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
schema=${CURSOR_AGENT_ACTION_HELPER_SCHEMA:-false}
for arg in "$@"; do
  case "$arg" in
    run | gh) set_name=$arg ;;
    --print-dir) print_dir=true ;;
    *) fail "setup-helper.sh: unknown argument '$arg' (use run, gh or --print-dir)." ;;
  esac
done
lock=$root/requirements/$set_name.txt
case "$schema:$set_name" in
  false:* | true:run) ;;
  true:*) fail "setup-helper.sh: the schema support (CURSOR_AGENT_ACTION_HELPER_SCHEMA) is for the run set only." ;;
  *) fail "CURSOR_AGENT_ACTION_HELPER_SCHEMA must be 'true' or 'false'." ;;
esac
python=${CURSOR_AGENT_ACTION_PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 ||
  fail "No Python interpreter '$python' on PATH. Fix: add an actions/setup-python step (python-version: '3.12') before this action."
"$python" -I -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "The helper needs Python >= 3.10, but '$python' is $("$python" -I -c 'import platform; print(platform.python_version())'). Fix: add an actions/setup-python step (python-version: '3.12') before this action."

# The key: interpreter, platform, set, lock files and every source file.
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
if set_name == "run":  # its venv's .pth names where the schema support goes
    files.append(root / "requirements" / "schema.txt")
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
layer=$venv/extras/schema

if [[ "$print_dir" == true ]]; then
  printf '%s\n' "$venv"
  exit 0
fi

# The manifest check runs on the base interpreter, before anything runs from the venv: code
# of an earlier job (an agent) on this runner may have changed it.
manifest=("$python" -I "$root/scripts/venv_manifest.py")
cache_hit=false
if [[ -f "$venv/.complete" ]]; then
  # The schema support is on the venv's sys.path whenever it is there: checked with it.
  checked=("$venv")
  if [[ -e "$layer" ]]; then checked+=("$layer"); fi
  if difference=$("${manifest[@]}" check "${checked[@]}") &&
    "$venv/bin/python" -I -c 'import cursor_agent_action' 2>/dev/null; then
    cache_hit=true
    echo "Helper venv found in the tool cache (unchanged since its build): $venv"
  else
    printf '::warning title=cursor-agent-action helper venv rebuilt::The cached helper venv %s %s; building it again.\n' \
      "$venv" "${difference:+changed since it was built: $difference}${difference:-does not start}"
    rm -rf "$venv"
  fi
fi

# pip calls: the same rules for every set. pip --python runs the venv's interpreter itself,
# without -I: so no PYTHON* variable and no user site for any pip call. pip byte-compiles what
# it installs (so running the helper adds no .pyc file to a manifest's tree; a file that does
# not compile cannot be imported either).
isolated=(env)
while IFS= read -r name; do isolated+=(-u "$name"); done < <(compgen -e | grep '^PYTHON' || true)
isolated+=(PYTHONNOUSERSITE=1)
pip_install=(install --disable-pip-version-check --no-input --no-deps --require-hashes --only-binary :all:)
# The base interpreter's pip installs into the venv when it can (pip >= 22.3: pip --python); its
# version is read without starting pip (a pip start costs about half a second).
choose_pip() { # VENV: set pip to a pip that installs for VENV's interpreter, if there is one
  if "$python" -I -c 'import sys, pip; sys.exit(tuple(map(int, pip.__version__.split(".")[:2])) < (22, 3))' 2>/dev/null; then
    pip=("$python" -I -m pip --python "$1/bin/python")
  elif "$1/bin/python" -I -c 'import pip' 2>/dev/null; then
    pip=("$1/bin/python" -I -m pip)
  else
    return 1
  fi
}
install_failed() { # LOCK
  fail "Could not install the helper's pinned dependencies (requirements/$1). Fix: make sure the runner reaches PyPI, or point PIP_INDEX_URL (or PIP_FIND_LINKS with PIP_NO_INDEX=1) at a mirror that has these exact files."
}
schema_lock=$root/requirements/schema.txt
build=
layer_build=
trap 'rm -rf ${build:+"$build"} ${layer_build:+"$layer_build"}' EXIT

if [[ "$cache_hit" == false ]]; then
  mkdir -p "$cache_root"
  build=$(mktemp -d "$cache_root/.build.XXXXXX")
  group_open=true
  echo "::group::Set up the helper venv (Python $("$python" -I -c 'import platform; print(platform.python_version())'))"
  "$python" -I -m venv --without-pip "$build/venv" ||
    fail "Could not create a virtual environment with '$python'. Fix: install the venv module (Debian/Ubuntu: apt-get install python3-venv) or add an actions/setup-python step."
  if ! choose_pip "$build/venv"; then
    "$build/venv/bin/python" -I -m ensurepip --default-pip >/dev/null ||
      fail "'$python' has no pip that can install into a venv, and the venv cannot get one (ensurepip). Fix: add an actions/setup-python step, or install python3-pip."
    pip=("$build/venv/bin/python" -I -m pip)
  fi
  # One start of the venv's interpreter: where its site-packages are; there, for the run set,
  # a .pth naming the schema support's place (relative: the venv moves after this; Python
  # skips a line naming a directory that does not exist); and the lock cut into parts for
  # several pips at once. One pip fetches index pages and wheels one after another, and a large
  # index page (a binary package's: thousands of files) costs it a few hundred ms to read. So
  # the parts (as many as cores, at most 3) are balanced by the number of hashes of each entry
  # (binary packages have many), one pip each; the schema support, when needed, gets its own.
  site=$("$build/venv/bin/python" -I - "$lock" "$build" "$set_name" <<'PY'
import os, re, sys, sysconfig
lock, out, set_name = sys.argv[1:]
site = sysconfig.get_path("purelib")
if set_name == "run":
    with open(os.path.join(site, "cursor_agent_action-schema.pth"), "w", encoding="utf-8") as pth:
        pth.write(os.path.relpath(os.path.join(out, "venv", "extras", "schema"), site) + "\n")
with open(lock, encoding="utf-8") as handle:
    entries = [e for e in re.findall(r"^\S.*?(?=^\S|\Z)", handle.read(), re.M | re.S)
               if not e.startswith("#")]
count = max(1, min(os.cpu_count() or 1, 3, len(entries)))
parts = [[] for _ in range(count)]
weights = [0] * count
for entry in sorted(entries, key=lambda e: -e.count("--hash=")):
    lightest = weights.index(min(weights))
    parts[lightest].append(entry)
    weights[lightest] += entry.count("--hash=") + 4
for number, part in enumerate(parts):
    with open(f"{out}/part-{number}.txt", "w", encoding="utf-8") as handle:
        handle.write("".join(part))
print(site)
PY
  )
  # The helper itself, copied from this checkout as it is: nothing is built. A copy, not a
  # .pth to src/: its compiled files then live in the venv, under the manifest. Compiled while
  # the pips run.
  cp -R "$root/src/cursor_agent_action" "$site/cursor_agent_action"
  find "$site/cursor_agent_action" -name __pycache__ -prune -exec rm -rf {} +
  "$build/venv/bin/python" -I -m compileall -q "$site/cursor_agent_action" >/dev/null &
  pids=("$!")
  for part in "$build"/part-*.txt; do
    "${isolated[@]}" "${pip[@]}" "${pip_install[@]}" -r "$part" &
    pids+=($!)
  done
  layer_pid=
  if [[ "$schema" == true ]]; then
    "${isolated[@]}" "${pip[@]}" "${pip_install[@]}" --target "$build/venv/extras/schema" -r "$schema_lock" &
    layer_pid=$!
  fi
  wait "${pids[0]}" || true # compileall: a file that does not compile is not importable either
  venv_ok=true
  for pid in "${pids[@]:1}"; do wait "$pid" || venv_ok=false; done
  layer_ok=true
  if [[ -n "$layer_pid" ]]; then wait "$layer_pid" || layer_ok=false; fi
  [[ "$venv_ok" == true ]] || install_failed "$set_name.txt"
  [[ "$layer_ok" == true ]] || install_failed schema.txt
  "$build/venv/bin/python" -I -m cursor_agent_action --version ||
    fail "The helper does not start from $build/venv (output above). Fix: use a full checkout of the action (a release tag or a commit SHA); re-running may help if the runner's disk was full."
  if [[ "$schema" == true ]]; then
    "${manifest[@]}" write "$build/venv/extras/schema" ||
      fail "Could not write the helper venv's manifest. Fix: make sure RUNNER_TOOL_CACHE is writable."
    : >"$build/venv/extras/schema/.complete"
  fi
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

# The schema support for a venv built without it (by an earlier job that did not need it, or by
# another job just now): built beside the venv's files, then moved into place in one step.
if [[ "$schema" == true && ! -f "$layer/.complete" ]]; then
  mkdir -p "$venv/extras"
  layer_build=$(mktemp -d "$venv/extras/.build.XXXXXX")
  group_open=true
  echo "::group::Add the schema support (jsonschema, PyYAML) to the helper venv"
  choose_pip "$venv" ||
    fail "'$python' has no pip that can install into a venv. Fix: add an actions/setup-python step, or install python3-pip."
  "${isolated[@]}" "${pip[@]}" "${pip_install[@]}" --target "$layer_build/schema" -r "$schema_lock" ||
    install_failed schema.txt
  "${manifest[@]}" write "$layer_build/schema" ||
    fail "Could not write the helper venv's manifest. Fix: make sure RUNNER_TOOL_CACHE is writable."
  : >"$layer_build/schema/.complete"
  echo "::endgroup::"
  group_open=false
  "$python" -I -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])' "$layer_build/schema" "$layer" 2>/dev/null ||
    [[ -f "$layer/.complete" ]] ||
    fail "Could not move the schema support into $layer. Fix: make sure RUNNER_TOOL_CACHE is writable."
  cache_hit=false
fi

{
  echo "python=$venv/bin/python"
  echo "cache-hit=$cache_hit"
} >>"${GITHUB_OUTPUT:-/dev/stdout}"
