"""The relay's HTTP/2 data path alone, in-process: no TLS, no sockets, no other process
(figures in bench/README.md).

    .venv/bin/python bench/net/bench_h2path.py [--mib 128] [--rounds 3]

A server h2 connection sends ``--mib`` MiB of random bytes in 16 KiB DATA frames on one
stream; the relay's :class:`~cursor_agent_action.agent.contain.box.net.h2swap.Relay` reads them
as Cursor's side (h2), rewrites them (a Rewriter coming down: the key, unknown JWTs), frames
them anew for the agent's side (h2) and acknowledges them; a client h2 connection reads them.
Only the relay's calls are timed (thread CPU time): what one core spends a MiB on h2 and the
swap, without the TLS and socket work around them (bench_terminate.py measures it all).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings

from cursor_agent_action.agent.contain.box.net.credentials import Tally
from cursor_agent_action.agent.contain.box.net.h1swap import Session
from cursor_agent_action.agent.contain.box.net.h2swap import Relay
from cursor_agent_action.agent.contain.box.net.placeholders import key_placeholder
from cursor_agent_action.agent.contain.box.net.swap import Vault

FRAME = 16 * 1024


class Pipe:
    """What the relay writes to one side."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def write(self, data: bytes) -> None:
        if data:
            self.out.append(data)

    def take(self) -> bytes:
        data = b"".join(self.out)
        self.out.clear()
        return data


def _conn(client: bool) -> h2.connection.H2Connection:
    return h2.connection.H2Connection(h2.config.H2Configuration(client_side=client,
                                                                header_encoding=None))


def one_round(mib: int) -> float:
    """The relay's CPU seconds for ``mib`` MiB."""
    key = "crsr_" + os.urandom(32).hex()
    vault = Vault(key, key_placeholder(key))
    agent, far = Pipe(), Pipe()
    relay = Relay(Session(vault, Tally(), lambda _n, _w: None, "api2.cursor.sh", 443),
                  agent, far)  # type: ignore[arg-type]  # a pipe that only takes writes
    relay.start()
    client, server = _conn(client=True), _conn(client=False)
    client.initiate_connection()
    client.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
    client.increment_flow_control_window(1 << 24)
    server.initiate_connection()

    def agent_in(data: bytes) -> None:
        for event in relay.agent.receive_data(data):
            relay.on_agent(event)
        relay.pump()

    def far_in(data: bytes) -> None:
        for event in relay.far.receive_data(data):
            relay.on_far(event)
        relay.pump()

    for _ in range(4):  # settings both ways
        agent_in(client.data_to_send())
        far_in(server.data_to_send())
        client.receive_data(agent.take())
        server.receive_data(far.take())
    client.send_headers(1, [(b":method", b"POST"), (b":scheme", b"https"),
                            (b":authority", b"api2.cursor.sh"),
                            (b":path", b"/agent.v1.AgentService/RunSSE"),
                            (b"content-type", b"application/connect+proto")], end_stream=True)
    agent_in(client.data_to_send())
    server.receive_data(far.take())
    server.send_headers(1, [(b":status", b"200"), (b"content-type", b"application/connect+proto")])
    far_in(server.data_to_send())
    client.receive_data(agent.take())
    payload = os.urandom(FRAME)
    frames, sent, got, spent = mib * 64, 0, 0, 0.0
    while got < mib << 20:
        for _ in range(64):
            if sent == frames or server.local_flow_control_window(1) < FRAME:
                break
            server.send_data(1, payload, end_stream=sent == frames - 1)
            sent += 1
        wire = server.data_to_send()
        started = time.thread_time()
        for at in range(0, len(wire), 64 * 1024):  # as TLS hands it on
            far_in(wire[at:at + 64 * 1024])
        out = agent.take()
        spent += time.thread_time() - started
        for event in client.receive_data(out):
            if isinstance(event, h2.events.DataReceived):
                got += len(event.data)
                client.acknowledge_received_data(event.flow_controlled_length, 1)
        started = time.thread_time()
        agent_in(client.data_to_send())
        server.receive_data(far.take())
        spent += time.thread_time() - started
    return spent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    spent = [one_round(args.mib) for _ in range(args.rounds)]
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    print(f"the relay's h2 path, {args.mib} MiB a round: "
          f"{', '.join(f'{s:.3f} s' for s in spent)}; "
          f"{args.mib / statistics.median(spent):.0f} MiB per CPU-second (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
