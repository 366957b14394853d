"""The network wall around the contained agent: its own network namespace with only a loopback,
a resolver of ours that answers allowed names only, and a relay that takes every connection out
by name (see docs/network.md).

- :mod:`.policy`: which names and ports are allowed, which addresses they may resolve to.
- :mod:`.addresses`: our table of address ranges (IPv4 inside IPv6 unpacked).
- :mod:`.dns`: the DNS wire format, parsed and answered from the policy (never forwarded).
- :mod:`.peek`: what a connection's first bytes are (TLS and its SNI, plain HTTP, another
  protocol).
- :mod:`.tls`: a TLS connection followed until its handshake is decided (every ClientHello).
- :mod:`.plainhttp`: plain HTTP terminated: each request read with h11, checked, and composed
  anew by the relay (the far end reads only the relay's requests).
- :mod:`.checks`: the checks of what the agent sends (first bytes, every ClientHello, every
  request) against the name it dialed.
- :mod:`.pumps`: the two directions of one connection (copying; TLS records held until read).
- :mod:`.netns`: entering a new network namespace and returning; the box's resolver files.
- :mod:`.relay`: the :class:`~.relay.Wall`, resolver and relay of one box.
- :mod:`.ledger`: what the wall let through and refused, as the run's report.
- :mod:`.jailside`: :class:`~.jailside.BoxNetwork`, the jail's calls in the order it makes them.
- :mod:`.walllog`: the rules, the first refusal and the refusals in the runner's log.
"""
