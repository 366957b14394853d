#!/usr/bin/env bash
# Regenerate the hash-pinned lock files the action installs from (wheels only, every platform
# and Python >= 3.10): requirements/run.txt for the action's own steps, requirements/schema.txt
# for the schema support a run adds on top of them only with output-schema or mcp-config, and
# requirements/gh.txt for the publish, comment, ci-context and gate sub-actions. Needs uv
# (`pip install uv`) and PyPI. An existing lock's pins are kept where they still fit.
# tests/test_action_lock.py checks that each lock covers its .in file.
set -euo pipefail
cd "$(dirname "$0")/.."
compile=(uv pip compile --universal --generate-hashes --python-version 3.10
  --custom-compile-command requirements/lock.sh)
"${compile[@]}" requirements/run.in -o requirements/run.txt
# The schema set goes into the run venv: the versions run.txt pins, and only what it lacks.
run_packages=$(sed -n 's/^\([A-Za-z0-9._-]*\)==.*/\1/p' requirements/run.txt | sort -u)
no_emit=()
for name in $run_packages; do no_emit+=(--no-emit-package "$name"); done
"${compile[@]}" requirements/schema.in -c requirements/run.txt "${no_emit[@]}" -o requirements/schema.txt
# PyGithub imports neither cryptography (PyJWT's optional RS256, for GitHub App keys: the
# sub-actions authenticate with a token) nor pycparser (cffi's C parser, needed only to build
# modules; PyNaCl's is built): 5 MB and a second of set-up time left out.
"${compile[@]}" requirements/gh.in --no-emit-package cryptography --no-emit-package pycparser \
  -o requirements/gh.txt
