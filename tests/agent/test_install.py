"""Installing the Cursor CLI over real HTTP from a local server, with real tar.gz packages."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cursor_agent_action.agent.install.download import RetryPolicy
from cursor_agent_action.agent.install.installer import (
    MARKER,
    InstallResult,
    default_cache_dir,
    detect_platform,
    install_cli,
)
from cursor_agent_action.agent.install.versions import DEFAULT_CLI_VERSION
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


@pytest.fixture
def server() -> Iterator[DownloadServer]:
    with DownloadServer() as srv:
        yield srv


class Sleeps:
    """Records backoff waits instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


def _install(
    server: DownloadServer,
    tmp_path: Path,
    version: str = V1,
    *,
    sleeps: Sleeps | None = None,
    attempts: int = 3,
    timeout: float = 5.0,
) -> InstallResult:
    return install_cli(
        version,
        base_url=server.url,
        latest_url=f"{server.url}/install",
        cache_dir=tmp_path / "cache",
        bin_dir=tmp_path / "bin",
        target=("linux", "x64"),
        retry=RetryPolicy(attempts=attempts, base_delay=0.5, sleep=sleeps or Sleeps()),
        timeout=timeout,
    )


def _run(path: Path) -> str:
    done = subprocess.run([str(path)], capture_output=True, text=True, check=True, timeout=10)
    return done.stdout


def _leftovers(tmp_path: Path) -> list[str]:
    versions = tmp_path / "cache" / "versions"
    return sorted(p.name for p in versions.iterdir()) if versions.exists() else []


# -- success and cache -------------------------------------------------------------------------


