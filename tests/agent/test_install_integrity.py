"""The CLI package's integrity: the pinned SHA-256, a download that does not match, an
unverified install's notice, and a cache whose marker is checked again on every hit. Real HTTP
from a local server, real tar.gz packages."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cursor_agent_action.agent.install.download import RetryPolicy
from cursor_agent_action.agent.install.installer import (
    MARKER,
    InstallResult,
    detect_platform,
    install_cli,
)
from cursor_agent_action.agent.install.versions import DEFAULT_CLI_VERSION, PINNED_SHA256
from cursor_agent_action.cli import main
from cursor_agent_action.errors import InstallError, UsageError
from cursor_agent_action.output_file import parse_output_file
from tests.support.download_server import (
    DownloadServer,
    Entry,
    fake_cli_script,
    make_archive,
    package_entries,
    package_path,
    serve_package,
)

V1 = "2026.09.28-64d2043"
V2 = "2026.10.02-abc1234"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture
def server() -> Iterator[DownloadServer]:
    with DownloadServer() as srv:
        yield srv


class Notices(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


def _install(
    server: DownloadServer,
    tmp_path: Path,
    version: str = V1,
    *,
    pins: Mapping[str, Mapping[tuple[str, str], str]] | None = None,
    sha256: str | None = None,
    notices: Notices | None = None,
) -> InstallResult:
    return install_cli(
        version,
        base_url=server.url,
        latest_url=f"{server.url}/install",
        cache_dir=tmp_path / "cache",
        bin_dir=tmp_path / "bin",
        target=("linux", "x64"),
        retry=RetryPolicy(attempts=3, base_delay=0.01, sleep=lambda _s: None),
        timeout=5.0,
        notice=notices if notices is not None else Notices(),
        sha256=sha256,
        pins=PINNED_SHA256 if pins is None else pins,
    )


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pin(server: DownloadServer, version: str = V1) -> dict[str, dict[tuple[str, str], str]]:
    """A pin table naming the hash of the package the server serves for ``version``."""
    return {version: {("linux", "x64"): _sha(server.files[package_path(version)])}}


def _tampered(version: str) -> bytes:
    """A well-formed package whose cursor-agent is not the vendor's (what an attacker serves)."""
    entries = [
        Entry(e.name, b"#!/bin/sh\necho owned\n", e.mode) if e.name.endswith("cursor-agent") else e
        for e in package_entries(version)
    ]
    return make_archive(entries)


def _versions(tmp_path: Path) -> list[str]:
    versions = tmp_path / "cache" / "versions"
    return sorted(p.name for p in versions.iterdir()) if versions.exists() else []


# -- the pin -----------------------------------------------------------------------------------


def test_the_default_pin_ships_a_sha256_for_every_platform_the_install_supports() -> None:
    platforms = {
        detect_platform(system, machine)
        for system, machine in [("Linux", "x86_64"), ("Linux", "aarch64"),
                                ("Darwin", "x86_64"), ("Darwin", "arm64")]
    }  # fmt: skip
    pinned = PINNED_SHA256[DEFAULT_CLI_VERSION]
    assert set(pinned) == platforms
    assert all(_HEX64.match(value) for value in pinned.values())
    assert len(set(pinned.values())) == len(pinned)  # four archives, four hashes


