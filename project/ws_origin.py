"""The WebSocket origin check: a console socket opens only for a page of the console.

A browser sends cookies with a WebSocket handshake whatever page opened it, and no CSRF
token travels with it, so the Origin is the only thing that says whose page asks. Channels'
AllowedHostsOriginValidator compares the Origin's host name with ALLOWED_HOSTS and ignores
its port: another service on the same host (a dev server on :3000, an app with an XSS)
could open the console's sockets with the reviewer's session. Here the Origin must name
the host *and port* the handshake was sent to (its Host header, without the scheme: behind
a TLS proxy the page is https while the socket reaches Daphne as ws), or be listed in
CSRF_TRUSTED_ORIGINS — the origins Django already trusts for a form post. The Host itself
must be one of ALLOWED_HOSTS (DNS rebinding: evil.example resolved to 127.0.0.1).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": "80", "https": "443"}


def _allowed_hosts() -> list[str]:
    """ALLOWED_HOSTS, with Django's own fallback when DEBUG leaves it empty (get_host())."""
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts


def _served(host: str) -> tuple[str, str] | None:
    """The Host header as (name, port as sent, maybe empty), if it is one of ALLOWED_HOSTS."""
    domain, port = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return None
    return domain, port


def _origin_parts(origin: str) -> tuple[str, str, str] | None:
    """(scheme, name, port) of an http(s) Origin; the port empty when it is the default."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:  # a port out of range, an unbalanced [
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or parts.path not in ("", "/"):
        return None
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    text = "" if port is None or str(port) == DEFAULT_PORTS[parts.scheme] else str(port)
    return parts.scheme, name, text


def _trusted(origin: str, parts: tuple[str, str, str]) -> bool:
    """Listed in CSRF_TRUSTED_ORIGINS, by Django's rules: scheme, host and port exactly, or
    an entry `https://*.example.com` for its subdomains (CsrfViewMiddleware's reading)."""
    netloc = urlsplit(origin).netloc
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        entry = entry.lower()
        if "*" in entry:
            listed = urlsplit(entry)
            if listed.scheme == parts[0] and is_same_domain(netloc, listed.netloc[listed.netloc.index("*") + 1:]):
                return True
        elif _origin_parts(entry) == parts:
            return True
    return False


def _same_place(parts: tuple[str, str, str], served: tuple[str, str]) -> bool:
    """Same host name and port. A Host without a port was sent to the default port of the
    page's scheme (browsers leave it out), so the Origin must not name another one."""
    scheme, name, port = parts
    if name != served[0]:
        return False
    return (port or DEFAULT_PORTS[scheme]) == served[1] if served[1] else not port


def origin_allowed(*, origin: str | None, host: str | None) -> bool:
    """May a WebSocket handshake with this Origin header, sent with this Host header, open?"""
    if not origin or not host:
        return False
    served = _served(host.lower())
    parts = _origin_parts(origin.lower())
    if served is None or parts is None:
        return False
    return _same_place(parts, served) or _trusted(origin.lower(), parts)


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class SameOriginValidator:
    """ASGI middleware for the WebSocket router: refuses the handshake unless origin_allowed."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            raise ValueError("SameOriginValidator guards WebSocket connections only")
        if origin_allowed(origin=_header(scope, b"origin"), host=_header(scope, b"host")):
            return await self.application(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
