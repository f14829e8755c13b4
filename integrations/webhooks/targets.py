"""Which webhook URLs Gatehouse calls: http(s) only, and not a loopback, private, link-local
or otherwise non-public address unless GATEHOUSE_WEBHOOK_ALLOW_PRIVATE is on (the embedded
default; off under GATEHOUSE_PRODUCTION). Checked when an endpoint is registered and again
for the address actually connected to at send time, so DNS rebinding does not help."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings


class TargetRefused(Exception):
    pass


def check_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an acceptable URL; TargetRefused saying why not."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("the URL must start with http:// or https://")
    if not parts.hostname:
        raise TargetRefused("the URL has no host")
    if parts.username or parts.password:
        raise TargetRefused("credentials in the URL are not accepted; use the signing secret")
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, each of them allowed (else TargetRefused)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetRefused(f"cannot resolve {host}: {exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not settings.GATEHOUSE_WEBHOOK_ALLOW_PRIVATE:
        private = [a for a in addresses if not _is_public(a)]
        if private:
            raise TargetRefused(
                f"{host} resolves to a loopback or private address ({private[0]}); "
                "set GATEHOUSE_WEBHOOK_ALLOW_PRIVATE=1 to allow it"
            )
    return addresses
