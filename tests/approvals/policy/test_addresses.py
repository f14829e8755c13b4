"""Is an address public? Every IPv6 form that embeds an IPv4 address is judged by that
IPv4 address, so no spelling of loopback, a private network or the metadata service passes."""

import ipaddress

import pytest

from approvals.policy.hosts import address_scope, embedded_ipv4, is_public_address


@pytest.mark.parametrize("address, scope", [
    # IPv4
    ("8.8.8.8", "public"),
    ("127.0.0.1", "loopback"), ("127.255.0.9", "loopback"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "metadata"), ("169.254.170.2", "metadata"), ("100.100.100.200", "metadata"),
    ("169.254.1.1", "link-local"),
    ("100.64.0.1", "shared"), ("100.127.255.254", "shared"),
    ("224.0.0.1", "multicast"), ("239.1.1.1", "multicast"),
    ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"),
    ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"), ("192.0.2.1", "reserved"), ("198.18.0.1", "reserved"),
    # IPv6 of its own
    ("2606:4700:4700::1111", "public"),
    ("::1", "loopback"), ("[::1]", "loopback"), ("::", "unspecified"),
    ("fe80::1", "link-local"), ("fe80::1%eth0", "link-local"),
    ("fd12:3456::1", "private"), ("fd00:ec2::254", "metadata"), ("fec0::1", "private"),
    ("ff02::1", "multicast"), ("2001:db8::1", "reserved"),
    # IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:7f00:1", "loopback"), ("::ffff:169.254.169.254", "metadata"),
    ("::ffff:8.8.8.8", "public"), ("::ffff:0:10.0.0.1", "private"),
    # IPv4-compatible ::/96
    ("::127.0.0.1", "loopback"), ("::7f00:1", "loopback"), ("::10.0.0.1", "private"), ("::8.8.8.8", "public"),
    # NAT64, well-known prefix 64:ff9b::/96
    ("64:ff9b::7f00:1", "loopback"), ("64:ff9b::127.0.0.1", "loopback"), ("64:ff9b::a9fe:a9fe", "metadata"),
    ("64:ff9b::c0a8:101", "private"), ("64:ff9b::808:808", "public"),
    # NAT64, local-use prefix 64:ff9b:1::/48 (RFC 8215): every position RFC 6052 allows is judged
    ("64:ff9b:1::7f00:1", "loopback"), ("64:ff9b:1:7f00:0:100::", "loopback"), ("64:ff9b:1::a9fe:a9fe", "metadata"),
    ("64:ff9b:1:808:8:800::", "unspecified"),  # a local prefix is never public, whatever it carries
    # 6to4 2002::/16: bits 16–47
    ("2002:7f00:1::", "loopback"), ("2002:a00:1::1", "private"), ("2002:a9fe:a9fe::", "metadata"),
    ("2002:808:808::1", "public"),
    # Teredo 2001::/32: the client is the last 32 bits inverted
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),   # ~80ff:fffe = 127.0.0.1
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),    # ~f5ff:fffe = 10.0.0.1
    ("2001:0:4136:e378:8000:63bf:5601:5601", "metadata"),   # ~5601:5601 = 169.254.169.254
    ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", "public"),     # ~f7f7:f7f7 = 8.8.8.8
])
def test_each_address_is_judged_by_where_it_leads(address, scope):
    assert address_scope(address) == scope
    assert is_public_address(address) is (scope == "public")


@pytest.mark.parametrize("address, embedded", [
    ("64:ff9b::7f00:1", ["127.0.0.1"]),
    ("2002:7f00:1::", ["127.0.0.1"]),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", ["127.0.0.1"]),
    ("::ffff:10.0.0.1", ["10.0.0.1"]),
    ("64:ff9b:1:7f00:0:100::", ["127.0.0.1", "0.0.1.0", "0.1.0.0", "0.0.0.0"]),  # /48, /56, /64, /96
    ("2606:4700::1111", []),
    ("::1", []), ("::", []),
])
def test_the_embedded_ipv4_address_is_read_from_its_place(address, embedded):
    assert [str(a) for a in embedded_ipv4(ipaddress.IPv6Address(address))] == embedded


@pytest.mark.parametrize("text", ["localhost", "2130706433", "0x7f000001", "127.1", "", "1.2.3.4.5", "[::1"])
def test_only_canonical_addresses_are_addresses(text):
    with pytest.raises(ValueError):
        address_scope(text)


@pytest.mark.parametrize("address, position", [
    # RFC 6052 §2.4's examples of 192.0.2.33, moved under the local-use prefix
    ("64:ff9b:1:c000:2:2100::", 0),        # /48
    ("64:ff9b:1:3c0:0:221::", 1),          # /56
    ("64:ff9b:1:344:c0:2:2100:0", 2),      # /64
    ("64:ff9b:1:344::192.0.2.33", 3),      # /96
])
def test_local_use_nat64_is_read_at_every_prefix_length(address, position):
    assert str(embedded_ipv4(ipaddress.IPv6Address(address))[position]) == "192.0.2.33"
