"""Files the agent must not change for good: snapshot before it runs, put back after.

:class:`Restored` is that guard for any set of files: the runner's file commands (named by the
job's environment, :func:`file_command_paths`) and the repository's git config.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType

from cursor_agent_action.agent.guards.filestate import FileState
from cursor_agent_action.errors import SetupError

# -- the runner's file commands ----------------------------------------------------------------

# Files the runner reads after the step to set env vars, PATH, outputs, summary and state for
# later steps (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#environment-files).
# The agent runs as the runner user, so it could append BASH_ENV=... to GITHUB_ENV.
FILE_COMMAND_VARS = ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
                     "GITHUB_STATE")


def file_command_paths(environ: Mapping[str, str]) -> list[Path]:
    """The runner's file-command files named in ``environ``."""
    return sorted({Path(value) for name in FILE_COMMAND_VARS if (value := environ.get(name, ""))})


class Restored:
    """``paths`` as they were on entering, put back byte for byte on leaving, also after a
    failure; :attr:`changed` then names those that had changed."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.paths = list(paths)
        self.before: dict[Path, FileState] = {}
        self.changed: list[str] = []

    def __enter__(self) -> Restored:
        self.before = {path: FileState.of(path) for path in self.paths}
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.changed = restore_files(self.before)


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


