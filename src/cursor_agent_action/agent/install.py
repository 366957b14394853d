"""Install a pinned Cursor CLI version the way the vendor's install script does, with a cache.

The vendor script (``curl https://cursor.com/install | bash``) downloads one archive per
version, OS and architecture::

    https://downloads.cursor.com/lab/<version>/<os>/<arch>/agent-cli-package.tar.gz
    os: linux | darwin     arch: x64 | arm64

unpacks it (one top-level ``dist-package/`` directory: a whole package with its own node, not
one file) into ``~/.local/share/cursor-agent/versions/<version>/`` and links ``cursor-agent`` and
``agent`` in ``~/.local/bin`` to its ``cursor-agent`` executable. We do the same under a cache
directory, and resolve ``latest`` the way the vendor's script carries it: the version embedded
in the script's download URL. The vendor publishes no checksums; the transport is HTTPS.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import posixpath
import random
import re
import shutil
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn, TypeVar
from urllib.parse import urlsplit

import httpx

from cursor_agent_action.errors import InstallError, UsageError
from cursor_agent_action.options import add_option
from cursor_agent_action.runner_io import Runner

DEFAULT_CLI_VERSION = "2026.09.28-64d2043"
"""The version this action is tested against; ``--version latest`` follows the vendor."""

DEFAULT_BASE_URL = "https://downloads.cursor.com"
DEFAULT_LATEST_URL = "https://cursor.com/install"
PACKAGE_FILE = "agent-cli-package.tar.gz"
EXECUTABLE = "cursor-agent"
LINK_NAMES = ("cursor-agent", "agent")
MARKER = ".cursor-agent-action-install.json"
"""Written last into a complete install; a version directory without it is not a cache hit."""

MAX_ARCHIVE_BYTES = 1024**3
MAX_UNPACKED_BYTES = 4 * 1024**3
_MAX_SCRIPT_BYTES = 1024**2
_STALE_TEMP_SECONDS = 24 * 3600

_VERSION = re.compile(r"^\d{4}\.\d{2}\.\d{2}-[0-9A-Za-z][0-9A-Za-z-]*$")
_VERSION_IN_SCRIPT = re.compile(r"/lab/(\d{4}\.\d{2}\.\d{2}-[0-9A-Za-z][0-9A-Za-z-]*)/")
T = TypeVar("T")
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_OS_NAMES = {"linux": "linux", "darwin": "darwin"}
_ARCH_NAMES = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter (``sleep`` injectable for tests)."""

    attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    total_seconds: float = 900.0
    """Wall-clock budget for the whole fetch, all attempts and waits included."""
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int) -> float:
        """Wait before attempt ``attempt + 1``: full backoff times a jitter in [0.5, 1)."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return backoff * (0.5 + random.random() / 2)  # noqa: S311 - jitter, not crypto


@dataclass(frozen=True)
class InstallResult:
    cli_path: Path
    cli_version: str
    cache_hit: bool


class _Retryable(Exception):
    """A failure worth another attempt (network error, 5xx, 429, truncated body)."""


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


# -- HTTP --------------------------------------------------------------------------------------


def _fetch(
    what: str,
    url: str,
    attempt: Callable[[float], T],
    retry: RetryPolicy,
    log: Callable[[str], None],
) -> T:
    """Call ``attempt(deadline)`` until it succeeds, retrying :class:`_Retryable` failures."""
    deadline = time.monotonic() + retry.total_seconds
    number = 0
    while True:  # bounded: gives up after retry.attempts or past the deadline
        number += 1
        try:
            return attempt(deadline)
        except (_Retryable, httpx.TransportError) as exc:
            reason = str(exc) or type(exc).__name__
            wait = retry.delay(number)
            if number == retry.attempts or time.monotonic() + wait > deadline:
                raise InstallError(
                    f"{what} failed after {number} attempt(s): {reason} (URL: {url}).",
                    "Check the runner's network access to the URL and re-run the job; the "
                    "download is retried with backoff on network errors and 5xx responses.",
                ) from exc
            log(f"{what}: {reason}; retrying in {wait:.1f} s (attempt {number + 1} of "
                f"{retry.attempts}).")  # fmt: skip
            retry.sleep(wait)


def _check_status(response: httpx.Response, what: str, *, missing: str, hint: str) -> None:
    status = response.status_code
    if status == 200:
        return
    if status >= 500 or status == 429:
        raise _Retryable(f"HTTP {status}")
    if status in (403, 404):  # how the download server answers a file that does not exist
        raise InstallError(f"{what}: HTTP {status} from {response.url}: {missing}", hint)
    raise InstallError(
        f"{what}: unexpected HTTP {status} from {response.url}.",
        "Check --base-url/--latest-url (or leave them unset for the vendor's servers).",
    )


def _download(
    client: httpx.Client, url: str, dest: Path, deadline: float, *, what: str, missing: str
) -> None:
    """One download attempt into ``dest`` (raw bytes: no content decoding)."""
    with client.stream("GET", url) as response:
        _check_status(
            response,
            what,
            missing=missing,
            hint="Check that the version exists (the download server answers 403 or 404 for "
            f"a missing file), use the default {DEFAULT_CLI_VERSION} or 'latest', and check "
            "--base-url if you use a mirror.",
        )
        header = response.headers.get("content-length", "")
        expected = int(header) if header.isdigit() else None
        if expected is not None and expected > MAX_ARCHIVE_BYTES:
            _too_large(url)
        written = 0
        with dest.open("wb") as handle:
            try:
                for chunk in response.iter_raw():
                    written += len(chunk)
                    if written > MAX_ARCHIVE_BYTES:
                        _too_large(url)
                    if time.monotonic() > deadline:
                        raise _Retryable("time budget for the download used up")
                    handle.write(chunk)
            except httpx.TransportError as exc:
                # httpx enforces Content-Length: a body cut short ends here, never silently.
                raise _Retryable(
                    f"download interrupted after {written} of "
                    f"{expected if expected is not None else 'unknown'} bytes, truncated "
                    f"({type(exc).__name__}: {exc})"
                ) from exc


def _too_large(url: str) -> NoReturn:
    raise InstallError(
        f"the package at {url} is larger than {MAX_ARCHIVE_BYTES} bytes; refusing it.",
        "Check --base-url: the Cursor CLI package is far smaller.",
    )


def resolve_latest(
    client: httpx.Client, latest_url: str, retry: RetryPolicy, log: Callable[[str], None]
) -> str:
    """The version in the vendor's install script (its ``.../lab/<version>/...`` URL)."""

    def attempt(deadline: float) -> str:
        with client.stream("GET", latest_url) as response:
            _check_status(
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

    return _fetch("resolving 'latest'", latest_url, attempt, retry, log)


# -- archive -----------------------------------------------------------------------------------


def _bad_archive(url: str, problem: str) -> NoReturn:
    raise InstallError(
        f"the package from {url} is not a valid Cursor CLI package: {problem}.",
        "Re-run the job; if it persists, check --base-url or pin another version.",
    )


def _outside(normalized: str) -> bool:
    return normalized.startswith("/") or normalized == ".." or normalized.startswith("../")


def _check_members(members: list[tarfile.TarInfo], url: str) -> None:
    """Refuse traversal, escaping links, special files and members behind a link."""
    links: set[str] = set()
    total = 0
    for member in members:
        name = posixpath.normpath(member.name)
        if name == "." and member.isdir():
            continue
        if _outside(name) or name == ".":
            _bad_archive(url, f"member {member.name!r} points outside the package")
        parts = name.split("/")
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            _bad_archive(url, f"member {member.name!r} lies behind a symbolic link")
        if member.issym() or member.islnk():
            base = posixpath.dirname(name) if member.issym() else ""
            target = posixpath.normpath(posixpath.join(base, member.linkname))
            if member.linkname.startswith("/") or _outside(target):
                _bad_archive(url, f"link {member.name!r} -> {member.linkname!r} escapes it")
            links.add(name)
        elif not (member.isfile() or member.isdir()):
            _bad_archive(url, f"member {member.name!r} is a device or pipe")
        total += member.size
        if total > MAX_UNPACKED_BYTES:
            _bad_archive(url, f"it unpacks to more than {MAX_UNPACKED_BYTES} bytes")


def _unpack(archive: Path, dest: Path, url: str) -> Path:
    """Unpack the archive into ``dest``; returns the package root (holding ``cursor-agent``)."""
    if not hasattr(tarfile, "data_filter"):  # pragma: no cover - Python < 3.10.12
        raise InstallError(
            "this Python cannot unpack archives safely (no tarfile data filter).",
            "Use Python 3.10.12 or newer (actions/setup-python installs a current one).",
        )
    dest.mkdir()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            _check_members(members, url)
            tar.extractall(dest, members=members, filter="data")
    except tarfile.FilterError as exc:
        _bad_archive(url, f"unsafe member: {exc}")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        _bad_archive(url, f"cannot unpack it as tar.gz ({type(exc).__name__}: {exc})")
    entries = list(dest.iterdir())
    # The vendor's package has one top-level directory (dist-package/); some are flat.
    candidates = [dest, *(entries if len(entries) == 1 and entries[0].is_dir() else [])]
    for root in candidates:
        exe = root / EXECUTABLE
        if exe.is_file() and os.access(exe, os.X_OK):
            return root
    _bad_archive(url, f"no executable {EXECUTABLE} at its top level")


# -- cache -------------------------------------------------------------------------------------


def _cached(version_dir: Path, version: str, os_name: str, arch: str) -> bool:
    """A complete install of this version for this platform (marker written last)."""
    try:
        marker = json.loads((version_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    exe = version_dir / EXECUTABLE
    return (
        isinstance(marker, dict)
        and (marker.get("version"), marker.get("os"), marker.get("arch"))
        == (version, os_name, arch)
        and exe.is_file()
        and os.access(exe, os.X_OK)
    )


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
) -> InstallResult:
    """Install ``version`` (or ``latest``) into ``cache_dir/versions/<version>/`` and link it.

    ``target`` is ``(os, arch)``, detected by default. ``timeout`` bounds each network wait;
    ``retry`` bounds attempts and total time. Raises :class:`InstallError` on any failure:
    nothing half-installed is ever left where a later run would take it as complete.
    """
    say = log or (lambda _line: None)
    retry = retry or RetryPolicy()
    cache_dir, bin_dir = cache_dir.absolute(), bin_dir.absolute()  # links need absolute targets
    version = version.strip()
    if version.lower() == "latest":
        version = "latest"
    else:
        _check_version(version)
    _check_url(base_url, "--base-url")
    if version == "latest":
        _check_url(latest_url, "--latest-url")
    os_name, arch = target or detect_platform()
    with httpx.Client(timeout=timeout, follow_redirects=True) as client:
        if version == "latest":
            version = resolve_latest(client, latest_url, retry, say)
            say(f"'latest' is Cursor CLI {version} (from {latest_url}).")
        versions_dir = cache_dir / "versions"
        version_dir = versions_dir / version
        if _cached(version_dir, version, os_name, arch):
            say(f"Cursor CLI {version} ({os_name}/{arch}) is cached in {version_dir}.")
            _link(bin_dir, version_dir / EXECUTABLE)
            return InstallResult(version_dir / EXECUTABLE, version, cache_hit=True)
        url = package_url(base_url, version, os_name, arch)
        try:
            versions_dir.mkdir(parents=True, exist_ok=True)
            _remove_stale_temp_dirs(versions_dir)
            staging = Path(tempfile.mkdtemp(prefix=f".tmp-{version}-", dir=versions_dir))
        except OSError as exc:
            raise InstallError(
                f"cannot create the cache directory {versions_dir}: {exc}.",
                "Pass a writable --cache-dir (env CURSOR_CLI_CACHE_DIR).",
            ) from exc
        say(f"Downloading Cursor CLI {version} ({os_name}/{arch}) from {url}")
        try:
            archive = staging / PACKAGE_FILE
            what = f"downloading Cursor CLI {version} for {os_name}/{arch}"
            missing = f"no Cursor CLI {version} package for {os_name}/{arch} there."
            _fetch(
                what,
                url,
                lambda deadline: _download(
                    client, url, archive, deadline, what=what, missing=missing
                ),
                retry,
                say,
            )
            root = _unpack(archive, staging / "unpacked", url)
            (root / MARKER).write_text(
                json.dumps({"version": version, "os": os_name, "arch": arch, "url": url}) + "\n",
                encoding="utf-8",
            )
            _place(root, version_dir, lambda: _cached(version_dir, version, os_name, arch), say)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    _link(bin_dir, version_dir / EXECUTABLE)
    say(f"Installed Cursor CLI {version} in {version_dir}.")
    return InstallResult(version_dir / EXECUTABLE, version, cache_hit=False)


def _place(
    root: Path, version_dir: Path, cached: Callable[[], bool], say: Callable[[str], None]
) -> None:
    """Move the unpacked package to ``version_dir`` in one rename."""
    try:
        if cached():  # another job on this runner finished the same version meanwhile
            return
        if version_dir.is_symlink() or version_dir.is_file():
            version_dir.unlink()
        elif version_dir.exists():
            say(f"Replacing the incomplete install in {version_dir}.")
            shutil.rmtree(version_dir)
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
