"""The jail's side of the wall: the calls the jail (root) makes, in the order it makes them.

    network = BoxNetwork.enter(NetPolicy.from_json(spec["network"]), on_event=sink)
    # ... unshare(CLONE_NEWPID | CLONE_NEWNS); init = fork():
    #     in the init, once "/" is private: network.in_init(files_dir); then fork the agent
    network.leave()          # the jail back in the runner's network namespace
    network.start()          # the relay runs (a thread of the jail)
    # ... the agent runs; the init exits
    report = network.finish()  # stop; the report (a NetReport) for the run report

Between :meth:`BoxNetwork.enter` and :meth:`BoxNetwork.leave` the calling thread is in the
box's network namespace: whatever it forks (the agent's namespace init) lives there. Start no
thread before :meth:`leave` (the relay's :meth:`start` is the first).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from cursor_agent_action.agent.contain.box import world
from cursor_agent_action.agent.contain.box.contract import BoxSpec
from cursor_agent_action.agent.contain.box.net import netns, trust
from cursor_agent_action.agent.contain.box.net.ca import CaError, RunCa
from cursor_agent_action.agent.contain.box.net.credentials import Credentials, Tally
from cursor_agent_action.agent.contain.box.net.ledger import EventSink
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.agent.contain.box.net.relay import (
    HOSTS_TEXT,
    Limits,
    Resolve,
    Wall,
    system_resolve,
)
from cursor_agent_action.agent.contain.box.net.terminate import Terminator
from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.wallreport import NetReport


class BoxNetwork:
    """One box's network: its namespace, the wall in it, the way back."""

    def __init__(self, wall: Wall, previous: int, box: int = -1) -> None:
        self.wall = wall
        self._previous = previous
        self._box = box  # the box's namespace, for :meth:`join` (from :meth:`enter_beside`)
        self.tally: Tally | None = None
        self.ca: RunCa | None = None

    @classmethod
    def enter(cls, policy: NetPolicy, *, on_event: EventSink | None = None,
              resolve: Resolve = system_resolve, limits: Limits | None = None) -> BoxNetwork:
        """Move this thread into a new network namespace and bind the wall's sockets there."""
        previous = netns.enter_new_netns()
        try:
            wall = Wall.create(policy, limits=limits, resolve=resolve, on_event=on_event)
        except BaseException:
            netns.return_to_netns(previous)
            raise
        return cls(wall, previous)

    @classmethod
    def enter_beside(cls, policy: NetPolicy, *, on_event: EventSink | None = None,
                     resolve: Resolve = system_resolve,
                     limits: Limits | None = None) -> BoxNetwork:
        """As :meth:`enter`, for a jail in an unprivileged user namespace, which may make a
        network namespace but never go back to the runner's (owned by the host): a thread of
        its own makes the box's namespace, binds the wall's sockets there, and ends; the
        calling thread stays in the runner's (the relay runs there), and the agent's namespace
        parent moves into the box's with :meth:`join`."""
        made: list[tuple[Wall, int]] = []
        failed: list[BaseException] = []

        def make() -> None:
            try:
                os.close(netns.enter_new_netns())  # this thread's alone
                wall = Wall.create(policy, limits=limits, resolve=resolve, on_event=on_event)
                made.append((wall, netns.open_current()))
            except BaseException as exc:  # raised again in the caller
                failed.append(exc)

        thread = threading.Thread(target=make, name="box-network")
        thread.start()
        thread.join()
        if failed or not made:
            raise failed[0] if failed else netns.NetnsError(0, "the box's network failed")
        wall, box = made[0]
        return cls(wall, -1, box)

    def join(self) -> None:
        """In the agent's namespace parent, forked by a jail that stayed out (:meth:`enter_beside`):
        into the box's network namespace. Nothing to do after :meth:`enter`."""
        box, self._box = self._box, -1
        if box >= 0:
            try:
                netns.enter(box)
            finally:
                os.close(box)

    def hold_credentials(self, credentials: Credentials, ca_dir: Path, files_dir: Path,
                         env: Mapping[str, str],
                         on_exchange_failed: Callable[[str], None]) -> tuple[dict[str, str],
                                                                             dict[str, str]]:
        """The relay holds the key (:mod:`.terminate`): the run's CA made in ``ca_dir`` (root's,
        never shown in the box), the box's trust files written in ``files_dir``. Returns the
        box's read-only files (target to source) and the agent's environment (the trust
        variables on them). Raises :class:`~.ca.CaError`."""
        self.ca = RunCa.make(ca_dir, credentials.patterns)
        self.tally = Tally(on_exchange_failed)
        self.wall.terminator = Terminator(credentials, self.ca, self.wall.ledger, self.tally)
        return trust.write_files(files_dir, self.ca.certificate, env), trust.environment(env)

    def mask_report(self) -> MaskReport | None:
        return self.tally.report() if self.tally is not None else None

    def in_init(self, files_dir: Path | None) -> None:
        """In the process forked inside the box (the agent's namespace init), first thing once
        its mount namespace is private: drop its copies of the wall's sockets (kept, they would
        keep the box's listeners alive after the relay stopped) and of the way back; with
        ``files_dir`` (root's, readable by all), mount the box's resolv.conf and hosts and hide
        the resolvers outside the wall (:func:`.netns.mount_resolver_files`)."""
        self.wall.close_in_child()
        for fd in (self._previous, self._box):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if files_dir is not None:
            netns.mount_resolver_files(Wall.resolv_conf_text(), HOSTS_TEXT, files_dir)

    def leave(self) -> None:
        """Back into the runner's network namespace (the one :meth:`enter` left)."""
        previous, self._previous = self._previous, -1
        if previous >= 0:
            netns.return_to_netns(previous)

    def start(self) -> None:
        """Run the relay (after :meth:`leave`: its connections go out from the runner's side)."""
        self.wall.start()

    def finish(self) -> NetReport:
        """Stop the relay (every listener and connection closed) and return its report."""
        self.leave()  # in case an error skipped it
        box, self._box = self._box, -1
        if box >= 0:
            os.close(box)
        self.wall.stop()
        if self.ca is not None:
            self.ca.destroy()
        return self.wall.report()


