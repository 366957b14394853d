"""Which addresses the relay may connect to, by our own table of ranges (not the Python
version's ``is_global``, whose answer has changed between versions).

Every IPv6 form that carries an IPv4 address (IPv4-compatible ``::a.b.c.d``, mapped
``::ffff:a.b.c.d``, translated ``::ffff:0:a.b.c.d``, NAT64 ``64:ff9b::/96`` and
``64:ff9b:1::/48``, 6to4 ``2002::/16``, Teredo ``2001::/32``) is unpacked and each IPv4
address in it is judged too: a NAT64 or 6to4 gateway would carry the connection there.
:func:`judge` says ``never`` (a metadata, link-local, "this host", multicast or broadcast
address, :data:`NEVER`), ``local`` (private, loopback, shared, reserved or documentation
ranges, :data:`LOCAL`: only for a name listed exactly) or ``global``.
"""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
NEVER_REACHED, LOCAL_ONLY, GLOBAL = "never", "local", "global"


def _nets(*texts: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(text) for text in texts)


NEVER = _nets(
    "169.254.0.0/16",  # link-local: AWS, GCP, Azure, Oracle, DigitalOcean metadata
    "fe80::/10",  # IPv6 link-local
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "fd00:ec2::254/128",  # AWS metadata over IPv6
    "192.0.0.192/32",  # Oracle Cloud's older metadata address
    "0.0.0.0/8",  # "this host": a connect to it reaches the runner itself
    "::/128",  # "this host" in IPv6
    "224.0.0.0/4",  # multicast
    "ff00::/8",  # IPv6 multicast
    "255.255.255.255/32",  # broadcast
)
"""Never reached, whatever the name."""
LOCAL = _nets(
    # IPv4 (IANA's special-purpose registry): private, shared, loopback, IETF, documentation,
    # benchmarking, the old 6to4 relay, reserved
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "240.0.0.0/4",
    # IPv6: loopback, discard, IETF assignments (Teredo among them), documentation, unique
    # local, site-local, SRv6 SIDs. The IPv4-carrying prefixes are judged by what they carry.
    "::1/128",
    "100::/64",
    "2001::/23",
    "2001:db8::/32",
    "3fff::/20",
    "fc00::/7",
    "fec0::/10",
    "5f00::/16",
    "64:ff9b:1::/48",
)
"""Reached only for a name the workflow listed exactly (a self-hosted mirror)."""
_CARRIERS = _nets("::/96", "::ffff:0:0/96", "::ffff:0:0:0/96", "64:ff9b::/96")
"""IPv6 prefixes whose last 32 bits are an IPv4 address."""
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
"""NAT64's local-use prefix (RFC 8215): a network may use any RFC 6052 prefix length inside
it, each putting the IPv4 address in other bits; every one of them is a candidate."""
_RFC6052 = ((6, 8, 9, 11), (7, 8, 9, 12), (9, 13, 13, 13), (12, 16, 16, 16))
"""Where /48, /56, /64 and /96 prefixes (the lengths that fit inside the /48) put the IPv4
address: the bytes ``[a:b] + [c:d]`` of the IPv6 address (byte 8 is the reserved ``u``
octet). A translator may ignore the suffix bits, so every layout is a candidate: an address
there that some layout reads as a never-reached one (metadata, this host) is never reached."""
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_LOOPBACK6 = ipaddress.IPv6Network("::/127")  # :: and ::1 are themselves, not IPv4


def embedded(ip: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 one carries (see the module docstring)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return []
    value = int(ip)
    found = []
    if any(ip in net for net in _CARRIERS) and ip not in _LOOPBACK6:
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    if ip in _LOCAL_NAT64:
        packed = ip.packed
        found += [ipaddress.IPv4Address(packed[a:b] + packed[c:d]) for a, b, c, d in _RFC6052]
    if ip in _SIX_TO_FOUR:
        found.append(ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF))
    if ip in _TEREDO:  # the server, and the client (its bits inverted)
        found.append(ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF))
        found.append(ipaddress.IPv4Address(~value & 0xFFFFFFFF))
    return found


def judge(address: str) -> str:
    """:data:`NEVER_REACHED`, :data:`LOCAL_ONLY` or :data:`GLOBAL` for ``address`` (a scope
    after ``%`` is ignored); something that is no address is never reached."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return NEVER_REACHED
    candidates = [ip, *embedded(ip)]
    if any(c in net for c in candidates for net in NEVER if c.version == net.version):
        return NEVER_REACHED
    if any(c in net for c in candidates for net in LOCAL if c.version == net.version):
        return LOCAL_ONLY
    return GLOBAL
