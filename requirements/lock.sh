#!/usr/bin/env bash
# Regenerate the hash-pinned lock files the action installs from (wheels only, every platform
# and Python >= 3.10): requirements/run.txt for the action's own steps, requirements/gh.txt for
# the publish, comment and ci-context sub-actions. Needs uv (`pip install uv`) and PyPI.
# tests/test_action_lock.py checks that each lock covers its .in file.
set -euo pipefail
cd "$(dirname "$0")/.."
for set in run gh; do
  uv pip compile "requirements/$set.in" --universal --generate-hashes --python-version 3.10 \
    --custom-compile-command requirements/lock.sh -o "requirements/$set.txt"
done
