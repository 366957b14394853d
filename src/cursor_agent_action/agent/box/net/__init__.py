"""The network wall around the contained agent: its own network namespace with only a loopback,
a resolver of ours that answers allowed names only, and a relay that takes every connection out
by name (see docs/network.md).

- :mod:`.policy`: which names and ports are allowed, which addresses they may resolve to.
- :mod:`.dns`: the DNS wire format, parsed and answered from the policy (never forwarded).
- :mod:`.peek`: the name a connection's first bytes claim (TLS SNI, HTTP Host).
- :mod:`.netns`: entering a new network namespace and returning, for the jail (root).
- :mod:`.relay`: the :class:`~.relay.Wall` the jail drives; its report.
- :mod:`.notices`: the warnings and log lines of a run's report, for the runner's log.
"""
