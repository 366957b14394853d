"""The default Cursor CLI pin and the SHA-256 of its package archives, and their check.

The vendor publishes no checksums. Public packaging does: nixpkgs' ``cursor-cli`` expression
and Homebrew's ``cursor-cli`` cask record each archive's hash (docs/cli-compat.md names the
revisions). A download that does not match is refused; a version without a known hash (``latest``
or another pin) is installed unverified, with a notice, unless ``--sha256`` gives its hash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from cursor_agent_action.errors import InstallError, UsageError

DEFAULT_CLI_VERSION = "2026.10.01-e373342"
"""The version this action is tested against; ``--version latest`` follows the vendor."""

PINNED_SHA256: Mapping[str, Mapping[tuple[str, str], str]] = {
    # nixpkgs pkgs/by-name/cu/cursor-cli/package.nix (0-unstable-2026-10-01; SRI converted to
    # hex) and Homebrew's Casks/c/cursor-cli.rb (2026.10.01-e373342) agree on every value.
    "2026.10.01-e373342": {
        ("linux", "x64"): "a79726c6e644520e993970be4c45775a6889802b67abe461a677a53219ae28e8",
        ("linux", "arm64"): "785c5f6bf2a60eb1121e27ed8c14f5ee07ed1b5b6692324f2d9a997238245eb5",
        ("darwin", "arm64"): "629e51de43a0b7fb3b86f5ebc7e579f7df7df941b39f29e82945cde750145afc",
        ("darwin", "x64"): "a80db6e15626e0aa7af60fab3a95c98a243e2c1513c0c9485344a553d7b7b00e",
    },
}
"""The SHA-256 of each package archive of the pinned versions, per ``(os, arch)``."""

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def expected_sha256(
    version: str, os_name: str, arch: str, sha256: str | None,
    pins: Mapping[str, Mapping[tuple[str, str], str]],
) -> str | None:
    """The hash the package must have: ``--sha256`` if given, else the pinned one, if any."""
    if sha256:
        return sha256
    return pins.get(version, {}).get((os_name, arch))


def check_sha256(sha256: str | None) -> str | None:
    """``--sha256`` normalized (lower case), or None when unset; refuses anything else."""
    if not sha256:
        return None
    value = sha256.strip().lower()
    if not _SHA256.match(value):
        raise UsageError(
            f"--sha256 {sha256!r} is not a SHA-256 (64 hexadecimal digits).",
            "Give the hash of the package archive for the runner's platform "
            "(`sha256sum agent-cli-package.tar.gz`), or leave it unset.",
        )
    return value


def verify_sha256(
    got: str, expected: str | None, *, version: str, platform: str, url: str,
    say: Callable[[str], None], tell: Callable[[str], None],
) -> None:
    """Refuse an archive whose SHA-256 is not the expected one; say when none is expected."""
    if expected is None:
        tell(
            f"Cursor CLI {version} ({platform}) is installed unverified: no SHA-256 is "
            f"known for it (only the default {DEFAULT_CLI_VERSION} ships one). Its SHA-256 "
            f"is {got}."
        )
        return
    if got != expected:
        raise InstallError(
            f"the Cursor CLI {version} package for {platform} from {url} does not match "
            f"its expected SHA-256: expected {expected}, got {got}. It was not installed.",
            "Re-run the job (a corrupted or tampered download is never used); if it persists, "
            "check --base-url (a mirror must serve the vendor's bytes) or the --sha256 you set.",
        )
    say(f"SHA-256 verified: {got}.")
