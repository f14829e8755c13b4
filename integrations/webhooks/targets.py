"""Which webhook URLs Gatehouse calls: http(s) only, and not a loopback, private, link-local
or otherwise non-public address unless GATEHOUSE_WEBHOOK_ALLOW_PRIVATE is on (the embedded
default; off under GATEHOUSE_PRODUCTION). Checked when an endpoint is registered and again
for the address actually connected to at send time, so DNS rebinding does not help."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from django.conf import settings

from approvals.policy.hosts import address_scope, is_public_address


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


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, each of them allowed (else TargetRefused)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetRefused(f"cannot resolve {host}: {exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not settings.GATEHOUSE_WEBHOOK_ALLOW_PRIVATE:
        # IPv6 forms that embed IPv4 (NAT64, 6to4, Teredo, mapped) are judged by their IPv4 part
        private = [a for a in addresses if not is_public_address(a)]
        if private:
            raise TargetRefused(
                f"{host} resolves to a {address_scope(private[0])} address ({private[0]}), not a public one; "
                "set GATEHOUSE_WEBHOOK_ALLOW_PRIVATE=1 to allow it"
            )
    return addresses
