"""The wall's policy: allowed-domains parsed with one clear error per bad line; which names,
ports and addresses are allowed; the JSON it travels in to the jail."""

from __future__ import annotations

import pytest

from cursor_agent_action.agent.contain.box.net.addresses import GLOBAL, NEVER_REACHED, judge
from cursor_agent_action.agent.contain.box.net.policy import (
    DEFAULT_DOMAINS,
    NetPolicy,
    build_policy,
    parse_allowed_domains,
)
from cursor_agent_action.errors import UsageError


def test_lines_become_rules_with_default_ports_comments_and_case_ignored() -> None:
    rules = parse_allowed_domains(["Example.COM\n\n  *.mirror.example:8443  # the mirror\n# x"])
    assert [(r.pattern, r.ports, r.source) for r in rules] == [
        ("example.com", (443, 80), "allowed-domains"),
        ("*.mirror.example", (8443,), "allowed-domains"),
    ]


@pytest.mark.parametrize(("line", "says"), [
    ("https://example.com/", "is a URL"),
    ("example.com/path", "is a URL"),
    ("example.com other.com", "holds a space"),
    ("example.com:0", "port that is not a number"),
    ("example.com:65536", "port that is not a number"),
    ("example.com:http", "port that is not a number"),
    ("10.0.0.5", "is an IP address"),
    ("10.0.0.5:8080", "is an IP address"),
    ("[::1]:443", "IPv6 address"),
    ("*.com", "whole top-level domain"),
    ("ex*ample.com", "not a host name"),
    ("a.*.example.com", "not a host name"),
    ("-bad.example.com", "not a host name"),
    ("exa mple", "holds a space"),
    ("x" * 64 + ".com", "not a host name"),
    # what the system resolver (glibc's inet_aton) reads as 127.0.0.1: the first finding
    ("0x7f.1", "is an IP address"),
    ("0x7f000001", "is an IP address"),
    ("2130706433", "is an IP address"),
    ("0177.0.0.1", "is an IP address"),
    ("127.1", "is an IP address"),
    ("*.0x7f.1", "is an IP address"),
    ("mirror.1:8080", "is an IP address"),
])  # fmt: skip
def test_each_bad_line_gets_one_error_naming_the_input_and_the_line(line: str, says: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_allowed_domains([f"good.example\n{line}"])
    assert caught.value.message.startswith(f"--allowed-domains: {line.strip()!r}")
    assert says in caught.value.message
    assert "'*.example.com'" in caught.value.hint


def test_under_the_action_the_error_names_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CURSOR_AGENT_ACTION_VOCABULARY", "inputs")
    with pytest.raises(UsageError, match=r"^allowed-domains: 'http://x\.example'"):
        parse_allowed_domains(["http://x.example"])


def test_names_and_ports() -> None:
    policy = build_policy(["exact.example", "*.wild.example:8443"])
    assert policy.allows("api2.cursor.sh", 443)  # a default
    assert not policy.allows("api2.cursor.sh", 80)  # defaults: 443 only
    assert not policy.allows("cursor.sh", 443)  # *.cursor.sh is under it, not itself
    assert policy.allows("EXACT.example.", 80)
    assert not policy.allows("sub.exact.example", 443)
    assert policy.allows("a.b.wild.example", 8443)
    assert not policy.allows("a.wild.example", 443)
    assert not policy.allows("wild.example", 8443)
    assert not policy.allows("evilwild.example", 8443)  # a suffix, not a label
    assert not policy.allows_name("evil.example")
    assert policy.ports() == (80, 443, 8443)


def test_metadata_and_link_local_are_never_reachable_even_for_a_listed_name() -> None:
    policy = build_policy(["mirror.example"])
    for address in ("169.254.169.254", "169.254.0.1", "fe80::1", "100.100.100.200",
                    "fd00:ec2::254", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe",
                    "2002:a9fe:a9fe::1", "0.0.0.0", "::", "224.0.0.1", "not an address"):  # noqa: S104
        assert not policy.address_allowed(address, "mirror.example"), address


def test_private_and_loopback_only_for_a_name_listed_exactly() -> None:
    policy = build_policy(["mirror.example", "*.corp.example"], ["http://mcp.example:9000/x"])
    for address in ("10.1.2.3", "192.168.1.1", "172.16.0.1", "127.0.0.1", "::1",
                    "100.64.0.1", "fd12::1", "::ffff:10.0.0.1"):
        assert policy.address_allowed(address, "mirror.example"), address
        assert policy.address_allowed(address, "mcp.example"), address
        assert not policy.address_allowed(address, "git.corp.example"), address  # wildcard
        assert not policy.address_allowed(address, "api2.cursor.sh"), address  # default
    assert policy.address_allowed("140.82.112.3", "git.corp.example")
    assert policy.address_allowed("2606:4700::6810:84e5", "api2.cursor.sh")


def test_mcp_url_hosts_are_allowed_on_their_port_and_ip_hosts_are_reported() -> None:
    policy = build_policy([], ["https://mcp.example/sse", "http://local.example:3000/mcp",
                               "http://10.0.0.5:8080/mcp", "http://[::1]:9/x"])
    assert policy.allows("mcp.example", 443)
    assert not policy.allows("mcp.example", 80)
    assert policy.allows("local.example", 3000)
    assert policy.unreachable == ("http://10.0.0.5:8080/mcp", "http://[::1]:9/x")
    assert [r.source for r in policy.rules[-2:]] == ["mcp-config", "mcp-config"]


def test_the_defaults_are_the_cli_domains_on_443() -> None:
    policy = build_policy([])
    assert [r.pattern for r in policy.rules] == list(DEFAULT_DOMAINS)
    assert all(r.ports == (443,) and r.source == "default" for r in policy.rules)


def test_json_round_trip() -> None:
    policy = build_policy(["a.example:81", "*.b.example"], ["http://10.0.0.1/"])
    assert NetPolicy.from_json(policy.to_json()) == policy


def test_too_many_names_is_refused() -> None:
    with pytest.raises(UsageError, match="over 1000"):
        parse_allowed_domains([f"h{i}.example" for i in range(1001)])


@pytest.mark.parametrize("address", [
    "::169.254.169.254", "::ffff:0:169.254.169.254", "64:ff9b:1::a9fe:a9fe",
    "64:ff9b:1:abcd::a9fe:a9fe", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe",
    "2002:a9fe:a9fe::1", "2001:0:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:5601:5601",
    "::0.0.0.2", "::ffff:0.0.0.0", "64:ff9b::e000:1",
])
def test_ipv4_inside_ipv6_in_every_form_is_judged_as_that_ipv4_metadata_never(
        address: str) -> None:
    """The first finding: ``::a.b.c.d``, ``::ffff:0:a.b.c.d`` and ``64:ff9b:1::/48`` passed
    (left to is_global). The last Teredo one carries 169.254.169.254 as its client (its bits
    inverted)."""
    policy = build_policy(["mirror.example", "*.corp.example"])
    assert not policy.address_allowed(address, "mirror.example"), address
    assert not policy.address_allowed(address, "git.corp.example"), address


@pytest.mark.parametrize("address", [
    "::127.0.0.1", "::ffff:0:127.0.0.1", "::ffff:0:10.0.0.1",
    "64:ff9b::a00:1", "2002:a00:1::1", "::ffff:127.0.0.1", "2001:db8::1", "198.18.0.1",
    "240.0.0.1", "192.0.2.1", "fec0::1", "100::1",
])
def test_ipv4_inside_ipv6_loopback_and_private_only_for_a_name_listed_exactly(
        address: str) -> None:
    policy = build_policy(["mirror.example", "*.corp.example"])
    assert policy.address_allowed(address, "mirror.example"), address
    assert not policy.address_allowed(address, "git.corp.example"), address
    assert not policy.address_allowed(address, "api2.cursor.sh"), address


@pytest.mark.parametrize("address", [
    "140.82.112.3", "::ffff:140.82.112.3", "64:ff9b::8c52:7003",
    "2002:8c52:7003::1", "2606:4700::6810:84e5",
])
def test_a_global_address_in_any_form_is_reached_for_any_allowed_name(address: str) -> None:
    policy = build_policy(["*.corp.example"])
    assert policy.address_allowed(address, "git.corp.example"), address


@pytest.mark.parametrize("address", [
    "64:ff9b:1::7f00:1", "64:ff9b:1::8c52:7003", "64:ff9b:1:a9fe:a9:fe00:808:808",
    "64:ff9b:1:8c:52:7000:300:0",
])
def test_nat64_s_local_use_prefix_is_never_reached_by_a_wildcard_name(address: str) -> None:
    """64:ff9b:1::/48 (RFC 8215) is a network's own: its translator may use a /48, /56, /64 or
    /96 layout, each putting the IPv4 address in other bits. Before, only the last 32 bits
    were read: 64:ff9b:1:a9fe:a9:fe00:808:808 (169.254.169.254 under a /48 layout, 8.8.8.8 in
    the last bits) was reached as a global address."""
    policy = build_policy(["mirror.example", "*.corp.example"])
    assert not policy.address_allowed(address, "git.corp.example"), address
    assert not policy.address_allowed(address, "api2.cursor.sh"), address
    assert judge(address) != GLOBAL
    if address == "64:ff9b:1:a9fe:a9:fe00:808:808":  # metadata under a /48 layout
        assert judge(address) == NEVER_REACHED
