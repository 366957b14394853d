"""Install a pinned Cursor CLI version the way the vendor's install script does, with a cache.

The vendor script (``curl https://cursor.com/install | bash``) downloads one archive per
version, OS and architecture::

    https://downloads.cursor.com/lab/<version>/<os>/<arch>/agent-cli-package.tar.gz
    os: linux | darwin     arch: x64 | arm64

unpacks it (one top-level ``dist-package/`` directory: a whole package with its own node, not
one file) into ``~/.local/share/cursor-agent/versions/<version>/`` and links ``cursor-agent`` and
``agent`` in ``~/.local/bin`` to its ``cursor-agent`` executable. We do the same under a cache
directory, and resolve ``latest`` the way the vendor's script carries it: the version embedded
in the script's download URL.

The vendor publishes no checksums. Public packaging does: nixpkgs' ``cursor-cli`` expression and
Homebrew's ``cursor-cli`` cask record each archive's hash. The default pin ships those SHA-256
values (docs/cli-compat.md names the sources) and a download that does not match is refused;
``latest`` or another version is downloaded unverified unless ``--sha256`` gives its hash.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from cursor_agent_action.agent.install.archive import EXECUTABLE, tree_digest, unpack
from cursor_agent_action.agent.install.download import (
    RetryPolicy,
    check_status,
    download,
    fetch_with_retries,
)
from cursor_agent_action.agent.install.versions import (
    DEFAULT_CLI_VERSION,
    PINNED_SHA256,
    check_sha256,
    expected_sha256,
    verify_sha256,
)
from cursor_agent_action.errors import InstallError, UsageError
from cursor_agent_action.options import add_option
from cursor_agent_action.runner_io import Runner

DEFAULT_BASE_URL = "https://downloads.cursor.com"
DEFAULT_LATEST_URL = "https://cursor.com/install"
PACKAGE_FILE = "agent-cli-package.tar.gz"
LINK_NAMES = ("cursor-agent", "agent")
MARKER = ".cursor-agent-action-install.json"
"""Written last into a complete install; a version directory without it is not a cache hit."""

_MAX_SCRIPT_BYTES = 1024**2
_STALE_TEMP_SECONDS = 24 * 3600

_VERSION = re.compile(r"^\d{4}\.\d{2}\.\d{2}-[0-9A-Za-z][0-9A-Za-z-]*$")
_VERSION_IN_SCRIPT = re.compile(r"/lab/(\d{4}\.\d{2}\.\d{2}-[0-9A-Za-z][0-9A-Za-z-]*)/")
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_OS_NAMES = {"linux": "linux", "darwin": "darwin"}
_ARCH_NAMES = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}


@dataclass(frozen=True)
class InstallResult:
    cli_path: Path
    cli_version: str
    cache_hit: bool


def detect_platform(system: str | None = None, machine: str | None = None) -> tuple[str, str]:
    """``(os, arch)`` in the vendor's naming. Refuses Windows and unknown platforms."""
    system = (system or platform.system()).lower()
    machine = (machine or platform.machine()).lower()
    if system.startswith(("windows", "cygwin", "msys")):
        raise InstallError(
            "Windows runners are not supported.",
            "Run the job on a Linux or macOS runner (runs-on: ubuntu-latest).",
        )
    if system not in _OS_NAMES or machine not in _ARCH_NAMES:
        raise InstallError(
            f"the Cursor CLI has no package for {system}/{machine}.",
            "Use a Linux or macOS runner on x64 or arm64.",
        )
    return _OS_NAMES[system], _ARCH_NAMES[machine]


def package_url(base_url: str, version: str, os_name: str, arch: str) -> str:
    return f"{base_url.rstrip('/')}/lab/{version}/{os_name}/{arch}/{PACKAGE_FILE}"


def _check_url(url: str, option: str) -> None:
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS:
        return
    raise UsageError(
        f"{option} {url!r} must be an https:// URL (plain http only on localhost).",
        "The CLI is executable code: fetch it over HTTPS, or omit the option for the default.",
    )


