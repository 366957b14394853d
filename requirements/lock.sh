#!/usr/bin/env bash
# Regenerate requirements/action.txt: every package the action's helper venv installs (runtime
# dependencies from pyproject.toml plus the build backend), pinned with hashes for every
# platform and Python >= 3.10. Needs uv (`pip install uv`) and access to PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
uv pip compile pyproject.toml requirements/build.in --universal --generate-hashes \
  --python-version 3.10 --custom-compile-command requirements/lock.sh \
  -o requirements/action.txt
