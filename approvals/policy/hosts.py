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
