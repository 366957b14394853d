"""The network wall around the contained agent: its own network namespace with only a loopback,
a resolver of ours that answers allowed names only, and a relay that takes every connection out
by name (see docs/network.md).

- :mod:`.policy`: which names and ports are allowed, which addresses they may resolve to.
- :mod:`.addresses`: our table of address ranges (IPv4 inside IPv6 unpacked).
- :mod:`.dns`: the DNS wire format, parsed and answered from the policy (never forwarded).
- :mod:`.peek`: the name a connection's first bytes claim (TLS SNI, HTTP Host).
- :mod:`.tls`: a TLS connection followed until its handshake is decided (every ClientHello).
- :mod:`.httpflow`: plain HTTP framed request by request, strictly (what each request asks for).
- :mod:`.checks`: the checks of what the agent sends (first bytes, every request, inside a
  tunnel) against the name it dialed.
- :mod:`.pumps`: the two directions of one connection (copying, first lines, tunnels).
- :mod:`.netns`: entering a new network namespace and returning; the box's resolver files.
- :mod:`.relay`: the :class:`~.relay.Wall`, resolver and relay of one box.
- :mod:`.ledger`: what the wall let through and refused, as the run's report.
- :mod:`.jailside`: :class:`~.jailside.BoxNetwork`, the jail's calls in the order it makes them.
- :mod:`.notices`: the rules, the first refusal and the refusals in the runner's log.
"""