def _check_version(version: str) -> None:
    if not _VERSION.match(version):
        raise UsageError(
            f"invalid Cursor CLI version {version!r}.",
            f"Use 'latest' or a version like {DEFAULT_CLI_VERSION!r} (`cursor-agent --version`).",
        )


# -- latest --------------------------------------------------------------------------------------


def resolve_latest(
    client: httpx.Client, latest_url: str, retry: RetryPolicy, log: Callable[[str], None]
) -> str:
    """The version in the vendor's install script (its ``.../lab/<version>/...`` URL)."""

    def attempt(deadline: float) -> str:
        with client.stream("GET", latest_url) as response:
            check_status(
                response,
                "resolving 'latest'",
                missing="no install script there.",
                hint=f"Check --latest-url, or pin a version, e.g. --version {DEFAULT_CLI_VERSION}.",
            )
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > _MAX_SCRIPT_BYTES or time.monotonic() > deadline:
                    break
        match = _VERSION_IN_SCRIPT.search(body.decode("utf-8", errors="replace"))
        if match is None:
            raise InstallError(
                f"resolving 'latest': no '/lab/<version>/' download URL found in {latest_url}.",
                f"Pin a version instead, e.g. --version {DEFAULT_CLI_VERSION}.",
            )
        return match.group(1)

    return fetch_with_retries("resolving 'latest'", latest_url, attempt, retry, log)



# -- cache -------------------------------------------------------------------------------------


