"""The runner's own proxy, used by the relay (a real forward proxy, proxy.py, on the runner's
loopback; Apache with Basic authentication where the proxy wants credentials): plain HTTP goes
to it as the relay's request in absolute form (through the relay's own ``CONNECT`` when the
proxy takes credentials, which go on that CONNECT only), TLS through ``CONNECT``;
``NO_PROXY`` names go direct; the agent's own ``CONNECT`` and absolute form are still refused,
and a name the runner resolves to a refused address never reaches the proxy."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h11
import pytest

from cursor_agent_action.agent.contain.box.contract import BoxSpec
from cursor_agent_action.agent.contain.box.net import plainhttp
from cursor_agent_action.agent.contain.box.net.policy import build_policy
from cursor_agent_action.agent.contain.box.net.upstream import Proxy, RunnerProxy, forward_prefix
from cursor_agent_action.agent.contain.isolation import Isolation
from cursor_agent_action.agent.launch.invocation import AgentSite
from cursor_agent_action.agent.launch.run_options import add_run_options, options_from_args
from tests.support.apache_proxy import MISSING, auth_proxy
from tests.support.netbox import (
    Emit,
    connect_by_name,
    echo,
    fixed_resolver,
    http_host,
    run_boxed,
    self_signed,
    servers,
)

ROOT = pytest.mark.skipif(os.geteuid() != 0 or not sys.platform.startswith("linux"),
                          reason="network namespaces: root on Linux (CI here is root)")
NAME = "localhost"  # what the real proxy resolves by itself (to the test's servers)


def test_the_runners_proxy_variables_as_curl_reads_them() -> None:
    proxy = RunnerProxy.from_environ({
        "HTTPS_PROXY": "http://upper.example:1", "https_proxy": "http://u%40x:p@low.example:3128",
        "HTTP_PROXY": "proxy.example:8080", "NO_PROXY": ".corp.example, exact.example:443,"})
    assert proxy is not None
    assert proxy.https == Proxy("low.example", 3128, "Basic dUB4OnA=")  # lower case wins
    assert proxy.http == Proxy("proxy.example", 8080)
    assert proxy.direct("git.corp.example")
    assert proxy.direct("exact.example")
    assert not proxy.direct("api2.cursor.sh")
    assert RunnerProxy.from_json(proxy.to_json()) == proxy
    assert RunnerProxy.from_environ({"NO_PROXY": "*"}) is None
    assert RunnerProxy.from_environ({"HTTPS_PROXY": "socks5://s.example:1080"}) is None
    assert RunnerProxy.from_environ({"ALL_PROXY": "http://all.example"}) == RunnerProxy(
        Proxy("all.example", 80), Proxy("all.example", 80))
    assert forward_prefix("a.example", 80) == b"http://a.example"
    assert forward_prefix("a.example", 8080) == b"http://a.example:8080"


@contextlib.contextmanager
def real_proxy(tmp_path: Path) -> Iterator[int]:
    """proxy.py on the runner's 127.0.0.1; its port."""
    port_file = tmp_path / "proxy-port"
    process = subprocess.Popen(
        [sys.executable, "-I", "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0",
         "--port-file", str(port_file), "--num-workers", "1", "--num-acceptors", "1",
         "--threaded", "--log-level", "ERROR"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        time.sleep(0.3)  # the port file comes just before the accept loop
        yield int(port_file.read_text())
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait(10)


def _policy(lines: list[str], proxy_port: int, no_proxy: str = "") -> Any:
    policy = build_policy(lines)
    runner = RunnerProxy.from_environ({"HTTPS_PROXY": f"http://127.0.0.1:{proxy_port}",
                                       "HTTP_PROXY": f"http://127.0.0.1:{proxy_port}",
                                       "NO_PROXY": no_proxy})
    return type(policy)(policy.rules, policy.unreachable, runner)


def _get(port: int, request: bytes) -> str:
    with connect_by_name(NAME, port) as sock:
        sock.settimeout(10)
        sock.sendall(request)
        data = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                data += chunk
        return data.decode("latin-1")


@ROOT
def test_behind_the_runners_proxy_http_and_tls_reach_their_servers(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, NAME)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)

    def tls_echo(conn: socket.socket, server: Any) -> None:
        with server_context.wrap_socket(conn, server_side=True) as tls:
            while data := tls.recv(65536):
                server.record(data)
                tls.sendall(data)

    with real_proxy(tmp_path) as proxy_port, servers(http_host, tls_echo) as (web, secure):
        policy = _policy([f"{NAME}:{web.port}", f"{NAME}:{secure.port}"], proxy_port)

        def client(emit: Emit) -> Any:
            plain = _get(web.port, f"GET /x HTTP/1.1\r\nHost: {NAME}:{web.port}\r\n\r\n"
                         .encode())
            context = ssl.create_default_context(cafile=str(cert))
            with connect_by_name(NAME, secure.port) as sock, context.wrap_socket(
                    sock, server_hostname=NAME) as tls:
                tls.sendall(b"over tls")
                answer = tls.recv(100).decode()
            return [plain, answer]

        run = run_boxed(policy, client, resolve=fixed_resolver({NAME: ["127.0.0.1"]}))
    plain, answer = run.result
    assert plain.startswith("HTTP/1.1 200")
    assert plain.endswith(f"host={NAME}:{web.port}")
    assert answer == "over tls"
    assert run.report.refused == ()


@ROOT
def test_the_agents_own_connect_and_absolute_form_are_refused_behind_a_proxy_too(
        tmp_path: Path) -> None:
    with real_proxy(tmp_path) as proxy_port, servers(echo) as (web,):
        policy = _policy([f"{NAME}:{web.port}"], proxy_port)

        def client(emit: Emit) -> Any:
            return [_get(web.port, f"CONNECT evil.example:443 HTTP/1.1\r\nHost: {NAME}\r\n\r\n"
                         .encode()),
                    _get(web.port, b"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example"
                         b"\r\n\r\n")]

        run = run_boxed(policy, client, resolve=fixed_resolver({NAME: ["127.0.0.1"]}))
    assert run.result == ["", ""]
    assert bytes(web.received) == b""
    [refused] = run.refused("sni-mismatch")
    assert refused.count == 2


@ROOT
def test_a_name_the_runner_resolves_to_a_refused_address_never_reaches_the_proxy(
        tmp_path: Path) -> None:
    with real_proxy(tmp_path) as proxy_port, servers(http_host) as (web,):
        policy = _policy([f"*.wild.example:{web.port}"], proxy_port)
        wild = "a.wild.example"

        def client(emit: Emit) -> Any:
            with connect_by_name(wild, web.port) as sock:
                sock.settimeout(5)
                sock.sendall(f"GET / HTTP/1.1\r\nHost: {wild}\r\n\r\n".encode())
                with contextlib.suppress(OSError):
                    return sock.recv(100).decode()
            return "reset"

        run = run_boxed(policy, client, resolve=fixed_resolver({wild: ["169.254.169.254"]}))
    assert run.result in ("", "reset")
    assert web.connections == 0
    assert run.refused("address")


@ROOT
def test_no_proxy_names_go_direct(tmp_path: Path) -> None:
    with servers(http_host) as (web,):
        policy = _policy([f"{NAME}:{web.port}"], 1, no_proxy=NAME)  # port 1: nothing there

        def client(emit: Emit) -> Any:
            return _get(web.port, f"GET / HTTP/1.1\r\nHost: {NAME}\r\n\r\n".encode())

        run = run_boxed(policy, client, resolve=fixed_resolver({NAME: ["127.0.0.1"]}))
        proxied = run_boxed(_policy([f"{NAME}:{web.port}"], 1), client,
                            resolve=fixed_resolver({NAME: ["127.0.0.1"]}))
    assert run.result.endswith(f"host={NAME}")
    assert proxied.result == ""  # through the (absent) proxy: it really is used
    assert proxied.report.allowed[0].failed == 1
    assert web.connections == 1


def test_the_walled_agent_has_no_proxy_variables_and_the_relay_gets_the_proxy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in the box is a proxy: the agent's environment loses the runner's proxy
    variables (before, they passed its allowlist and pointed its tools at a proxy the wall
    then had to read requests for); the jail's spec hands the proxy to the relay."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CURSOR_API_KEY", "k")
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "runner-temp"))
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    options = options_from_args(parser.parse_args(
        ["--prompt", "x", "--allowed-domains", "ok.example", "--agent-bin", "/bin/true"]))
    env = {"PATH": "/bin", "HTTPS_PROXY": "http://p.example:3128", "no_proxy": "x.example",
           "http_proxy": "http://p.example:3128"}
    jail = AgentSite(Isolation(contained=True), env, home=tmp_path / "home").jail(
        options, ["/bin/true"], None)
    assert jail is not None
    assert jail.spec.env == {"PATH": "/bin"}
    network = jail.spec.network
    assert network is not None
    assert network.proxy == RunnerProxy(
        Proxy("p.example", 3128), Proxy("p.example", 3128), ("x.example",))
    # and so it travels to the root side
    assert BoxSpec.from_json(jail.spec.to_json()).network == network


