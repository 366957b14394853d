"""The network wall's cost on loopback, in one run (as root; figures in bench/README.md).

    sudo .venv/bin/python bench/net/bench_relay.py [--connects 500] [--mib 1024]

As the jail does it: a new network namespace, the Wall created inside, the relay started back
in the runner's namespace. A server process on the runner's 127.0.0.1 echoes one byte per
connection (latency) and swallows or sends a stream (throughput). A client process measures
each twice: directly from the runner's namespace, then from the box through the relay
(the name resolved once by the box's resolver, as a client caches it).

- connect latency: connect, send one byte, read it back, close; the median and the 95th
  percentile of ``--connects`` sequential connections; "added" is relay minus direct.
- throughput: ``--mib`` MiB in 1 MiB writes, upload (box to server), the same as one plain
  HTTP POST (the relay reads it with h11 and composes its own request), and download.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.support.forked import in_child

from cursor_agent_action.agent.contain.box.net import netns
from cursor_agent_action.agent.contain.box.net.policy import build_policy
from cursor_agent_action.agent.contain.box.net.relay import Wall

NAME = "bench.caa-net-test.example"
BLOCK = b"\0" * (1 << 20)


ECHO, UPLOAD, DOWNLOAD = b"\x01", b"\x02", b"\x03"
"""First bytes no HTTP reader starts a request with: the relay copies such a connection at
once (one starting with a letter is read to its first line end first)."""


def _serve(listener: socket.socket) -> None:
    """The server process: the first byte says what to do (echo one, swallow, send, or P: an
    HTTP POST, read by its length and answered)."""
    while True:
        conn, _ = listener.accept()
        with conn:
            kind = conn.recv(1)
            if kind == ECHO:
                conn.sendall(ECHO)
            elif kind == UPLOAD:
                while conn.recv(1 << 20):
                    pass
                conn.sendall(b"k")
            elif kind == b"P":
                head = kind
                while b"\r\n\r\n" not in head:
                    head += conn.recv(65536)
                head, _, body = head.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length:")))
                left = length - len(body)
                while left > 0:
                    left -= len(conn.recv(1 << 20))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nk")
            elif kind == DOWNLOAD:
                size = int.from_bytes(conn.recv(8), "big")
                for _ in range(size):
                    conn.sendall(BLOCK)


def _latencies(address: str, port: int, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        with socket.create_connection((address, port)) as sock:
            sock.sendall(ECHO)
            if sock.recv(1) != ECHO:
                raise RuntimeError("no echo")
        times.append(time.perf_counter() - started)
    return times


def _upload(address: str, port: int, mib: int, head: bytes = UPLOAD) -> float:
    """``mib`` MiB in 1 MiB writes after ``head`` (the server's "swallow" byte, or an HTTP
    POST's head: the relay then reads it with h11 and sends its own request)."""
    started = time.perf_counter()
    with socket.create_connection((address, port)) as sock:
        sock.sendall(head)
        for _ in range(mib):
            sock.sendall(BLOCK)
        if head == UPLOAD:
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
            if answer.endswith(b"k"):
                break
        if not answer.endswith(b"k"):
            raise RuntimeError("upload not acknowledged")
    return mib / (time.perf_counter() - started)


def _http_upload(address: str, port: int, mib: int) -> float:
    """One plain HTTP POST of ``mib`` MiB."""
    return _upload(address, port, mib, f"POST /up HTTP/1.1\r\nHost: {NAME}:{port}\r\n"
                                       f"Content-Length: {mib << 20}\r\n\r\n".encode())


def _download(address: str, port: int, mib: int) -> float:
    started = time.perf_counter()
    with socket.create_connection((address, port)) as sock:
        sock.sendall(DOWNLOAD + mib.to_bytes(8, "big"))
        left = mib << 20
        while left:
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("download cut short")
            left -= len(chunk)
    return mib / (time.perf_counter() - started)


def _measure(address: str, port: int, connects: int, mib: int) -> dict[str, float]:
    _latencies(address, port, 20)  # warm up
    times = _latencies(address, port, connects)
    return {"median_ms": statistics.median(times) * 1000,
            "p95_ms": statistics.quantiles(times, n=20)[-1] * 1000,
            "upload_mib_s": _upload(address, port, mib),
            "http upload_mib_s": _http_upload(address, port, mib),
            "download_mib_s": _download(address, port, mib)}  # fmt: skip


def _box_address() -> str:
    """The pool address of NAME from the box's resolver, asked over UDP as a client does."""
    labels = b"".join(bytes([len(p)]) + p.encode() for p in NAME.split("."))
    message = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + labels + b"\0\0\1\0\1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(3)
        sock.sendto(message, ("127.0.0.1", 53))
        reply = sock.recv(512)
    return ".".join(str(b) for b in reply[-4:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connects", type=int, default=500)
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.stderr.write("run as root (network namespaces)\n")
        return 2
    listener = socket.create_server(("127.0.0.1", 0), backlog=256)
    port = listener.getsockname()[1]
    server = os.fork()
    if server == 0:
        _serve(listener)
        os._exit(0)
    listener.close()
    try:
        direct = in_child(lambda: _measure("127.0.0.1", port, args.connects, args.mib))
        policy = build_policy([f"{NAME}:{port}"])
        previous = netns.enter_new_netns()
        wall = Wall.create(policy, resolve=lambda name, p: ["127.0.0.1"])

        def boxed() -> dict[str, float]:
            wall.close_in_child()
            return _measure(_box_address(), port, args.connects, args.mib)

        box = netns.open_current()
        netns.return_to_netns(previous)
        wall.start()
        netns.enter(box)  # the client forks from here, into the box
        try:
            relayed = in_child(boxed)
        finally:
            os.close(box)
        wall.stop()
    finally:
        os.kill(server, 9)
        os.waitpid(server, 0)
    added = relayed["median_ms"] - direct["median_ms"]
    print(f"connect + 1-byte echo, median (p95): direct {direct['median_ms']:.3f} ms "
          f"({direct['p95_ms']:.3f}), relay {relayed['median_ms']:.3f} ms "
          f"({relayed['p95_ms']:.3f}); added {added:.3f} ms (target <= 2 ms)")
    for what in ("upload", "http upload", "download"):
        print(f"{what} {args.mib} MiB: direct {direct[f'{what}_mib_s']:,.0f} MiB/s, relay "
              f"{relayed[f'{what}_mib_s']:,.0f} MiB/s (target >= 200 MB/s = 191 MiB/s)")
    print(json.dumps(wall.report().to_json()["allowed"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
