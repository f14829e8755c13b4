"""Addresses a fetch must not reach without a person: a cloud's metadata service.

`curl http://169.254.169.254/latest/meta-data/iam/security-credentials/` is a plain GET —
read-only by its class — yet on a cloud machine it returns the machine's credentials
(AWS, Azure, GCP's `metadata.google.internal`, Alibaba's 100.100.100.200, ECS task
credentials at 169.254.170.2, AWS's IPv6 `fd00:ec2::254`). The address is recognised in
every spelling the C library accepts (`0xa9fea9fe`, `2852039166`, `0251.0376.0251.0376`,
`169.254.43518`, `[::ffff:169.254.169.254]`) and inside wildcard-DNS names that spell it
(`169.254.169.254.nip.io`, `169-254-169-254.sslip.io`). A name that only resolves there
(DNS the policy does not query) is not recognised: the README says so.
"""

from __future__ import annotations

import ipaddress
import re
import socket

_LINK_LOCAL = ipaddress.ip_network("169.254.0.0/16")
_ADDRESSES = frozenset({ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254")})
_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                    "instance-data.ec2.internal", "metadata.azure.com", "metadata.tencentyun.com"})
_SPELLED = re.compile(r"(?:^|[.-])169[.-]254[.-]\d{1,3}[.-]\d{1,3}(?:[.-]|$)|(?:^|[.-])a9fe[0-9a-f]{4}(?:[.-]|$)")
_URL_HOST = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:[^/@?#]*@)?(\[[^\]]*\]|[^/:?#]*)")


def host_of(url: str) -> str:
    """The host part of a URL or of `host[:port][/path]` as curl and wget take it."""
    found = _URL_HOST.match(url.strip())
    host = found.group(1) if found else ""
    return host.strip("[]").rstrip(".").lower()


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        try:
            # the C library's spellings: one to four parts, each decimal, octal or hex
            address = ipaddress.ip_address(socket.inet_aton(host))
        except (OSError, ValueError):
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def metadata_service(url: str) -> bool:
    """Whether a URL (or a bare host) names a cloud metadata service."""
    host = host_of(url)
    if not host:
        return False
    if host in _NAMES:
        return True
    address = _address(host)
    if address is not None:
        return address in _ADDRESSES or (address.version == 4 and address in _LINK_LOCAL)
    return _SPELLED.search(host) is not None


# ---- Is an address public? ---------------------------------------------------------------
# Used wherever Gatehouse connects on someone else's behalf (webhooks, the egress proxy):
# a connection to anything but a public address needs the administrator to name it.

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4_SCOPES: tuple[tuple[str, ipaddress.IPv4Network], ...] = tuple(
    (scope, ipaddress.IPv4Network(net)) for scope, net in (
        ("unspecified", "0.0.0.0/8"), ("loopback", "127.0.0.0/8"), ("private", "10.0.0.0/8"),
        ("private", "172.16.0.0/12"), ("private", "192.168.0.0/16"), ("shared", "100.64.0.0/10"),
        ("link-local", "169.254.0.0/16"), ("multicast", "224.0.0.0/4"), ("reserved", "240.0.0.0/4"),
    )
)
_V6_SCOPES: tuple[tuple[str, ipaddress.IPv6Network], ...] = tuple(
    (scope, ipaddress.IPv6Network(net)) for scope, net in (
        ("link-local", "fe80::/10"), ("private", "fc00::/7"), ("private", "fec0::/10"), ("multicast", "ff00::/8"),
    )
)
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT, RFC 2765
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_SCOPE_ORDER = ("loopback", "metadata", "link-local", "private", "shared", "multicast", "unspecified", "reserved")
_METADATA = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("169.254.170.2"), *_ADDRESSES})


def _v4(bits: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(bits & 0xFFFFFFFF)


def _rfc6052(value: int, prefix: int) -> ipaddress.IPv4Address:
    """The IPv4 address a NAT64 prefix of length `prefix` embeds (RFC 6052 §2.2): it starts
    right after the prefix and skips bits 64–71, which are always zero."""
    if prefix == 96:
        return _v4(value)
    squeezed = (value >> 64) << 56 | value & ((1 << 56) - 1)  # 120 bits: bits 64–71 dropped
    return _v4(squeezed >> (120 - prefix - 32))


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries, where it is a form that embeds one:
    IPv4-mapped and -translated, IPv4-compatible, NAT64 (well-known and local-use), 6to4,
    Teredo (the client: the last 32 bits inverted). The local-use NAT64 prefix may be any
    length from /48 to /96, so every position it allows is returned. Empty otherwise."""
    value = int(address)
    if address in _MAPPED or address in _TRANSLATED or address in _NAT64:
        return (_v4(value),)
    if address in _COMPATIBLE and value > 1:  # `::` and `::1` are themselves
        return (_v4(value),)
    if address in _NAT64_LOCAL:
        return tuple(dict.fromkeys(_rfc6052(value, prefix) for prefix in (48, 56, 64, 96)))
    if address in _SIX_TO_FOUR:
        return (_v4(value >> 80),)
    if address in _TEREDO:
        return (_v4(~value),)
    return ()


def _scope_v4(address: ipaddress.IPv4Address) -> str:
    if address in _METADATA:
        return "metadata"
    for scope, network in _V4_SCOPES:
        if address in network:
            return scope
    return "public" if address.is_global else "reserved"  # documentation, benchmarking, IETF ranges


def _scope_v6(address: ipaddress.IPv6Address) -> str:
    if address in _METADATA:
        return "metadata"
    if address == ipaddress.IPv6Address("::"):
        return "unspecified"
    if address == ipaddress.IPv6Address("::1"):
        return "loopback"
    embedded = embedded_ipv4(address)
    if embedded:
        # the most telling of them: a form that may carry a loopback address is loopback
        scopes = {_scope_v4(v4) for v4 in embedded}
        return next((s for s in _SCOPE_ORDER if s in scopes), "public")
    for scope, network in _V6_SCOPES:
        if address in network:
            return scope
    return "public" if address.is_global else "reserved"


def parse_address(text: str) -> IPAddress | None:
    """An IP address written canonically (dotted quad, IPv6 with or without brackets and a
    `%zone`), or None. The C library's other IPv4 spellings are not addresses here."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def address_scope(address: str | IPAddress) -> str:
    """Where an address leads: `public`, or why not — `loopback`, `private`, `link-local`,
    `metadata` (a cloud's metadata service), `shared` (carrier-grade NAT), `multicast`,
    `unspecified` or `reserved`. IPv6 forms that embed an IPv4 address are judged by it
    (`64:ff9b::7f00:1` and `2002:7f00:1::` are loopback). ValueError for a non-address."""
    ip = address if isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address) else parse_address(address)
    if ip is None:
        raise ValueError(f"not an IP address: {address!r}")
    return _scope_v4(ip) if isinstance(ip, ipaddress.IPv4Address) else _scope_v6(ip)


def is_public_address(address: str | IPAddress) -> bool:
    """Whether connecting to `address` leaves for the public internet (see `address_scope`)."""
    return address_scope(address) == "public"