def hold_key(spec: BoxSpec, view: world.World, net: BoxNetwork | None,
                      agent_init: list[int]) -> tuple[BoxSpec, MaskReport | None]:
    """With credentials in the spec and a wall: the relay holds the key, the box gets the
    placeholder (already in the spec's env) and the run's CA in its trust store; the agent's
    namespace (``agent_init``, once known) is stopped when the key exchange fails. Without a
    CA (no openssl): the key in the box if the spec allows it (the report says why), else
    :class:`CaError`."""
    credentials = spec.credentials
    if credentials is None:
        return spec, None
    env = {name: value for name, value in spec.env.items() if name != "CURSOR_API_KEY"}
    if net is None:
        return replace(spec, env={**env, "CURSOR_API_KEY": credentials.key}), None

    def stop_agent(_detail: str) -> None:
        if agent_init[0]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(agent_init[0], signal.SIGTERM)

    area = Path(spec.box_dir)
    (area / "ca").mkdir(mode=0o700)
    world.tmpfs(str(area / "ca"), size="4m", mode=0o700)  # gone with this mount namespace
    try:
        files, env = net.hold_credentials(credentials, area / "ca", area / "net", env,
                                          stop_agent)
    except CaError as exc:
        if not credentials.fallback:
            raise
        return (replace(spec, env={**env, "CURSOR_API_KEY": credentials.key}),
                MaskReport(ca_error=str(exc)))
    view.files.update(files)
    return replace(spec, env={**env, "CURSOR_API_KEY": credentials.placeholder}), None
