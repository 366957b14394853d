"""What holding the key costs: requests to Cursor's names through the relay's TLS termination
and credential swapping (as root; figures in bench/README.md).

    sudo .venv/bin/python bench/net/bench_terminate.py [--requests 500] [--mib 256] [--rounds 3]

The fake Cursor service of the tests (tests/support/cursor_service.py, TLS with its own CA,
HTTP/2 by h2) on the runner's 127.0.0.1; the wall as the jail drives it (tests/support/netbox.py:
a new network namespace, the relay holding the key and the run's CA). The machine this runs on
is shared, so every figure through the relay comes with its baseline measured in the same run,
interleaved with it where that can be done, and the load average:

- per request: one HTTP/2 connection (h2 over ``ssl``) straight to the service, made before the
  box (its socket is inherited: it reaches the runner's loopback from the box), and one through
  the relay, as the CLI holds one; ``--requests`` unary calls (``GetMe``: the bearer checked, a
  token in the answer masked) on each, alternating; the medians, the 95th percentiles and the
  median of each pair's difference ("added").
- stream: a response of ``--mib`` MiB (random bytes) from an HTTP/2 server of node's (nghttp2, so
  the server is not what is measured) to ``curl --http2`` (the same), every byte through a
  Rewriter and every frame re-framed by h2 on both sides of the relay; ``--rounds`` downloads
  straight (before and after the box) and through the relay, and the relay's own CPU time for
  them (the jail process's, read from /proc: its other thread sleeps), which the load of other
  processes does not inflate: MiB per relay CPU-second is what one free core would carry. The
  fake service's own ``RunSSE`` stream is given too (pure-Python h2 at both ends: it measures
  them).
- the CA: making it (once a run) and one leaf (once a name).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.settings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.cursor_service import make_key, with_service
from tests.support.netbox import fixed_resolver, lookup, run_boxed

from cursor_agent_action.agent.contain.box.net.ca import RunCa
from cursor_agent_action.agent.contain.box.net.credentials import Credentials
from cursor_agent_action.agent.contain.box.net.placeholders import key_placeholder
from cursor_agent_action.agent.contain.box.net.policy import (
    DEFAULT_DOMAINS,
    build_policy,
)

NAME = "api2.cursor.sh"
NODE_SERVER = r"""
const http2 = require('http2'), fs = require('fs'), crypto = require('crypto');
const [key, cert, mib] = process.argv.slice(1);
const chunk = crypto.randomBytes(1 << 20);
const server = http2.createSecureServer({key: fs.readFileSync(key), cert: fs.readFileSync(cert)});
server.on('stream', stream => {
  stream.respond({':status': 200, 'content-type': 'application/connect+proto'});
  let left = Number(mib);
  const more = () => {
    while (left > 0) { left--; if (!stream.write(chunk)) { stream.once('drain', more); return; } }
    stream.end();
  };
  more();
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
"""


def curl_stream(address: str, port: int, cafile: str) -> float:
    """MiB/s of one HTTP/2 download by curl (``address`` for the name, no resolver)."""
    done = subprocess.run(["curl", "-sS", "--http2", "--cacert", cafile, "--resolve",
                           f"{NAME}:{port}:{address}", "-o", "/dev/null", "-w",
                           "%{speed_download} %{http_version}",
                           f"https://{NAME}:{port}/stream"],
                          capture_output=True, text=True, timeout=600, check=True)
    speed, version = done.stdout.split()
    assert version == "2", done.stdout
    return float(speed) / (1 << 20)


class Client:
    """One HTTP/2 connection, requests one at a time."""

    def __init__(self, address: str, port: int, cafile: str) -> None:
        context = ssl.create_default_context(cafile=cafile)
        context.set_alpn_protocols(["h2"])
        self.sock = context.wrap_socket(socket.create_connection((address, port), timeout=60),
                                        server_hostname=NAME)
        self.port = port
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=True, header_encoding=None))
        self.conn.initiate_connection()
        self.conn.increment_flow_control_window(1 << 24)
        self.conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
        self.sock.sendall(self.conn.data_to_send())

    def post(self, path: str, token: str, body: bytes = b"") -> tuple[int, bytes]:
        stream = self.conn.get_next_available_stream_id()
        self.conn.send_headers(stream, [
            (":method", "POST"), (":scheme", "https"), (":authority", f"{NAME}:{self.port}"),
            (":path", path), ("authorization", f"Bearer {token}"),
            ("content-type", "application/connect+proto")], end_stream=not body)
        if body:
            self.conn.send_data(stream, body, end_stream=True)
        self.sock.sendall(self.conn.data_to_send())
        status, size = 0, 0
        while True:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed")
            for event in self.conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers or [])[b":status"])
                elif isinstance(event, h2.events.DataReceived):
                    size += len(event.data)
                    self.conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    self.sock.sendall(self.conn.data_to_send())
                    return status, str(size).encode()
            self.sock.sendall(self.conn.data_to_send())


def exchange(client: Client, key: str) -> str:
    stream = client.conn.get_next_available_stream_id()
    body = json.dumps({"apiKey": key}).encode()
    client.conn.send_headers(stream, [
        (":method", "POST"), (":scheme", "https"), (":authority", f"{NAME}:{client.port}"),
        (":path", "/auth/exchange_user_api_key"), ("content-type", "application/json")])
    client.conn.send_data(stream, body, end_stream=True)
    client.sock.sendall(client.conn.data_to_send())
    answer = b""
    while True:
        for event in client.conn.receive_data(client.sock.recv(65536)):
            if isinstance(event, h2.events.DataReceived):
                answer += event.data
            elif isinstance(event, h2.events.StreamEnded):
                return str(json.loads(answer)["accessToken"])
        client.sock.sendall(client.conn.data_to_send())


def timed(client: Client, token: str) -> float:
    started = time.perf_counter()
    status, _ = client.post("/aiserver.v1.DashboardService/GetMe", token)
    assert status == 200, status
    return time.perf_counter() - started


def requests_side_by_side(direct: tuple[Client, str], relayed: tuple[Client, str],
                          count: int) -> dict[str, float]:
    """``count`` requests on each connection, alternating (which goes first alternates too)."""
    times: dict[str, list[float]] = {"direct": [], "relay": []}
    for i in range(count):
        order = (("direct", direct), ("relay", relayed))
        for label, (client, token) in order if i % 2 else order[::-1]:
            times[label].append(timed(client, token))
    added = [r - d for d, r in zip(times["direct"], times["relay"], strict=True)]
    found = {f"{label}_median_ms": statistics.median(values) * 1000
             for label, values in times.items()}
    found.update({f"{label}_p95_ms": statistics.quantiles(values, n=20)[-1] * 1000
                  for label, values in times.items()})
    found["added_median_ms"] = statistics.median(added) * 1000
    return found


def sse_stream(client: Client, token: str) -> float:
    """MiB/s of the fake service's own stream on ``client``."""
    envelope = b"\0" + (5).to_bytes(4, "big") + b"bench"
    started = time.perf_counter()
    status, size = client.post("/agent.v1.AgentService/RunSSE", token, envelope)
    elapsed = time.perf_counter() - started
    assert status == 200, status
    return int(size) / elapsed / (1 << 20)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:  # noqa: PLR0915 (one run, its figures printed in order)
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="caa-bench-terminate-"))
    key = make_key()
    messages = args.mib * 64  # 16 KiB each
    service = with_service(work / "service", [NAME], key, stream_messages=messages,
                           stream_bytes=16 * 1024 - 5)
    started = time.perf_counter()
    ca = RunCa.make(work / "ca", DEFAULT_DOMAINS)
    made = time.perf_counter() - started
    started = time.perf_counter()
    ca.leaf("bench.cursor.sh")
    leaf = time.perf_counter() - started
    node: subprocess.Popen[str] | None = None
    node_port = 0
    curl: dict[str, list[float]] = {"direct": [], "relay": []}
    cpu: list[float] = []
    try:
        direct = Client("127.0.0.1", service.port, str(service.ca.cert))
        direct_token = exchange(direct, key)
        if shutil.which("node") and shutil.which("curl"):
            files = [str(work / "service" / name) for name in ("server.key", "server.pem")]
            node = subprocess.Popen(["node", "-e", NODE_SERVER, *files, str(args.mib)],
                                    stdout=subprocess.PIPE, text=True)
            node_port = int((node.stdout.readline() if node.stdout else "0").strip())
            curl["direct"] += [curl_stream("127.0.0.1", node_port, str(service.ca.cert))
                               for _ in range((args.rounds + 1) // 2)]
        placeholder = key_placeholder(key)
        credentials = Credentials(key, placeholder, trust_file=str(service.ca.cert),
                                  patterns=DEFAULT_DOMAINS)
        ports = [service.port] + ([node_port] if node is not None else [])
        policy = build_policy([f"{NAME}:{port}" for port in ports])
        run_ca = str(work / "ca" / "ca.pem")

        def client(emit: Any) -> Any:
            _, addresses = lookup(NAME)
            relayed = Client(addresses[0], service.port, run_ca)
            found: dict[str, Any] = requests_side_by_side(
                (direct, direct_token), (relayed, exchange(relayed, placeholder)), args.requests)
            found["sse_direct"] = sse_stream(direct, direct_token)
            found["sse_relay"] = sse_stream(relayed, exchange(relayed, placeholder))
            if node is not None:
                speeds = []
                for _ in range(args.rounds):
                    emit("cpu")
                    time.sleep(0.3)  # the bench reads the jail's CPU time meanwhile
                    speeds.append(curl_stream(addresses[0], node_port, run_ca))
                    emit("cpu")
                    time.sleep(0.3)
                found["curl"] = speeds
            return found

        def heard(message: Any, jail: int) -> None:
            if message == "cpu":
                cpu.append(cpu_seconds(jail))

        boxed = run_boxed(policy, client, resolve=fixed_resolver({NAME: ["127.0.0.1"]}),
                          masking=(credentials, ca), timeout_s=900, on_message=heard)
        relayed = boxed.result
        curl["relay"] = relayed.get("curl", [])
        if node is not None:
            curl["direct"] += [curl_stream("127.0.0.1", node_port, str(service.ca.cert))
                               for _ in range(args.rounds // 2)]
    finally:
        with contextlib.suppress(NameError, OSError):
            direct.sock.close()
        if node is not None:
            node.kill()
            node.wait()
        service.close()
        ca.destroy()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min): before {load_before[0]:.1f} {load_before[1]:.1f} "
          f"{load_before[2]:.1f}, after {load_after[0]:.1f} {load_after[1]:.1f} "
          f"{load_after[2]:.1f} on {os.cpu_count()} cores")
    print(f"CA made: {made * 1000:.1f} ms; one leaf: {leaf * 1000:.1f} ms")
    r = relayed
    print(f"per request ({args.requests} each, alternating), median (p95): direct "
          f"{r['direct_median_ms']:.3f} ms ({r['direct_p95_ms']:.3f}), through the relay "
          f"{r['relay_median_ms']:.3f} ms ({r['relay_p95_ms']:.3f}); added, median of pairs: "
          f"{r['added_median_ms']:.3f} ms; ratio of medians "
          f"{r['relay_median_ms'] / r['direct_median_ms']:.2f}x")
    if curl["relay"]:
        spent = [cpu[i + 1] - cpu[i] for i in range(0, len(cpu) - 1, 2)]
        best_direct, best_relay = max(curl["direct"]), max(curl["relay"])
        print(f"HTTP/2 download of {args.mib} MiB, node to curl, MiB/s: direct "
              f"{', '.join(f'{v:.0f}' for v in curl['direct'])}; through the relay "
              f"{', '.join(f'{v:.0f}' for v in curl['relay'])}; best of each: "
              f"{best_relay:.0f} / {best_direct:.0f} = {best_relay / best_direct:.2f}x")
        print(f"the relay's CPU for each download: {', '.join(f'{v:.2f} s' for v in spent)}: "
              f"{args.mib / statistics.median(spent):.0f} MiB per relay CPU-second (median)")
    print(f"HTTP/2 stream of {args.mib} MiB, the fake service to an h2 client: direct "
          f"{r['sse_direct']:.0f} MiB/s, through the relay {r['sse_relay']:.0f} MiB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