def _auth_policy(lines: list[str], proxy_url: str) -> Any:
    policy = build_policy(lines)
    runner = RunnerProxy.from_environ({"HTTPS_PROXY": proxy_url, "HTTP_PROXY": proxy_url})
    return type(policy)(policy.rules, policy.unreachable, runner)


@ROOT
@pytest.mark.skipif(bool(MISSING), reason=MISSING)
def test_trace_through_an_authenticated_proxy_never_echoes_its_credentials() -> None:
    """Issue 47's replay, against a real Apache forward proxy with Basic authentication and
    TraceEnable On: ``TRACE`` with ``Max-Forwards: 0``, composed by the relay with the runner
    proxy's ``Proxy-Authorization`` on it, made the proxy answer itself with the request it
    received, the user and password in it. Now TRACE and TRACK are refused and reported, and
    plain HTTP goes through the relay's own CONNECT (the only request with the credentials):
    the proxy never reads the agent's request, the far end gets no Max-Forwards."""
    with servers(http_host) as (web,), auth_proxy([web.port]) as proxy:
        policy = _auth_policy([f"{NAME}:{web.port}"], proxy.url)
        host = f"Host: {NAME}:{web.port}\r\n"

        def client(emit: Emit) -> Any:
            return [_get(web.port, f"{method} / HTTP/1.1\r\n{host}Max-Forwards: 0\r\n\r\n"
                         .encode()) for method in ("TRACE", "track", "GET")]

        run = run_boxed(policy, client, resolve=fixed_resolver({NAME: ["127.0.0.1"]}))
    trace, track, get = run.result
    for answer in (trace, track, get):
        assert not any(secret.decode() in answer for secret in proxy.secrets), answer
    assert (trace, track) == ("", "")
    assert get.startswith("HTTP/1.1 200"), get
    assert get.endswith(f"host={NAME}:{web.port}")
    received = bytes(web.received).lower()
    assert b"get / http/1.1" in received
    assert b"trace" not in received
    assert b"track" not in received
    assert b"max-forwards" not in received
    assert b"proxy-authorization" not in received
    [refused] = run.refused("sni-mismatch")
    assert refused.count == 2
    assert "echoes the request" in refused.first