def _cached(
    version_dir: Path, version: str, os_name: str, arch: str, expected: str | None
) -> bool:
    """A complete install of this version for this platform (marker written last) whose
    marker still vouches for it: the archive hash it records is the expected one (when one is
    expected) and the unpacked files still have the digest it records."""
    try:
        marker = json.loads((version_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    exe = version_dir / EXECUTABLE
    if not (
        isinstance(marker, dict)
        and (marker.get("version"), marker.get("os"), marker.get("arch"))
        == (version, os_name, arch)
        and (expected is None or marker.get("sha256") == expected)
        and isinstance(marker.get("tree"), str)
        and exe.is_file()
        and os.access(exe, os.X_OK)
    ):
        return False
    try:
        return bool(tree_digest(version_dir, skip=MARKER) == marker["tree"])
    except OSError:
        return False


def _remove_stale_temp_dirs(versions_dir: Path) -> None:
    """Drop staging dirs of installs killed long ago (recent ones may still be in use)."""
    cutoff = time.time() - _STALE_TEMP_SECONDS
    for entry in versions_dir.glob(".tmp-*"):
        with contextlib.suppress(OSError):
            if entry.lstat().st_mtime < cutoff:
                shutil.rmtree(entry)


def _link(bin_dir: Path, target: Path) -> None:
    """Point ``cursor-agent`` and ``agent`` in ``bin_dir`` at ``target``, atomically."""
    try:
        bin_dir.mkdir(parents=True, exist_ok=True)
        for name in LINK_NAMES:
            tmp = bin_dir / f".{name}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            tmp.symlink_to(target)
            os.replace(tmp, bin_dir / name)
    except OSError as exc:
        raise InstallError(
            f"cannot link the Cursor CLI into {bin_dir}: {exc}.",
            "Pass a writable --bin-dir (nothing but our links should live at "
            f"{bin_dir}/cursor-agent and {bin_dir}/agent).",
        ) from exc


def install_cli(
    version: str,
    *,
    base_url: str = DEFAULT_BASE_URL,
    cache_dir: Path,
    bin_dir: Path,
    latest_url: str = DEFAULT_LATEST_URL,
    target: tuple[str, str] | None = None,
    retry: RetryPolicy | None = None,
    timeout: float = 60.0,
    log: Callable[[str], None] | None = None,
    notice: Callable[[str], None] | None = None,
    sha256: str | None = None,
    pins: Mapping[str, Mapping[tuple[str, str], str]] = PINNED_SHA256,
) -> InstallResult:
    """Install ``version`` (or ``latest``) into ``cache_dir/versions/<version>/`` and link it.

    ``target`` is ``(os, arch)``, detected by default. ``timeout`` bounds each network wait;
    ``retry`` bounds attempts and total time. The archive must have the SHA-256 ``sha256`` or,
    if unset, the one ``pins`` records for the version and platform; with neither it is
    installed unverified, said through ``notice``. Raises :class:`InstallError` on any failure:
    nothing half-installed is ever left where a later run would take it as complete.
    """
    say = log or (lambda _line: None)
    tell = notice if notice is not None else say
    retry = retry or RetryPolicy()
    cache_dir, bin_dir = cache_dir.absolute(), bin_dir.absolute()  # links need absolute targets
    version, sha256 = _requested(version, sha256, base_url, latest_url)
    os_name, arch = target or detect_platform()
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        if version == "latest":
            version = resolve_latest(client, latest_url, retry, say)
            say(f"'latest' is Cursor CLI {version} (from {latest_url}).")
        package = _Package(version, os_name, arch, package_url(base_url, version, os_name, arch),
                           expected_sha256(version, os_name, arch, sha256, pins))
        version_dir = cache_dir / "versions" / version
        if _cached(version_dir, version, os_name, arch, package.expected):
            say(f"Cursor CLI {version} ({os_name}/{arch}) is cached in {version_dir}.")
            _link(bin_dir, version_dir / EXECUTABLE)
            return InstallResult(version_dir / EXECUTABLE, version, cache_hit=True)
        staging = _staging(version_dir)
        say(f"Downloading Cursor CLI {version} ({os_name}/{arch}) from {package.url}")
        try:
            root = _fetch(client, package, staging, retry, say=say, tell=tell)
            _place(root, version_dir,
                   lambda: _cached(version_dir, version, os_name, arch, package.expected), say,
                   aside=staging / "replaced")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _link(bin_dir, version_dir / EXECUTABLE)
    say(f"Installed Cursor CLI {version} in {version_dir}.")
    return InstallResult(version_dir / EXECUTABLE, version, cache_hit=False)


@dataclass(frozen=True)
class _Package:
    """One package to install: its version and platform, where it is, its expected SHA-256."""

    version: str
    os_name: str
    arch: str
    url: str
    expected: str | None


def _requested(version: str, sha256: str | None, base_url: str,
               latest_url: str) -> tuple[str, str | None]:
    """The version asked for (``latest`` in any case) and the SHA-256, checked with the URLs
    before anything is fetched."""
    version = version.strip()
    if version.lower() == "latest":
        version = "latest"
    else:
        _check_version(version)
    sha256 = check_sha256(sha256)
    _check_url(base_url, "--base-url")
    if version == "latest":
        _check_url(latest_url, "--latest-url")
    return version, sha256


def _staging(version_dir: Path) -> Path:
    """A new temporary directory beside ``version_dir`` (stale ones of earlier runs removed)."""
    versions_dir = version_dir.parent
    try:
        versions_dir.mkdir(parents=True, exist_ok=True)
        _remove_stale_temp_dirs(versions_dir)
        return Path(tempfile.mkdtemp(prefix=f".tmp-{version_dir.name}-", dir=versions_dir))
    except OSError as exc:
        raise InstallError(
            f"cannot create the cache directory {versions_dir}: {exc}.",
            "Pass a writable --cache-dir (env CURSOR_CLI_CACHE_DIR).",
        ) from exc


def _fetch(client: httpx.Client, package: _Package, staging: Path, retry: RetryPolicy, *,
           say: Callable[[str], None], tell: Callable[[str], None]) -> Path:
    """The package downloaded into ``staging`` (with retries), verified, unpacked, and marked
    with what it is; the unpacked root."""
    version, os_name, arch, url = package.version, package.os_name, package.arch, package.url
    archive = staging / PACKAGE_FILE
    what = f"downloading Cursor CLI {version} for {os_name}/{arch}"
    missing = f"no Cursor CLI {version} package for {os_name}/{arch} there."
    got = fetch_with_retries(
        what,
        url,
        lambda deadline: download(
            client, url, archive, deadline, what=what, missing=missing,
            hint="Check that the version exists (the download server answers 403 or "
            f"404 for a missing file), use the default {DEFAULT_CLI_VERSION} or "
            "'latest', and check --base-url if you use a mirror.",
        ),
        retry,
        say,
    )
    verify_sha256(got, package.expected, version=version, platform=f"{os_name}/{arch}",
                  url=url, say=say, tell=tell)
    root = unpack(archive, staging / "unpacked", url)
    marker = {
        "version": version,
        "os": os_name,
        "arch": arch,
        "url": url,
        "sha256": got,
        "verified": package.expected is not None,
        "tree": tree_digest(root, skip=MARKER),
    }
    (root / MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
    return root


def _place(
    root: Path, version_dir: Path, cached: Callable[[], bool], say: Callable[[str], None],
    aside: Path,
) -> None:
    """Move the unpacked package to ``version_dir`` in one rename. An install already there
    (incomplete, or of other bytes) is first renamed to ``aside`` (in the staging directory,
    removed with it), not deleted in place: a job installing the same version at the same time
    never sees it half gone, and the window without a ``version_dir`` is two renames long."""
    try:
        if cached():  # another job on this runner finished the same version meanwhile
            return
        if version_dir.is_symlink() or version_dir.is_file():
            version_dir.unlink()
        elif version_dir.exists():
            say(f"Replacing the install in {version_dir} (incomplete, or not the expected "
                "package).")
            os.rename(version_dir, aside)
        os.rename(root, version_dir)
    except OSError as exc:
        if cached():  # lost a race with another job: its install is complete
            return
        raise InstallError(
            f"cannot move the Cursor CLI into {version_dir}: {exc}.",
            "Check that the cache directory is writable, or pass another --cache-dir.",
        ) from exc


# -- command -----------------------------------------------------------------------------------


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$CURSOR_CLI_CACHE_DIR``, else ``$RUNNER_TOOL_CACHE/cursor-agent``, else ~/.cache."""
    env = os.environ if env is None else env
    if env.get("CURSOR_CLI_CACHE_DIR"):
        return Path(env["CURSOR_CLI_CACHE_DIR"])
    if env.get("RUNNER_TOOL_CACHE"):
        return Path(env["RUNNER_TOOL_CACHE"]) / "cursor-agent"
    return Path.home() / ".cache" / "cursor-agent-action"


def configure(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--version", dest="cli_version", env="CURSOR_CLI_VERSION",
               default=DEFAULT_CLI_VERSION, help="Cursor CLI version or 'latest'")
    add_option(parser, "--base-url", env="CURSOR_CLI_DOWNLOAD_BASE_URL", default=DEFAULT_BASE_URL,
               help="download server")
    add_option(parser, "--latest-url", env="CURSOR_CLI_LATEST_URL", default=DEFAULT_LATEST_URL,
               help="install script whose download URL names the latest version")
    add_option(parser, "--sha256", env="CURSOR_CLI_SHA256",
               help="SHA-256 the package archive must have",
               default_help="the pinned one for the default version, else none (unverified)")
    add_option(parser, "--cache-dir", env="CURSOR_CLI_CACHE_DIR", help="cache directory",
               default_help="$RUNNER_TOOL_CACHE/cursor-agent, else ~/.cache/cursor-agent-action")
    add_option(parser, "--bin-dir", env="CURSOR_CLI_BIN_DIR",
               help="where to link cursor-agent and agent", default_help="<cache-dir>/bin")


def command(args: argparse.Namespace, runner: Runner) -> int:
    cache_dir = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    bin_dir = Path(args.bin_dir) if args.bin_dir else cache_dir / "bin"
    result = install_cli(
        args.cli_version,
        base_url=args.base_url,
        latest_url=args.latest_url,
        cache_dir=cache_dir,
        bin_dir=bin_dir,
        log=runner.log,
        notice=lambda message: runner.notice(message, title="Cursor CLI not verified"),
        sha256=args.sha256 or None,
    )
    runner.set_outputs(
        {
            "cli-path": str(result.cli_path),
            "cli-version": result.cli_version,
            "cache-hit": "true" if result.cache_hit else "false",
        }
    )
    runner.log(f"cursor-agent {result.cli_version}: {result.cli_path}")
    return 0
