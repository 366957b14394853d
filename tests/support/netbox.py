"""A harness that drives the network wall exactly as the jail does, and servers to aim at.

:func:`run_boxed` forks a "jail" process (root, its own process group) that enters a new
network namespace and creates the wall there, forks the client (which stays in the box's
namespace), goes back to the runner's namespace and starts the relay, all through
:class:`~cursor_agent_action.agent.contain.box.net.jailside.BoxNetwork`, the calls the jail makes.
The test's servers listen on the runner's 127.0.0.1. The client is a function run in the
forked process: it may ``emit`` messages on the way (the test can act on them, e.g. kill the
jail), and its return value is the last message. Everything is bounded in time and the whole
process group is killed at the end.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import select
import signal
import socket
import struct
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cursor_agent_action.agent.contain.box.net.ca import RunCa
from cursor_agent_action.agent.contain.box.net.credentials import Credentials, Tally
from cursor_agent_action.agent.contain.box.net.jailside import BoxNetwork
from cursor_agent_action.agent.contain.box.net.ledger import NetEvent
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.agent.contain.box.net.relay import Limits, Resolve, system_resolve
from cursor_agent_action.agent.contain.box.net.terminate import Terminator
from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.wallreport import NetReport, Refusal
from tests.support.turns import machine_lock

PREFIX = "caa-net-test-"
Emit = Callable[[Any], None]


@dataclass
class BoxedRun:
    messages: list[Any]
    report: NetReport
    events: list[NetEvent]
    jail_status: int | None
    mask: MaskReport | None = None

    @property
    def result(self) -> Any:
        return self.messages[-1] if self.messages else None

    def refused(self, kind: str) -> list[Refusal]:
        return [entry for entry in self.report.refused if entry.kind == kind]


def _write_json(fd: int, value: Any) -> None:
    data = (json.dumps(value) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _jail(policy: NetPolicy, client: Callable[[Emit], Any], *, resolve: Resolve,
          limits: Limits | None, to_test: int, report_fd: int, timeout_s: float,
          masking: tuple[Credentials, RunCa] | None = None) -> None:
    """The forked jail (never returns)."""
    try:
        os.setpgid(0, 0)
        stop_early = threading.Event()
        signal.signal(signal.SIGUSR1, lambda *_: stop_early.set())
        events: list[NetEvent] = []
        network = BoxNetwork.enter(policy, on_event=events.append, resolve=resolve,
                                   limits=limits)
        tally = Tally()
        if masking is not None:  # as the jail does when the relay holds the key
            network.wall.terminator = Terminator(*masking, network.wall.ledger, tally)
        pid = os.fork()
        if pid == 0:
            network.in_init(None)  # as the jail's namespace init does
            os.close(report_fd)
            try:
                _write_json(to_test, {"result": client(lambda m: _write_json(to_test, {"say": m}))})
            except BaseException:
                _write_json(to_test, {"error": traceback.format_exc()})
            os._exit(0)
        network.leave()
        network.start()
        deadline = time.monotonic() + timeout_s
        ended = False
        while time.monotonic() < deadline and not stop_early.is_set() and not ended:
            ended = bool(os.waitpid(pid, os.WNOHANG)[0])
            time.sleep(0.02)
        report = network.finish()
        said = [event.to_json() for event in events]
        _write_json(report_fd, {"report": report.to_json(), "events": said,
                                "alive": network.wall.alive,
                                "mask": tally.report().to_json()})  # fmt: skip
        # The client may go on after an early stop (to see the box fail closed).
        while time.monotonic() < deadline and not ended:
            ended = bool(os.waitpid(pid, os.WNOHANG)[0])
            time.sleep(0.02)
        os._exit(0)
    except BaseException:
        with contextlib.suppress(OSError):
            _write_json(report_fd, {"error": traceback.format_exc()})
        os._exit(1)


def run_boxed(policy: NetPolicy, client: Callable[[Emit], Any], *,
              resolve: Resolve = system_resolve, limits: Limits | None = None,
              on_message: Callable[[Any, int], None] | None = None,
              timeout_s: float = 30.0,
              masking: tuple[Credentials, RunCa] | None = None) -> BoxedRun:
    """Run ``client`` in a box behind the wall (see the module docstring); ``on_message``
    hears each emitted message with the jail's pid."""
    from_client, to_test = os.pipe()
    from_jail, report_fd = os.pipe()
    jail = os.fork()
    if jail == 0:
        os.close(from_client)
        os.close(from_jail)
        _jail(policy, client, resolve=resolve, limits=limits, to_test=to_test,
              report_fd=report_fd, timeout_s=timeout_s, masking=masking)
    os.close(to_test)
    os.close(report_fd)
    messages: list[Any] = []
    jail_out: dict[str, Any] = {}
    buffers = {from_client: b"", from_jail: b""}
    open_fds = {from_client, from_jail}
    deadline = time.monotonic() + timeout_s + 10
    try:
        while open_fds and time.monotonic() < deadline:
            ready, _, _ = select.select(list(open_fds), [], [], 0.2)
            for fd in ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    open_fds.discard(fd)
                    continue
                buffers[fd] += chunk
                *lines, buffers[fd] = buffers[fd].split(b"\n")
                for line in lines:
                    value = json.loads(line)
                    if fd == from_jail:
                        jail_out = value
                    elif "say" in value:
                        messages.append(value["say"])
                        if on_message is not None:
                            on_message(value["say"], jail)
                    elif "error" in value:
                        raise AssertionError(f"the client failed:\n{value['error']}")
                    else:
                        messages.append(value["result"])
        if "error" in jail_out:
            raise AssertionError(f"the jail failed:\n{jail_out['error']}")
        assert not jail_out.get("alive"), "the relay thread outlived finish()"
        assert not open_fds, "the boxed run did not finish in time"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(jail, signal.SIGKILL)
        _, status = os.waitpid(jail, 0)
        os.close(from_client)
        os.close(from_jail)
    # Across the process boundary as the box's status carries it: read by the contract.
    report = NetReport.from_json(jail_out.get("report", {"mode": "none"}))
    events = [NetEvent.from_json(e) for e in jail_out.get("events", [])]
    mask = MaskReport.from_json(jail_out["mask"]) if masking is not None else None
    return BoxedRun(messages, report, [e for e in events if e is not None], status, mask)