@pytest.mark.parametrize("method", [b"TRACE", b"trace", b"TRACK"])
def test_an_echoing_method_is_refused_before_anything_is_composed(method: bytes) -> None:
    request = h11.Request(method=method, target=b"/", headers=[(b"host", b"a.example")])
    with pytest.raises(plainhttp.BadRequest, match="echoes the request"):
        plainhttp.check_request(request, "a.example", 80)


def test_the_composed_request_carries_no_max_forwards_and_no_credential() -> None:
    request = h11.Request(method=b"OPTIONS", target=b"*", headers=[
        (b"host", b"a.example"), (b"max-forwards", b"0"),
        (b"proxy-authorization", b"Basic YWdlbnQ6b3du")])
    composed = plainhttp.compose(request, b"a.example", forward_prefix("a.example", 80))
    fields = {field for field, _ in composed.headers}
    assert b"max-forwards" not in fields
    assert b"proxy-authorization" not in fields


@ROOT
@pytest.mark.skipif(bool(MISSING), reason=MISSING)
def test_plain_http_behind_a_proxy_that_tunnels_only_to_443_fails_and_is_reported() -> None:
    """The price of keeping the credentials to our CONNECT: a proxy that allows CONNECT only
    to 443 (Apache's and Squid's defaults) refuses the tunnel for plain HTTP. The agent's
    connection fails, the far end hears nothing, and the report counts the failure."""
    with servers(http_host) as (web,), auth_proxy([443]) as proxy:
        policy = _auth_policy([f"{NAME}:{web.port}"], proxy.url)

        def client(emit: Emit) -> Any:
            return _get(web.port, f"GET / HTTP/1.1\r\nHost: {NAME}:{web.port}\r\n\r\n".encode())

        run = run_boxed(policy, client, resolve=fixed_resolver({NAME: ["127.0.0.1"]}))
    assert run.result == ""
    assert bytes(web.received) == b""
    [reached] = [d for d in run.report.allowed if d.destination == f"{NAME}:{web.port}"]
    assert reached.failed == 1
