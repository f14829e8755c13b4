"""Model endpoints a driver's agent must reach, turned into the floor's bridges.

Inside the floor's network namespace nothing is reachable. A loopback endpoint (a local
model server, the tests' fakes on 127.0.0.1:<port>) is bridged on its own address and
port, so the URL the agent was given stays the same. A remote model host
(`https://api.anthropic.com`) is reached through the egress proxy (`Floor.with_proxy`),
which the agents' HTTP clients use through HTTPS_PROXY: the floor records it in
`Floor.model_hosts`, for the proxy to let through without asking. (Bridging it directly
would need a listener on port 443 inside, which no process of the floor may bind: it has
no capability, and bwrap's network namespace keeps the unprivileged port floor at 1024.)
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True)
class Bridge:
    """A TCP address inside the floor that reaches one address outside.

    Inside, a listener on `inside_host:inside_port` (loopback) forwards each connection over
    a Unix socket to Gatehouse, which connects to `target_host:target_port`: a loopback
    model endpoint, bridged on its own address and port so that its URL stays the same."""

    inside_host: str
    inside_port: int
    target_host: str
    target_port: int


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


def reach(urls: Iterable[str]) -> tuple[list[Bridge], list[str]]:
    """The bridges for the loopback endpoints among `urls`, and the remote ones as
    `host:port` (the egress proxy's; empty URLs are skipped)."""
    bridges: list[Bridge] = []
    remote: list[str] = []
    for url in urls:
        if not url or not str(url).strip():
            continue
        host, port = endpoint_of(str(url))
        if _loopback(host):
            inside = ("127.0.0.1", "::1") if host == "localhost" else (host,)
            bridges += [Bridge(address, port, host, port) for address in inside]
        else:
            remote.append(f"[{host}]:{port}" if _literal(host) and ":" in host else f"{host}:{port}")
    return bridges, remote


def urls_in_env(env: Mapping[str, str]) -> list[str]:
    """The endpoints an agent's environment names: every `*_BASE_URL` variable holding an
    http(s) URL (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL, ...)."""
    return [value for name, value in sorted(env.items())
            if name.upper().endswith("_BASE_URL") and value.strip().lower().startswith(("http://", "https://"))]