def fixed_resolver(table: dict[str, list[str]], calls: list[str] | None = None) -> Resolve:
    """A stand-in for the runner's resolver (names not in ``table`` do not resolve); each
    name asked is appended to ``calls`` (in the jail's process)."""

    def resolve(name: str, port: int) -> list[str]:
        if calls is not None:
            calls.append(name)
        if name not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[name]

    return resolve


# -- the client's side: DNS by hand ------------------------------------------------------------


def dns_query(name: str, qtype: int = 1, ident: int = 0x4242) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".") if p)
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack(
        "!HH", qtype, 1)


def lookup(name: str, server: tuple[str, int] = ("127.0.0.1", 53), qtype: int = 1,
           timeout_s: float = 3.0) -> tuple[int, list[str]]:
    """(rcode, A addresses) from ``server``; rcode -1 when nothing answered."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout_s)
        sock.sendto(dns_query(name, qtype), server)
        try:
            data = sock.recv(4096)
        except (TimeoutError, ConnectionRefusedError):
            return -1, []
    rcode = data[3] & 0xF
    count = struct.unpack_from("!H", data, 6)[0]
    addresses = []
    end = len(dns_query(name, qtype))  # our answers: the question, then 16-byte A records
    for i in range(count):
        start = end + i * 16 + 12
        addresses.append(str(ipaddress.IPv4Address(data[start : start + 4])))
    return rcode, addresses


def connect_by_name(name: str, port: int, timeout_s: float = 5.0) -> socket.socket:
    """A connection to ``name`` as the agent's tools make it: its address from the box's
    resolver, then connect."""
    rcode, addresses = lookup(name)
    if rcode != 0 or not addresses:
        raise OSError(f"{name} did not resolve in the box (rcode {rcode})")
    return socket.create_connection((addresses[0], port), timeout=timeout_s)


# -- the runner's side: servers on 127.0.0.1 ---------------------------------------------------


@dataclass
class TcpServer:
    """A threaded TCP server on 127.0.0.1 that records connections and bytes; ``handler``
    serves each connection (default: echo until EOF)."""

    handler: Callable[[socket.socket, TcpServer], None] | None = None
    connections: int = 0
    received: bytearray = field(default_factory=bytearray)
    closed: int = 0  # connections that ended (EOF or error) on the server's side
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0), backlog=512)
        self.port = self.sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.settimeout(60)
            (self.handler or echo)(conn, self)
        with self.lock:
            self.closed += 1

    def record(self, data: bytes) -> None:
        with self.lock:
            self.received += data

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


def echo(conn: socket.socket, server: TcpServer) -> None:
    while data := conn.recv(65536):
        server.record(data)
        conn.sendall(data)


def http_host(conn: socket.socket, server: TcpServer) -> None:
    """Answers one HTTP request with the Host header it was sent."""
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 65536:
        chunk = conn.recv(65536)
        if not chunk:
            return
        head += chunk
    server.record(head)
    host = next((line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                 if line.lower().startswith(b"host:")), b"")  # fmt: skip
    body = b"host=" + host
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                 % (len(body), body))


@contextlib.contextmanager
def servers(*handlers: Callable[[socket.socket, TcpServer], None] | None) -> Iterator[
        list[TcpServer]]:
    made = [TcpServer(handler) for handler in handlers]
    try:
        yield made
    finally:
        for server in made:
            server.close()


class UdpServer:
    """Records every datagram that reaches 127.0.0.1:port of the runner."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                self.received.append(self.sock.recv(65536))
            except (TimeoutError, OSError):
                continue

    def close(self) -> None:
        self._stop.set()
        self.sock.close()


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` and its key, as files in ``directory``
    (cryptography, which PyGithub already needs)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(key, hashes.SHA256()))  # fmt: skip
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_file, key_file


# -- TLS by hand -------------------------------------------------------------------------------

HELLO_RETRY = bytes.fromhex("CF21AD74E59A6111BE1D8C021E65B891C2A211167ABB8C5E079E09E2C8A8339C")


def record(kind: int, payload: bytes) -> bytes:
    """A TLS record of ``kind``."""
    return bytes([kind, 3, 3]) + len(payload).to_bytes(2, "big") + payload


def message(kind: int, body: bytes) -> bytes:
    """A TLS handshake message of ``kind``."""
    return bytes([kind]) + len(body).to_bytes(3, "big") + body


def hello_body(name: str, *, ech: bool = False) -> bytes:
    """A ClientHello body naming ``name``, with encrypted_client_hello if ``ech``."""
    entry = b"\x00" + len(name).to_bytes(2, "big") + name.encode()
    sni = struct.pack("!HH", 0, len(entry) + 2) + len(entry).to_bytes(2, "big") + entry
    extensions = sni + (struct.pack("!HH", 0xFE0D, 4) + b"\x00\x00\x01\x00" if ech else b"")
    return (b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
            + len(extensions).to_bytes(2, "big") + extensions)


def hello(name: str, *, ech: bool = False) -> bytes:
    """A ClientHello record."""
    return record(0x16, message(1, hello_body(name, ech=ech)))


def server_hello(*, retry: bool) -> bytes:
    """A ServerHello record, or a HelloRetryRequest."""
    random = HELLO_RETRY if retry else bytes(range(32))
    return record(0x16, message(2, b"\x03\x03" + random + b"\x00\x13\x01\x00\x00\x00"))


CCS = record(0x14, b"\x01")


@contextlib.contextmanager
def loopback_names(names: Sequence[str]) -> Iterator[None]:
    """Several names at 127.0.0.1 at once, as :func:`loopback_name` adds one (the lock is
    taken once: nested, it would wait for itself)."""
    path = Path("/etc/hosts")
    with machine_lock("etc-hosts"):
        before = path.read_bytes()
        path.write_bytes(before + "".join(f"\n127.0.0.1 {name}\n" for name in names).encode())
        try:
            yield
        finally:
            path.write_bytes(before)


@contextlib.contextmanager
def loopback_name(name: str) -> Iterator[str]:
    """``name`` at 127.0.0.1 in the runner's /etc/hosts (for the relay's system resolver),
    restored byte for byte after, even on failure. One test on the machine at a time edits it
    (a machine-wide lock): two interleaved would each restore a file holding the other's name,
    or lose it."""
    path = Path("/etc/hosts")
    with machine_lock("etc-hosts"):
        before = path.read_bytes()
        path.write_bytes(before + f"\n127.0.0.1 {name}\n".encode())
        try:
            yield name
        finally:
            path.write_bytes(before)
