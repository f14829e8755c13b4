"""Model endpoints a driver's agent must reach, turned into the floor's bridges.

Inside the floor's network namespace nothing is reachable. A loopback endpoint (a local
model server, the tests' fakes on 127.0.0.1:<port>) is bridged on its own address and
port, so the URL the agent was given stays the same. A remote model host
(`https://api.anthropic.com`) gets a loopback address of its own inside (127.0.0.2, .3, …)
that the floor's /etc/hosts gives its name: the agent connects to the real host name, TLS
and its certificate included, and Gatehouse connects out. Every other host is the egress
proxy's to decide (`Floor.with_proxy`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from .spec import Bridge

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class EndpointError(ValueError):
    """A model endpoint the floor cannot bridge (the message says why)."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def endpoint_of(url: str) -> tuple[str, int]:
    """(host, port) of a model endpoint URL; `EndpointError` for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise EndpointError(f"model endpoint {url!r} is not a URL: {exc}") from None
    host = (parts.hostname or "").lower()
    if parts.scheme not in DEFAULT_PORTS or not host:
        raise EndpointError(f"model endpoint {url!r} is not an http(s) URL with a host")
    return host, port or DEFAULT_PORTS[parts.scheme]


def bridges_for(urls: Iterable[str], *, taken: Iterable[Bridge] = ()) -> list[Bridge]:
    """The bridges that make each URL reachable inside the floor (empty URLs are skipped)."""
    bridges: list[Bridge] = []
    known = list(taken)
    for url in urls:
        if not url or not str(url).strip():
            continue
        host, port = endpoint_of(str(url))
        if _loopback(host):
            inside = ("127.0.0.1", "::1") if host == "localhost" else (host,)
            bridges += [Bridge(address, port, host, port) for address in inside]
        elif _literal(host):
            raise EndpointError(f"model endpoint {url!r}: an IP address outside loopback cannot be reached inside "
                                "the sandbox floor; name the host instead (its name is mapped inside)")
        else:
            bridges.append(Bridge(_address_for(host, [*known, *bridges]), port, host, port, name=host))
    return bridges


def _address_for(name: str, bridges: list[Bridge]) -> str:
    """The loopback address a remote host name gets inside (one per name, from 127.0.0.2)."""
    for bridge in bridges:
        if bridge.name == name:
            return bridge.inside_host
    used = {b.inside_host for b in bridges}
    number = 2
    while f"127.0.0.{number}" in used:
        number += 1
    if number > 254:
        raise EndpointError("too many model hosts for one sandbox floor")
    return f"127.0.0.{number}"


def urls_in_env(env: Mapping[str, str]) -> list[str]:
    """The endpoints an agent's environment names: every `*_BASE_URL` variable holding an
    http(s) URL (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL, ...)."""
    return [value for name, value in sorted(env.items())
            if name.upper().endswith("_BASE_URL") and value.strip().lower().startswith(("http://", "https://"))]


def hosts_file(bridges: Iterable[Bridge], system_hosts: str) -> str | None:
    """The floor's /etc/hosts: the system's, then each bridged remote host's loopback
    address (None when no bridge needs a name)."""
    named = {b.name: b.inside_host for b in bridges if b.name}
    if not named:
        return None
    lines = [system_hosts.rstrip("\n"), "# Model hosts bridged by Gatehouse's sandbox floor"]
    lines += [f"{address} {name}" for name, address in sorted(named.items())]
    return "\n".join(lines) + "\n"