def test_installs_the_whole_package_and_links_both_names(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    result = _install(server, tmp_path)
    version_dir = tmp_path / "cache" / "versions" / V1
    assert result == InstallResult(version_dir / "cursor-agent", V1, cache_hit=False)
    assert server.requests == [package_path(V1)]
    assert _run(result.cli_path).strip() == V1
    assert (version_dir / "node" / "bin" / "node").is_file()
    assert (version_dir / "node_modules" / ".bin" / "pkg").resolve() == (
        version_dir / "node_modules" / "pkg" / "cli.js"
    )
    for name in ("cursor-agent", "agent"):
        link = tmp_path / "bin" / name
        assert link.is_symlink()
        assert link.resolve() == result.cli_path.resolve()
        assert _run(link).strip() == V1
    assert (version_dir / MARKER).is_file()
    assert _leftovers(tmp_path) == [V1]  # no staging directory left behind


def test_second_install_is_a_cache_hit_without_network(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    first = _install(server, tmp_path)
    (tmp_path / "bin" / "agent").unlink()  # e.g. a fresh runner with a restored cache
    server.default_mode = "503"  # the network is not consulted at all
    second = _install(server, tmp_path)
    assert second == InstallResult(first.cli_path, V1, cache_hit=True)
    assert len(server.requests) == 1
    assert (tmp_path / "bin" / "agent").resolve() == first.cli_path.resolve()


def test_an_interrupted_install_is_never_a_cache_hit(
    server: DownloadServer, tmp_path: Path
) -> None:
    version_dir = tmp_path / "cache" / "versions" / V1
    version_dir.mkdir(parents=True)
    (version_dir / "cursor-agent").write_bytes(b"#!/bin/sh\necho half\n")
    os.chmod(version_dir / "cursor-agent", 0o700)  # complete-looking, but no marker
    serve_package(server, V1)
    result = _install(server, tmp_path)
    assert not result.cache_hit
    assert _run(result.cli_path).strip() == V1
    assert (version_dir / "node").is_dir()


def test_a_cached_install_for_another_platform_is_replaced(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    _install(server, tmp_path)
    marker = tmp_path / "cache" / "versions" / V1 / MARKER
    marker.write_text(marker.read_text().replace('"x64"', '"arm64"'))
    assert not _install(server, tmp_path).cache_hit
    assert len(server.requests) == 2


def test_a_flat_package_without_top_level_directory_works(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1, package_entries(V1, prefix=""))
    result = _install(server, tmp_path)
    assert _run(result.cli_path).strip() == V1
    assert (result.cli_path.parent / "node").is_dir()


def test_relative_cache_and_bin_dirs_give_working_links(
    server: DownloadServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    serve_package(server, V1)
    monkeypatch.chdir(tmp_path)
    result = install_cli(
        V1,
        base_url=server.url,
        cache_dir=Path("cache"),
        bin_dir=Path("bin"),
        target=("linux", "x64"),
    )
    assert result.cli_path.is_absolute()
    monkeypatch.chdir("/")
    assert _run(tmp_path / "bin" / "agent").strip() == V1


def test_stale_staging_dirs_are_removed_recent_ones_kept(
    server: DownloadServer, tmp_path: Path
) -> None:
    versions = tmp_path / "cache" / "versions"
    old, recent = versions / ".tmp-old-abc", versions / ".tmp-recent-abc"
    for path in (old, recent):
        (path / "unpacked").mkdir(parents=True)
    day_and_more = time.time() - 25 * 3600
    os.utime(old, (day_and_more, day_and_more))
    serve_package(server, V1)
    _install(server, tmp_path)
    assert _leftovers(tmp_path) == sorted([".tmp-recent-abc", V1])


def test_default_cache_dir() -> None:
    assert default_cache_dir({"CURSOR_CLI_CACHE_DIR": "/c", "RUNNER_TOOL_CACHE": "/t"}) == Path(
        "/c"
    )
    assert default_cache_dir({"RUNNER_TOOL_CACHE": "/t"}) == Path("/t/cursor-agent")
    assert default_cache_dir({}) == Path.home() / ".cache" / "cursor-agent-action"


def test_concurrent_installs_of_one_version_both_succeed(
    server: DownloadServer, tmp_path: Path
) -> None:
    """A job that loses the race to place the package uses the winner's complete install."""
    serve_package(server, V1)
    server.plan = ["slow"]
    server.slow_seconds = 10
    with ThreadPoolExecutor(1) as pool:
        loser = pool.submit(_install, server, tmp_path, timeout=20)
        assert server.wait_for_requests(1)
        winner = _install(server, tmp_path)
        inode = winner.cli_path.stat().st_ino
        server.release_slow()
        late = loser.result(timeout=20)
    assert late.cli_path == winner.cli_path
    assert late.cli_path.stat().st_ino == inode  # the winner's install was left alone
    assert not late.cache_hit
    assert not winner.cache_hit
    assert _run(late.cli_path).strip() == V1
    assert _leftovers(tmp_path) == [V1]


def test_installing_another_version_repoints_the_links(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    serve_package(server, V2)
    _install(server, tmp_path, V1)
    second = _install(server, tmp_path, V2)
    assert _run(tmp_path / "bin" / "cursor-agent").strip() == V2
    assert (tmp_path / "bin" / "agent").resolve() == second.cli_path.resolve()
    assert _leftovers(tmp_path) == sorted([V1, V2])


# -- retries -----------------------------------------------------------------------------------


def test_5xx_is_retried_with_growing_jittered_backoff(
    server: DownloadServer, tmp_path: Path, sleeps: Sleeps
) -> None:
    serve_package(server, V1)
    server.plan = ["503", "500", "429"]
    result = _install(server, tmp_path, sleeps=sleeps, attempts=4)
    assert not result.cache_hit
    assert len(server.requests) == 4
    assert len(sleeps.waits) == 3
    for number, wait in enumerate(sleeps.waits, start=1):
        full = 0.5 * 2 ** (number - 1)
        assert full / 2 <= wait <= full


def test_persistent_5xx_fails_after_bounded_attempts(
    server: DownloadServer, tmp_path: Path, sleeps: Sleeps
) -> None:
    serve_package(server, V1)
    server.default_mode = "503"
    with pytest.raises(InstallError) as info:
        _install(server, tmp_path, sleeps=sleeps, attempts=3)
    assert len(server.requests) == 3
    assert "after 3 attempt(s)" in info.value.message
    assert "HTTP 503" in info.value.message
    assert server.url + package_path(V1) in info.value.message
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "bin").exists()


def test_total_time_budget_bounds_retries(server: DownloadServer, tmp_path: Path) -> None:
    serve_package(server, V1)
    server.default_mode = "503"
    with pytest.raises(InstallError, match="after 1 attempt"):
        install_cli(
            V1,
            base_url=server.url,
            cache_dir=tmp_path / "cache",
            bin_dir=tmp_path / "bin",
            target=("linux", "x64"),
            retry=RetryPolicy(attempts=10, total_seconds=0.0, sleep=Sleeps()),
        )
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", ["403", "404"])
def test_403_and_404_fail_at_once_naming_version_platform_url_and_fix(
    server: DownloadServer, tmp_path: Path, status: str
) -> None:
    serve_package(server, V1)
    server.default_mode = status
    with pytest.raises(InstallError) as info:
        _install(server, tmp_path)
    message = info.value.message
    assert len(server.requests) == 1
    assert f"HTTP {status}" in message
    assert V1 in message
    assert "linux/x64" in message
    assert server.url + package_path(V1) in message
    assert "version exists" in info.value.hint
    assert DEFAULT_CLI_VERSION in info.value.hint


def test_a_missing_version_is_a_404(server: DownloadServer, tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="HTTP 404"):
        _install(server, tmp_path, V2)


def test_truncated_download_is_retried_then_succeeds(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    server.plan = ["truncated"]
    assert _run(_install(server, tmp_path).cli_path).strip() == V1
    assert len(server.requests) == 2


def test_persistently_truncated_download_is_an_error(
    server: DownloadServer, tmp_path: Path
) -> None:
    serve_package(server, V1)
    server.default_mode = "truncated"
    with pytest.raises(InstallError, match="truncated"):
        _install(server, tmp_path)
    assert len(server.requests) == 3
    assert _leftovers(tmp_path) == []


def test_a_slow_server_times_out_and_is_retried(server: DownloadServer, tmp_path: Path) -> None:
    serve_package(server, V1)
    server.plan = ["slow"]
    result = _install(server, tmp_path, timeout=0.3)
    assert _run(result.cli_path).strip() == V1
    assert len(server.requests) == 2


def test_dropped_connections_are_retried(server: DownloadServer, tmp_path: Path) -> None:
    serve_package(server, V1)
    server.plan = ["drop", "drop"]
    assert not _install(server, tmp_path).cache_hit
    assert len(server.requests) == 3


def test_connection_refused_fails_after_retries(tmp_path: Path, sleeps: Sleeps) -> None:
    with DownloadServer() as gone:
        url = gone.url
    with pytest.raises(InstallError, match="after 2 attempt"):
        install_cli(
            V1,
            base_url=url,
            cache_dir=tmp_path / "cache",
            bin_dir=tmp_path / "bin",
            target=("linux", "x64"),
            retry=RetryPolicy(attempts=2, sleep=sleeps),
        )
    assert len(sleeps.waits) == 1


# -- bad archives ------------------------------------------------------------------------------


def test_garbage_is_a_bad_archive_not_retried(server: DownloadServer, tmp_path: Path) -> None:
    serve_package(server, V1)
    server.default_mode = "garbage"
    with pytest.raises(InstallError, match=r"not a valid Cursor CLI package.*tar\.gz"):
        _install(server, tmp_path)
    assert len(server.requests) == 1
    assert _leftovers(tmp_path) == []


def _with(*extra: Entry) -> list[Entry]:
    return [*package_entries(V1), *extra]


BAD_PACKAGES = {
    "traversal": (_with(Entry("dist-package/../../evil", b"x")), "outside the package"),
    "absolute": (_with(Entry("/tmp/cursor-agent-action-evil", b"x")), "outside the package"),
    "escaping symlink": (
        _with(Entry("dist-package/up", kind="symlink", target="../../..")),
        "escapes",
    ),
    "absolute symlink": (
        _with(Entry("dist-package/etc", kind="symlink", target="/etc")),
        "escapes",
    ),
    "member behind a symlink": (
        _with(
            Entry("dist-package/here", kind="symlink", target="."),
            Entry("dist-package/here/x", b"x"),
        ),
        "behind a symbolic link",
    ),
    "escaping hard link": (
        _with(Entry("dist-package/passwd", kind="hardlink", target="../etc/passwd")),
        "escapes",
    ),
    "fifo": (_with(Entry("dist-package/pipe", kind="fifo")), "device or pipe"),
    "no cursor-agent": (
        [e for e in package_entries(V1) if not e.name.endswith("cursor-agent")],
        "no executable cursor-agent",
    ),
    "cursor-agent not executable": (
        [
            Entry(e.name, e.data, 0o644) if e.name.endswith("cursor-agent") else e
            for e in package_entries(V1)
        ],
        "no executable cursor-agent",
    ),
    "empty": ([], "no executable cursor-agent"),
    "two top-level directories": (
        [*package_entries(V1), Entry("other/cursor-agent", fake_cli_script(V1), 0o755)],
        "no executable cursor-agent",
    ),
}


@pytest.mark.parametrize("case", list(BAD_PACKAGES))
def test_bad_packages_are_refused_and_nothing_is_installed(
    server: DownloadServer, tmp_path: Path, case: str
) -> None:
    entries, problem = BAD_PACKAGES[case]
    serve_package(server, V1, entries)
    with pytest.raises(InstallError, match="not a valid Cursor CLI package") as info:
        _install(server, tmp_path)
    assert problem in info.value.message
    assert _leftovers(tmp_path) == []
    assert not (tmp_path / "evil").exists()
    assert not Path("/tmp/cursor-agent-action-evil").exists()
    assert not (tmp_path / "bin").exists()


def test_a_symlink_chain_escaping_is_refused(server: DownloadServer, tmp_path: Path) -> None:
    """Each link looks contained on its own; together they resolve outside the package."""
    entries = _with(
        Entry("dist-package/a", kind="symlink", target="."),
        Entry("dist-package/b", kind="symlink", target="a/../.."),
    )
    serve_package(server, V1, entries)
    with pytest.raises(InstallError, match=r"unsafe member.*outside the destination"):
        _install(server, tmp_path)
    assert _leftovers(tmp_path) == []


# -- latest ----------------------------------------------------------------------------------


def _script(version: str) -> bytes:
    return (
        "#!/usr/bin/env bash\nset -euo pipefail\n"
        f'DOWNLOAD_URL="https://downloads.cursor.com/lab/{version}/${{OS}}/${{ARCH}}/'
        'agent-cli-package.tar.gz"\n'
    ).encode()


def test_latest_is_the_version_in_the_vendor_install_script(
    server: DownloadServer, tmp_path: Path
) -> None:
    server.files["/install"] = _script(V2)
    serve_package(server, V2)
    result = _install(server, tmp_path, "latest")
    assert result.cli_version == V2
    assert server.requests == ["/install", package_path(V2)]
    assert _run(result.cli_path).strip() == V2


def test_latest_resolution_is_retried_and_case_insensitive(
    server: DownloadServer, tmp_path: Path
) -> None:
    server.files["/install"] = _script(V2)
    serve_package(server, V2)
    server.plan = ["503"]
    assert _install(server, tmp_path, " Latest ").cli_version == V2


def test_latest_without_a_version_in_the_script_is_an_error(
    server: DownloadServer, tmp_path: Path
) -> None:
    server.files["/install"] = b"#!/bin/sh\necho moved\n"
    with pytest.raises(InstallError, match="no '/lab/<version>/'") as info:
        _install(server, tmp_path, "latest")
    assert "--version" in info.value.hint


def test_latest_script_missing_is_an_error(server: DownloadServer, tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="HTTP 404") as info:
        _install(server, tmp_path, "latest")
    assert "--latest-url" in info.value.hint


# -- input and platform ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("system", "machine", "expected"),
    [
        ("Linux", "x86_64", ("linux", "x64")),
        ("Linux", "aarch64", ("linux", "arm64")),
        ("Darwin", "arm64", ("darwin", "arm64")),
        ("Darwin", "x86_64", ("darwin", "x64")),
    ],
)
def test_platform_names_follow_the_vendor(
    system: str, machine: str, expected: tuple[str, str]
) -> None:
    assert detect_platform(system, machine) == expected


def test_windows_is_refused_clearly() -> None:
    with pytest.raises(InstallError, match="Windows runners are not supported") as info:
        detect_platform("Windows", "AMD64")
    assert "ubuntu-latest" in info.value.hint


def test_unknown_architecture_is_refused() -> None:
    with pytest.raises(InstallError, match="linux/riscv64"):
        detect_platform("Linux", "riscv64")


@pytest.mark.parametrize("version", ["", "1.0", "../../etc", "2026.09.28-64d2043/../x", "v2026"])
def test_invalid_versions_are_usage_errors_before_any_request(
    server: DownloadServer, tmp_path: Path, version: str
) -> None:
    with pytest.raises(UsageError, match="invalid Cursor CLI version"):
        _install(server, tmp_path, version)
    assert server.requests == []


@pytest.mark.parametrize("url", ["http://downloads.example.com", "ftp://x", "downloads.cursor.com"])
def test_base_url_must_be_https_except_on_localhost(tmp_path: Path, url: str) -> None:
    with pytest.raises(UsageError, match="must be an https"):
        install_cli(V1, base_url=url, cache_dir=tmp_path, bin_dir=tmp_path / "bin")


# -- command ---------------------------------------------------------------------------------


def test_command_outputs_path_version_and_cache_hit(
    server: DownloadServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if detect_platform() != ("linux", "x64"):
        pytest.skip("the served package is for linux/x64")
    serve_package(server, V2)
    monkeypatch.setenv("CURSOR_CLI_VERSION", V2)
    monkeypatch.setenv("CURSOR_CLI_DOWNLOAD_BASE_URL", server.url)
    monkeypatch.setenv("RUNNER_TOOL_CACHE", str(tmp_path / "toolcache"))
    out = tmp_path / "out.txt"
    assert main(["install", "--output-file", str(out)]) == 0
    cli_path = tmp_path / "toolcache" / "cursor-agent" / "versions" / V2 / "cursor-agent"
    assert parse_output_file(out.read_text()) == {
        "cli-path": str(cli_path),
        "cli-version": V2,
        "cache-hit": "false",
    }
    assert (tmp_path / "toolcache" / "cursor-agent" / "bin" / "agent").resolve() == cli_path
    out.unlink()
    assert main(["install", "--output-file", str(out), "--bin-dir", str(tmp_path / "b")]) == 0
    assert parse_output_file(out.read_text())["cache-hit"] == "true"
    assert (tmp_path / "b" / "cursor-agent").resolve() == cli_path


def test_command_failure_is_one_error_line_and_exit_3(
    server: DownloadServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.default_mode = "404"
    code = main(
        ["install", "--version", V1, "--base-url", server.url, "--cache-dir", str(tmp_path)]
    )
    assert code == 3
    out = capsys.readouterr().out
    assert out.count("::error") == 1
    assert "::error title=CLI install failed::" in out
    assert "HTTP 404" in out
    assert "Fix: " in out


def test_archive_builder_makes_what_the_tests_assume() -> None:
    """Guards the fixture itself: a real gzip'd tar with a node dir and an executable."""
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(make_archive(package_entries(V1))), mode="r:gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert members["dist-package/cursor-agent"].mode & 0o111
    assert members["dist-package/node"].isdir()
    assert members["dist-package/node_modules/.bin/pkg"].issym()


# -- Pythons without tarfile's data filter (3.10.0-3.10.11, 3.11.0-3.11.3) ----------------------

SYSTEM_PYTHON = Path("/usr/bin/python3")
HOSTILE_MODES = [
    Entry("dist-package/setuid", b"x", mode=0o4755),
    Entry("dist-package/setgid", b"x", mode=0o2755),
    Entry("dist-package/world-writable", b"x", mode=0o666),
    Entry("dist-package/group-writable-exe", b"x", mode=0o775),
    Entry("dist-package/others-exe-only", b"x", mode=0o011),
    Entry("dist-package/sticky-dir", kind="dir", mode=0o1777),
    Entry("dist-package/sticky-dir/hard", kind="hardlink", target="dist-package/setuid",
          mode=0o6775),
]


def _modes(root: Path) -> dict[str, str]:
    """Each path under ``root``: its kind and permission bits (links: their target)."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        info = path.lstat()
        found[rel] = (f"L {os.readlink(path)}" if path.is_symlink()
                      else f"{'D' if path.is_dir() else 'F'} {info.st_mode & 0o7777:o}")
    return found


@pytest.fixture
def no_data_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """This Python as one without ``filter="data"``: our own extraction runs."""
    from cursor_agent_action.agent.install import archive

    monkeypatch.setattr(archive, "HAS_DATA_FILTER", False)


@pytest.mark.usefixtures("no_data_filter")
@pytest.mark.parametrize("case", list(BAD_PACKAGES))
def test_without_the_data_filter_bad_packages_are_refused_alike(
    server: DownloadServer, tmp_path: Path, case: str
) -> None:
    """The same refusals, in the same words, where tarfile cannot filter (before: every install
    on such a Python failed with 'this Python cannot unpack archives safely')."""
    entries, problem = BAD_PACKAGES[case]
    serve_package(server, V1, entries)
    with pytest.raises(InstallError, match="not a valid Cursor CLI package") as info:
        _install(server, tmp_path)
    assert problem in info.value.message
    assert _leftovers(tmp_path) == []
    assert not Path("/tmp/cursor-agent-action-evil").exists()


HOSTILE_LINKS = {
    "symlink chain": (Entry("dist-package/a", kind="symlink", target="."),
                      Entry("dist-package/b", kind="symlink", target="a/../..")),
    "link through a link": (Entry("dist-package/up", kind="symlink", target="node"),
                            Entry("dist-package/node/x", kind="symlink", target="../../..")),
    "hard link to a link": (Entry("dist-package/l", kind="symlink", target="index.js"),
                            Entry("dist-package/h", kind="hardlink", target="dist-package/l")),
    "hard link to a later name": (Entry("dist-package/h", kind="hardlink",
                                        target="dist-package/zz"),),
}


@pytest.mark.usefixtures("no_data_filter")
@pytest.mark.parametrize("case", list(HOSTILE_LINKS))
def test_without_the_data_filter_links_leading_out_or_to_links_are_refused(
    server: DownloadServer, tmp_path: Path, case: str
) -> None:
    serve_package(server, V1, _with(*HOSTILE_LINKS[case]))
    with pytest.raises(InstallError, match=r"not a valid Cursor CLI package.*(unsafe member|"
                                           r"outside|escapes|behind)"):
        _install(server, tmp_path)
    assert _leftovers(tmp_path) == []


def test_modes_come_out_as_the_data_filter_makes_them(
    server: DownloadServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Set-user-ID, set-group-ID, sticky, group and world write bits: stripped by our extraction
    exactly as by ``filter="data"`` (the same tree, path for path, mode for mode)."""
    from cursor_agent_action.agent.install import archive

    serve_package(server, V1, _with(*HOSTILE_MODES))
    trees = {}
    for filtered in (True, False):
        monkeypatch.setattr(archive, "HAS_DATA_FILTER", filtered)
        where = tmp_path / str(filtered)
        trees[filtered] = _modes(_install(server, where).cli_path.parent)
    assert trees[False] == trees[True]
    modes = trees[False]
    assert modes["setuid"] == "F 755"
    assert modes["setgid"] == "F 755"
    assert modes["world-writable"] == "F 644"
    assert modes["group-writable-exe"] == "F 755"
    assert modes["others-exe-only"] == "F 600"
    assert modes["sticky-dir"] == "D 755"
    assert not any(int(mode.split()[1], 8) & 0o7022 for mode in modes.values()
                   if not mode.startswith("L"))


def _system_python_install(server: DownloadServer, tmp_path: Path
                           ) -> subprocess.CompletedProcess[str]:
    """``install-cli`` run by this machine's own Python, with the helper's source and the
    venv's packages on its path (pure Python, or built for the same 3.11 ABI)."""
    import site

    import cursor_agent_action

    paths = [str(Path(cursor_agent_action.__file__).parents[1]), *site.getsitepackages()]
    code = ("import sys; sys.path[:0] = " + repr(paths) + "; "
            "from cursor_agent_action.cli import main; sys.exit(main(sys.argv[1:]))")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    return subprocess.run(
        [str(SYSTEM_PYTHON), "-I", "-c", code, "install", "--version", V1, "--base-url",
         server.url, "--cache-dir", str(tmp_path / "cache"), "--bin-dir", str(tmp_path / "bin")],
        capture_output=True, text=True, timeout=120, check=False, env=env)


def _system_python_lacks_the_filter() -> bool:
    if not SYSTEM_PYTHON.exists():
        return False
    done = subprocess.run([str(SYSTEM_PYTHON), "-I", "-c", "import sys, tarfile; print("
                           "sys.version_info[:2] == (3, 11) and not hasattr(tarfile, "
                           "'data_filter'))"], capture_output=True, text=True, timeout=30,
                          check=False)
    return done.stdout.strip() == "True"


needs_unfiltered_system_python = pytest.mark.skipif(
    not _system_python_lacks_the_filter(),
    reason="needs /usr/bin/python3 a 3.11 without tarfile's data filter (Debian 12's 3.11.2)")


@needs_unfiltered_system_python
def test_the_cli_installs_under_debian_12_s_own_python(
    server: DownloadServer, tmp_path: Path
) -> None:
    """The report: on Debian 12's 3.11.2 the install stopped with 'this Python cannot unpack
    archives safely'. Now it installs the package the tests serve, and refuses a hostile one."""
    serve_package(server, V1)
    done = _system_python_install(server, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _run(tmp_path / "bin" / "cursor-agent").strip() == V1
    assert (tmp_path / "cache" / "versions" / V1 / "node_modules" / ".bin" / "pkg").resolve() == (
        tmp_path / "cache" / "versions" / V1 / "node_modules" / "pkg" / "cli.js")
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    serve_package(server, V1, _with(*HOSTILE_LINKS["symlink chain"]))
    done = _system_python_install(server, hostile)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "outside the destination" in done.stdout
    assert not (hostile / "bin").exists()