def test_a_matching_download_is_installed_and_its_marker_says_verified(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    notices = Notices()
    result = _install(server, tmp_path, pins=_pin(server), notices=notices)
    assert not result.cache_hit
    marker = json.loads((result.cli_path.parent / MARKER).read_text())
    assert marker["sha256"] == _pin(server)[V1]["linux", "x64"]
    assert marker["verified"] is True
    assert notices == []


# -- attacks: a download that is not the pinned one --------------------------------------------


def test_a_tampered_download_of_a_pinned_version_is_refused_naming_version_and_both_hashes(
    server: DownloadServer, tmp_path: Path
) -> None:
    """A mirror or a man in the middle serves another, well-formed package for the pin."""
    serve_package(server, V1)
    pins = _pin(server)
    server.files[package_path(V1)] = _tampered(V1)
    with pytest.raises(InstallError) as info:
        _install(server, tmp_path, pins=pins)
    message = str(info.value)
    assert V1 in message
    assert "linux/x64" in message
    assert pins[V1]["linux", "x64"] in message
    assert _sha(server.files[package_path(V1)]) in message
    assert len(server.requests) == 1  # refused, not retried
    assert _versions(tmp_path) == []  # nothing installed, no staging left
    assert not (tmp_path / "bin" / "cursor-agent").exists()


def test_a_corrupted_download_of_the_default_pin_is_refused_by_the_shipped_hash(
    server: DownloadServer, tmp_path: Path
) -> None:
    """The real table: any bytes but the vendor's for the default pin are refused."""
    serve_package(server, DEFAULT_CLI_VERSION)
    with pytest.raises(InstallError, match="does not match its expected SHA-256") as info:
        _install(server, tmp_path, DEFAULT_CLI_VERSION)
    assert PINNED_SHA256[DEFAULT_CLI_VERSION]["linux", "x64"] in str(info.value)
    assert _versions(tmp_path) == []


def test_a_download_cut_short_of_a_pinned_version_never_installs(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    pins = _pin(server)
    server.default_mode = "truncated"
    with pytest.raises(InstallError, match="truncated"):
        _install(server, tmp_path, pins=pins)
    assert _versions(tmp_path) == []


# -- unverified installs -----------------------------------------------------------------------


def test_an_unknown_pin_installs_unverified_with_a_notice_naming_its_hash(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V2)
    notices = Notices()
    result = _install(server, tmp_path, V2, notices=notices)
    assert result.cli_version == V2
    assert len(notices) == 1
    assert "unverified" in notices[0]
    assert V2 in notices[0]
    assert _sha(server.files[package_path(V2)]) in notices[0]
    marker = json.loads((result.cli_path.parent / MARKER).read_text())
    assert marker["verified"] is False


def test_latest_installs_unverified_with_a_notice(server: DownloadServer, tmp_path: Path) -> None:
    server.files["/install"] = (
        f'DOWNLOAD_URL="https://downloads.cursor.com/lab/{V2}/${{OS}}/${{ARCH}}/x"\n'.encode()
    )
    serve_package(server, V2)
    notices = Notices()
    assert _install(server, tmp_path, "latest", notices=notices).cli_version == V2
    assert len(notices) == 1
    assert "unverified" in notices[0]


def test_an_explicit_sha256_verifies_any_version_and_wins_over_the_pin(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V2)
    good = _sha(server.files[package_path(V2)])
    with pytest.raises(InstallError, match="expected " + "0" * 64):
        _install(server, tmp_path, V2, sha256="0" * 64)
    notices = Notices()
    pins = {V2: {("linux", "x64"): "1" * 64}}  # a wrong pin: the explicit hash wins
    assert not _install(server, tmp_path, V2, sha256=good.upper(), pins=pins,
                        notices=notices).cache_hit  # fmt: skip
    assert notices == []


@pytest.mark.parametrize("value", ["abc", "g" * 64, "0" * 63, "sha256-p5cmxuZEUg6ZOXC+TEV3Wm="])
def test_an_sha256_that_is_not_64_hex_digits_is_a_usage_error_before_any_request(
    server: DownloadServer, tmp_path: Path, value: str
) -> None:
    with pytest.raises(UsageError, match="--sha256"):
        _install(server, tmp_path, V2, sha256=value)
    assert server.requests == []


# -- the cache re-verifies its marker ----------------------------------------------------------


def test_a_cached_install_whose_files_changed_is_reinstalled(
    server: DownloadServer, tmp_path: Path
) -> None:
    """A poisoned tool cache: the marker still says complete, the launcher was swapped."""
    serve_package(server, V1)
    pins = _pin(server)
    first = _install(server, tmp_path, pins=pins)
    first.cli_path.write_bytes(b"#!/bin/sh\necho owned\n")
    again = _install(server, tmp_path, pins=pins)
    assert not again.cache_hit
    assert len(server.requests) == 2
    assert first.cli_path.read_bytes() == fake_cli_script(V1)


@pytest.mark.parametrize(
    "change",
    ["add a file", "remove a file", "flip an executable bit", "retarget a link"],
)
def test_any_change_to_the_cached_tree_is_noticed(
    server: DownloadServer, tmp_path: Path, change: str
) -> None:
    serve_package(server, V1)
    root = _install(server, tmp_path).cli_path.parent
    if change == "add a file":
        (root / "node_modules" / "pkg" / "extra.js").write_text("evil()\n")
    elif change == "remove a file":
        (root / "index.js").unlink()
    elif change == "flip an executable bit":
        (root / "index.js").chmod(0o755)
    else:
        link = root / "node_modules" / ".bin" / "pkg"
        link.unlink()
        link.symlink_to("../../index.js")
    assert not _install(server, tmp_path).cache_hit


def test_a_cached_install_from_other_bytes_is_not_a_hit_once_a_hash_is_expected(
    server: DownloadServer, tmp_path: Path
) -> None:
    """Installed unverified from a tampered archive, then pinned: the marker's archive hash is
    not the pinned one, so the cache is not trusted and the genuine package replaces it."""
    serve_package(server, V1)
    pins = _pin(server)
    genuine = server.files[package_path(V1)]
    server.files[package_path(V1)] = _tampered(V1)
    first = _install(server, tmp_path)  # no hash expected: installed, with a notice
    assert _install(server, tmp_path).cache_hit
    server.files[package_path(V1)] = genuine
    again = _install(server, tmp_path, pins=pins)
    assert not again.cache_hit
    assert first.cli_path.read_bytes() == fake_cli_script(V1)
    assert _install(server, tmp_path, pins=pins).cache_hit  # the same bytes: a hit


def test_two_jobs_replacing_a_stale_install_at_once_both_end_with_the_verified_one(
    server: DownloadServer, tmp_path: Path
) -> None:
    """Matrix jobs sharing a tool cache whose install is of other bytes: each replaces it; the
    one that comes second uses the first's complete install and never removes it."""
    serve_package(server, V1)
    pins = _pin(server)
    genuine = server.files[package_path(V1)]
    server.files[package_path(V1)] = _tampered(V1)
    _install(server, tmp_path)  # the stale install, unverified
    server.files[package_path(V1)] = genuine
    server.plan = ["slow"]
    server.slow_seconds = 10
    with ThreadPoolExecutor(1) as pool:
        second = pool.submit(_install, server, tmp_path, pins=pins)
        assert server.wait_for_requests(2)
        first = _install(server, tmp_path, pins=pins)
        inode = first.cli_path.stat().st_ino
        server.release_slow()
        late = second.result(timeout=20)
    assert late.cli_path == first.cli_path
    assert late.cli_path.stat().st_ino == inode  # the first job's install was left alone
    assert first.cli_path.read_bytes() == fake_cli_script(V1)
    assert _versions(tmp_path) == [V1]  # no staging or replaced install left behind


def test_a_marker_without_the_tree_digest_is_not_a_hit(
    server: DownloadServer, tmp_path: Path
) -> None:
    """A marker an older release wrote (no digest) is not trusted: the install is redone."""
    serve_package(server, V1)
    root = _install(server, tmp_path).cli_path.parent
    marker = json.loads((root / MARKER).read_text())
    (root / MARKER).write_text(json.dumps({k: marker[k] for k in ("version", "os", "arch")}))
    assert not _install(server, tmp_path).cache_hit


# -- the command -------------------------------------------------------------------------------


def test_the_command_takes_the_sha256_from_the_environment_and_notices_unverified_installs(
    server: DownloadServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if detect_platform() != ("linux", "x64"):
        pytest.skip("the served package is for linux/x64")
    serve_package(server, V2)
    monkeypatch.setenv("CURSOR_CLI_VERSION", V2)
    monkeypatch.setenv("CURSOR_CLI_DOWNLOAD_BASE_URL", server.url)
    monkeypatch.setenv("CURSOR_CLI_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out.txt"
    assert main(["install", "--output-file", str(out)]) == 0
    assert "::notice title=Cursor CLI not verified::" in capsys.readouterr().out
    monkeypatch.setenv("CURSOR_CLI_SHA256", "f" * 64)
    assert main(["install", "--output-file", str(out)]) == 3  # the cached one is unverified
    printed = capsys.readouterr().out
    assert printed.count("::error") == 1
    assert "f" * 64 in printed
    assert parse_output_file(out.read_text())["cache-hit"] == "false"  # from the first run
