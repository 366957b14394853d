"""Typed errors. Each becomes one ``::error::`` line with a fix-it hint in ``cli.main``.

Exit codes (documented in docs/helper-cli.md, "Exit codes"):

====  =====================================================================
 0    success
 1    the agent run did not succeed (conclusion failure, timeout, budget, cancelled)
 2    usage error or invalid input (bad option, bad permission token, ...)
 3    setup error (CLI not found, install failed, workspace problem)
 4    git or GitHub operation failed
 5    publish refused the change (a policy refusal; nothing was pushed)
 70   internal error (a bug: please report it)
====  =====================================================================
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2
EXIT_SETUP = 3
EXIT_GITHUB = 4
EXIT_REFUSED = 5
EXIT_INTERNAL = 70


class ActionError(Exception):
    """An expected failure with a message for the user and a hint to fix it."""

    exit_code: int = EXIT_SETUP
    title: str = "cursor-agent-action"

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class UsageError(ActionError):
    """Invalid command line, input or configuration. Nothing was changed."""

    exit_code = EXIT_USAGE
    title = "invalid input"


class SetupError(ActionError):
    """The environment is not ready: CLI missing, install failed, workspace unusable."""

    exit_code = EXIT_SETUP
    title = "setup failed"


class InstallError(SetupError):
    """Downloading or unpacking the Cursor CLI failed."""

    title = "CLI install failed"


class GitHubError(ActionError):
    """A git or GitHub REST operation failed."""

    exit_code = EXIT_GITHUB
    title = "GitHub operation failed"


class PublishRefused(ActionError):
    """publish refused the change by policy (paths outside allowed-paths, protected paths, a
    branch publish did not make): not a GitHub failure. Nothing was pushed."""

    exit_code = EXIT_REFUSED
    title = "refused to publish"
