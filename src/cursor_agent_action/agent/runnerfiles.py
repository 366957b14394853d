"""The runner's file-command files: snapshot before the agent runs, put back after.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cursor_agent_action.agent.filestate import FileState
from cursor_agent_action.errors import SetupError

# -- the runner's file commands ----------------------------------------------------------------

# Files the runner reads after the step to set env vars, PATH, outputs, summary and state for
# later steps (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#environment-files).
# The agent runs as the runner user, so it could append BASH_ENV=... to GITHUB_ENV.
FILE_COMMAND_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                     "GITHUB_STATE")


def snapshot_file_commands(environ: Mapping[str, str]) -> dict[Path, FileState]:
    """The runner's file-command files named in ``environ``, as they are now."""
    paths = {Path(value) for name in FILE_COMMAND_VARS if (value := environ.get(name, ""))}
    return {path: FileState.of(path) for path in sorted(paths)}


def restore_files(before: Mapping[Path, FileState]) -> list[str]:
    """Put back every file that changed since ``before``, byte for byte; the changed paths."""
    changed = []
    for path, state in before.items():
        if FileState.of(path) == state:
            continue
        changed.append(str(path))
        try:
            state.put_back(path)
        except OSError as exc:
            raise SetupError(
                f"the agent changed {path} and it could not be restored: "
                f"{exc.strerror or exc}.",
                "Cancel the workflow run: later steps could run with variables, PATH entries "
                "or git settings the agent planted.",
            ) from exc
    return changed


