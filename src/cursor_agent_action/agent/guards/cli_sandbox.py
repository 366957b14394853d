"""The Cursor CLI's own sandbox for terminal commands, made explicit inside our box.

The CLI can run the agent's shell commands in a sandbox of its own (``--sandbox
enabled|disabled``; Landlock and an unprivileged user namespace on Linux; file tools are not
sandboxed), configured by ``~/.cursor/sandbox.json`` and a repository's
``.cursor/sandbox.json``, which wins (cursor.com/docs/reference/sandbox). Left to its defaults
it is on where the CLI thinks it can be, and the repository under review would decide its
limits. What the action does instead (docs/cli-compat.md, "The CLI's own sandbox"):

- The home's ``sandbox.json`` is ours: written by root into the agent's fresh home, from the
  preset (``workspace_readonly`` for a read-only preset, else ``workspace_readwrite``) and the
  action's network allow-list (``networkPolicy``: deny by default, only the listed domains).
  The repository's ``.cursor/sandbox.json`` is set aside with the other configuration files,
  so it never applies.
- The mode is always passed (when the build lists ``--sandbox``): ``enabled`` where the runner
  can host the sandbox, ``disabled`` where it cannot (GitHub's Ubuntu 24.04 images restrict
  unprivileged user namespaces through AppArmor, and the standalone CLI ships no AppArmor
  profile), with the reason in the log. The action does not lift that AppArmor restriction: it
  is a kernel hardening for the whole runner, and our box (its own user, PID, mount and network
  namespaces, the network wall) holds the agent there without the CLI's nested layer.
- If the CLI still reports "Sandbox mode is enabled but not available", that is a known
  failure (:mod:`.failures`) whose fix is a run with ``--sandbox disabled``.
"""

from __future__ import annotations

import json
import os
import platform
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

HOME_FILE = ".cursor/sandbox.json"
"""Where the CLI reads the user-level sandbox settings, relative to its HOME."""

CURSOR_DOMAINS = (
    "cursor.com",
    "*.cursor.com",
    "*.cursor.sh",
    "*.cursorapi.com",
    "*.cursor-cdn.com",
)
"""The domains the Cursor CLI itself talks to (cursor.com/docs/enterprise/network-configuration):
the caller's value for ``domains`` until the network wall's allow-list is an input."""

LANDLOCK_KERNEL = (6, 2)
"""Linux kernel with Landlock ABI v3, the CLI's minimum (cursor.com/docs/agent/tools/terminal)."""

_FLAG = re.compile(rb"(^|\s)--sandbox\b")
_DOMAIN = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$")


def sandbox_json(*, read_only: bool, domains: Sequence[str], writable: Sequence[str] = ()) -> str:
    """The home ``sandbox.json``: the preset's filesystem mode and a deny-by-default network
    policy allowing only ``domains``. ``writable``: more paths a read-write preset's commands
    may write (e.g. the agent's ``TMPDIR`` in its home); a read-only preset gets none."""
    allowed = sorted({domain.strip().lower() for domain in domains if domain.strip()})
    bad = [domain for domain in allowed if not _DOMAIN.match(domain)]
    if bad:
        raise ValueError(f"not a domain for the CLI's network policy: {bad[0]!r}")
    settings: dict[str, object] = {
        "type": "workspace_readonly" if read_only else "workspace_readwrite",
        "additionalReadwritePaths": [] if read_only else sorted(set(writable)),
        "additionalReadonlyPaths": [],
        "disableTmpWrite": False,
        "enableSharedBuildCache": False,
        "networkPolicy": {"default": "deny", "allow": allowed, "deny": []},
    }
    return json.dumps(settings, indent=2) + "\n"


@dataclass(frozen=True)
class SandboxSupport:
    """Whether the CLI's sandbox can start on this runner, and why not."""

    available: bool
    reason: str = ""


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _kernel(release: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", release)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def probe(
    system: str | None = None, release: str | None = None, read: Callable[[str], str | None] = _read
) -> SandboxSupport:
    """Whether the CLI's sandbox can start here (the docs' requirements, checked where the
    kernel shows them; ``read`` returns a file's text or None)."""
    system = system or platform.system()
    if system == "Darwin":
        return SandboxSupport(True)  # Seatbelt: "works out of the box"
    if system != "Linux":
        return SandboxSupport(False, f"the CLI has no sandbox on {system}")
    release = release or platform.release()
    if _kernel(release) < LANDLOCK_KERNEL:
        return SandboxSupport(False, f"kernel {release} is older than 6.2 (Landlock v3)")
    lsm = read("/sys/kernel/security/lsm")
    if lsm is not None and "landlock" not in lsm.split(","):
        return SandboxSupport(False, "Landlock is not enabled in this kernel")
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return SandboxSupport(False, "AppArmor restricts unprivileged user namespaces "
                                     "(kernel.apparmor_restrict_unprivileged_userns=1)")
    if read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return SandboxSupport(False, "unprivileged user namespaces are disabled "
                                     "(kernel.unprivileged_userns_clone=0)")
    if read("/proc/sys/user/max_user_namespaces") == "0":
        return SandboxSupport(False, "user namespaces are disabled (user.max_user_namespaces=0)")
    return SandboxSupport(True)


def lists_sandbox_flag(help_output: bytes) -> bool:
    """Whether this CLI build's ``--help`` lists ``--sandbox`` (builds before mid-2026 lack it
    and would refuse it as an unknown option)."""
    return _FLAG.search(help_output) is not None


def sandbox_mode(support: SandboxSupport, *, listed: bool) -> str:
    """The value for ``--sandbox``: ``enabled`` or ``disabled``; "" when the build has no such
    flag (nothing to pass, nothing to choose)."""
    if not listed:
        return ""
    return "enabled" if support.available else "disabled"


def describe(mode: str, support: SandboxSupport) -> str:
    """One log line on the choice, for the run's log and the summary's isolation note."""
    if mode == "enabled":
        return ("The CLI's own sandbox is on for the agent's shell commands (its settings: "
                "the preset and the action's network allow-list).")
    if mode == "disabled":
        return (f"The CLI's own sandbox is off: {support.reason or 'not available here'}; "
                "the action's box contains the agent.")
    return "This CLI build has no --sandbox flag: its sandbox is left to the build's default."


def environment_tmpdir(env: dict[str, str]) -> list[str]:
    """The agent's ``TMPDIR`` as a writable path for :func:`sandbox_json`, if it has one."""
    tmpdir = env.get("TMPDIR", "")
    return [tmpdir] if tmpdir and os.path.isabs(tmpdir) else []
