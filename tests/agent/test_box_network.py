"""The network wall around the real box, end to end: the helper as root, the agent a shell
script in its box, servers on the runner's 127.0.0.1 (tests/agent/test_net_wall.py attacks the
wall itself; this proves the box puts every agent process behind it and reports it)."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.box import Box
from tests.support.box import run as _run
from tests.support.box import seen as _seen
from tests.support.netbox import TcpServer, http_host, loopback_name, servers

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="the box runs as root on Linux (CI here is root)",
)

NAME = "caa-box-net-allowed.example"


@pytest.fixture
def hosts_name() -> Iterator[str]:
    with loopback_name(NAME) as name:
        yield name


def _fetch(target: str, port: int, host: str) -> str:
    """Shell that asks ``target:port`` for / over HTTP with bash's /dev/tcp (no curl needed)."""
    return (f"bash -c 'exec 3<>/dev/tcp/{target}/{port} && printf \"GET / HTTP/1.1\\r\\nHost: "
            f"{host}\\r\\nConnection: close\\r\\n\\r\\n\" >&3 && timeout 5 cat <&3' ")


def test_only_the_allowed_name_gets_through_and_the_summary_says_what_was_refused(
    box: Box, capsys: pytest.CaptureFixture[str], hosts_name: str
) -> None:
    with servers(http_host, http_host) as (allowed, other):
        body = (f"{_fetch(hosts_name, allowed.port, hosts_name)} > $SEEN/allowed 2>&1; "
                f"{_fetch('127.0.0.1', other.port, '127.0.0.1')} > $SEEN/literal 2>&1; "
                f"{_fetch('localhost', other.port, 'localhost')} > $SEEN/localhost 2>&1; "
                f"getent hosts secret-data.example.test > $SEEN/dns 2>&1; true")
        out = _run(box, capsys, body, "--allowed-domains", f"{hosts_name}:{allowed.port}")
        assert out["conclusion"] == "success", out["log"]
        assert f"host={hosts_name}" in _seen(box, "allowed")
        assert "host=" not in _seen(box, "literal")
        assert "host=" not in _seen(box, "localhost")
        assert _seen(box, "dns").strip() == ""
        assert other.connections == 0
        assert allowed.connections == 1
    assert int(out["network-denials"]) >= 1
    assert "## Network" in out["summary"] or "Network" in out["summary"]
    assert hosts_name in out["summary"]
    # The first refusal came live from the box's root side (its event file), one warning per
    # refused destination after the run (its report, through the box's status).
    assert "Network: refused " in out["log"], out["log"]
    assert "::warning title=network refused::The network wall refused " in out["log"]


def test_network_open_keeps_the_runners_network_and_warns(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    server = TcpServer(http_host)
    try:
        out = _run(box, capsys, f"{_fetch('127.0.0.1', server.port, 'x')} > $SEEN/open 2>&1",
                   "--network", "open")
    finally:
        server.close()
    assert out["conclusion"] == "success", out["log"]
    assert "host=x" in _seen(box, "open")
    assert "--network is open" in out["log"] or "network is open" in out["log"]


def test_the_box_has_no_interface_but_its_own_loopback(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(box, capsys, "cat /proc/net/dev > $SEEN/dev; cat /etc/resolv.conf > $SEEN/resolv")
    assert out["conclusion"] == "success", out["log"]
    interfaces = [line.split(":")[0].strip() for line in _seen(box, "dev").splitlines()[2:]]
    assert interfaces == ["lo"]
    assert "nameserver 127." in _seen(box, "resolv")
    assert json.loads(json.dumps(out["network-denials"])) is not None


def test_the_hosts_unix_sockets_under_run_are_out_of_reach(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """A network namespace does not cover unix sockets on the file system, and connect()
    needs no write to it: /run, where the host's services keep theirs, is empty in the box."""
    path = Path(f"/run/caa-test-{os.getpid()}.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        path.chmod(0o777)
        server.listen(1)
        server.settimeout(0.1)
        probe = (f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n"
                 f"    s.connect('{path}'); print('connected')\nexcept OSError as e: print(e)\n")
        (box.base / "probe.py").write_text(probe)
        out = _run(box, capsys, f"python3 {box.base / 'probe.py'} > $SEEN/unix 2>&1")
        assert out["conclusion"] == "success", out["log"]
        assert "connected" not in _seen(box, "unix")
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()
        path.unlink(missing_ok=True)
