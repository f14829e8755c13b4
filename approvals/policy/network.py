"""The rule policy's `network` section: which hosts a run may connect to through the egress proxy.

    {"network": {"allow": ["pypi.org", "*.npmjs.org:443", {"match": "10.0.0.5:8080", "reason": "CI cache"}],
                 "deny": ["*.pastebin.com"], "default": "ask"}}

An entry is a host with an optional port (`host`, `host:port`, `[v6]:port`); the host is a
DNS name, `*.` and a name (any name below it, not the name itself), `*` (any host) or an
IP address. Decided in this order:

1. a `deny` entry naming the host, or an address it resolves to, refuses (deny beats allow);
2. the floor: a loopback, private, link-local (the metadata service included), shared or
   otherwise non-public address is never reachable unless an `allow` entry names it
   explicitly — that address, or the host by its exact name; a `*` glob never does;
3. an `allow` entry naming the host (or, for an address entry, every address it resolves to)
   allows;
4. otherwise `default` (`ask` unless the section says `allow` or `deny`).

`network_screen` answers what the name alone decides, so the proxy never looks up a name
it would refuse anyway (each lookup carries the name to its DNS servers).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import json_type
from .hosts import IPAddress, address_scope, parse_address
from .verdicts import ALLOW, ASK, DENY, Decision

NETWORK_DECISIONS = (ALLOW, ASK, DENY)
_KEYS = ("allow", "deny", "default")
_ENTRY_KEYS = ("match", "reason")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")

Problems = Callable[[str, str, Any], None]  # (field, message, value), as `rules._Problems` takes them


@dataclass(frozen=True, slots=True)
class HostRule:
    label: str  # "network.allow[2]"
    host: str  # "pypi.org", "*.npmjs.org", "*", "10.0.0.5", "::1"
    port: int | None
    reason: str | None = None
    address: IPAddress | None = None  # set when `host` is an IP address

    @property
    def explicit(self) -> bool:
        """Names one host or address (may open the floor), unlike a glob."""
        return "*" not in self.host

    def names(self, host: str, port: int) -> bool:
        """Whether this entry names `host` (canonical) at `port`."""
        if self.port is not None and self.port != port:
            return False
        if self.host == "*" or self.host == host:
            return True
        return self.host.startswith("*.") and host.endswith(self.host[1:]) and parse_address(host) is None

    def names_address(self, address: IPAddress, port: int) -> bool:
        return (self.port is None or self.port == port) and self.address == address


@dataclass(frozen=True)
class NetworkPolicy:
    allow: tuple[HostRule, ...] = ()
    deny: tuple[HostRule, ...] = ()
    default: Decision = ASK


@dataclass(frozen=True, slots=True)
class NetworkVerdict:
    decision: Decision  # allow, ask or deny
    rule: str | None  # "network.allow[0]", "network.default"; None: the floor or a malformed host
    reason: str


DEFAULT_NETWORK = NetworkPolicy()  # a policy without a network section: every host is asked


def canonical_host(host: str) -> str | None:
    """`host` as rules match it (lower case, no trailing dot, IPv6 without brackets), or None
    when it is neither a DNS name nor an address written canonically. Refused: control
    characters and NUL (a C resolver would stop there), non-ASCII (send `xn--` names),
    empty or over-long labels, and the C library's other spellings of IPv4 (`2130706433`,
    `0x7f.1`, `127.1`), which would resolve to an address no rule names."""
    if not host or len(host) > 255 or not host.isascii():
        return None
    if host.startswith("["):
        address = parse_address(host) if host.endswith("]") and "%" not in host else None
        return None if address is None or address.version != 6 else str(address)
    host = host.lower().removesuffix(".")
    if ":" in host:
        address = parse_address(host) if "%" not in host else None
        return None if address is None else str(address)
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        return None
    if labels[-1].isdigit() or _c_library_address(host):
        address = parse_address(host)
        return None if address is None else str(address)
    return host


def _c_library_address(host: str) -> bool:
    try:
        socket.inet_aton(host)  # pure: parses `0x7f000001`, `127.1`, never asks DNS
    except OSError:
        return False
    return True


# ---- validation ------------------------------------------------------------------------------

def _entry_problem(text: str) -> str | tuple[str, int | None]:
    """(host, port) of an entry, or what is wrong with it."""
    if not text.strip():
        return "is empty: write a host such as `pypi.org` or `*.npmjs.org:443`"
    if "://" in text or "/" in text:
        return "write a host with an optional port (`pypi.org:443`), not a URL or an address range"
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return "contains a space or a control character"
    host, port_text = _split_port(text)
    if host is None:
        return "an IPv6 address with a port is written `[address]:port`"
    port = None
    if port_text is not None:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            return f"the port must be a number from 1 to 65535 (got {port_text!r})"
        port = int(port_text)
    if host == "*":
        return host, port
    if "*" in host:
        if not host.startswith("*.") or "*" in host[2:]:
            return "`*` stands only for a whole first label (`*.example.com`) or the whole host (`*`)"
        below = canonical_host(host[2:])
        if below is None or parse_address(below) is not None:
            return f"`{host[2:]}` is not a host name"
        return "*." + below, port
    if not host.isascii():
        return "write an internationalised name in its ASCII form (`xn--…`)"
    canonical = canonical_host(host)
    if canonical is None:
        numeric = _c_library_address(host.removesuffix("."))
        return ("write an IPv4 address as four decimal numbers (`127.0.0.1`)" if numeric
                else f"`{host}` is not a host name or an IP address")
    return canonical, port


def host_rule(text: str, label: str = "grant") -> HostRule:
    """One host entry written as the section writes them (a session grant's `match`) as a
    rule; ValueError saying what is wrong. `*` alone is refused: a grant names hosts."""
    found = _entry_problem(text) if isinstance(text, str) else "must be a string"
    if isinstance(found, str):
        raise ValueError(f"`{text}` {found}")
    host, port = found
    if host == "*":
        raise ValueError("a grant names a host (`pypi.org`, `*.npmjs.org`), not every host (`*`)")
    return HostRule(label, host, port, None, parse_address(host))


def _split_port(text: str) -> tuple[str | None, str | None]:
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None, None
        rest = text[end + 1:]
        return (text[:end + 1], rest[1:]) if rest.startswith(":") else (text[:end + 1], None if not rest else rest)
    if text.count(":") > 1:
        return (text, None) if parse_address(text) is not None else (None, None)
    host, colon, port = text.partition(":")
    return host, (port if colon else None)


def _entries(value: Any, field: str, problems: Problems) -> tuple[HostRule, ...]:
    if not isinstance(value, list):
        problems(field, f"must be a list of hosts (got {json_type(value)})", value)
        return ()
    rules = []
    for i, entry in enumerate(value):
        where, reason, text = f"{field}[{i}]", None, entry
        if isinstance(entry, Mapping):
            for key in entry:
                if key not in _ENTRY_KEYS:
                    problems(f"{where}.{key}", f"unknown key {key!r} in {where} (expected one of match, reason)",
                             entry[key])
            reason = entry.get("reason")
            if reason is not None and (not isinstance(reason, str) or not reason.strip()):
                problems(f"{where}.reason", "must be a non-empty string", reason)
            text, where = entry.get("match"), f"{where}.match"
        if not isinstance(text, str):
            problems(where, f"a network rule must be a host (a string) or an object with \"match\" "
                            f"(got {json_type(text)})", text)
            continue
        parsed = _entry_problem(text)
        if isinstance(parsed, str):
            problems(where, parsed, text)
            continue
        host, port = parsed
        rules.append(HostRule(f"{field}[{i}]", host, port, reason if isinstance(reason, str) else None,
                              None if "*" in host else parse_address(host)))
    return tuple(rules)


def read_network(value: Any, problems: Problems) -> NetworkPolicy | None:
    """The `network` section, validated: each problem reported as `network.allow[2]: …`."""
    if not isinstance(value, Mapping):
        problems("network", f"must be an object with allow, deny and default (got {json_type(value)})", value)
        return None
    found: list[str] = []

    def counting(field: str, message: str, bad: Any) -> None:
        found.append(field)
        problems(field, message, bad)

    parts: dict[str, Any] = {}
    for key, entries in value.items():
        if key in ("allow", "deny"):
            parts[key] = _entries(entries, f"network.{key}", counting)
        elif key == "default":
            if entries in NETWORK_DECISIONS:
                parts["default"] = Decision(entries)
            else:
                got = repr(entries) if isinstance(entries, str) else json_type(entries)
                counting("network.default", f"must be one of {', '.join(NETWORK_DECISIONS)} (got {got})", entries)
        else:
            hint = "; the hosts to ask about are the ones no rule names" if key == "ask" else ""
            counting(f"network.{key}", f"unknown key {key!r} in network (expected one of "
                                       f"{', '.join(_KEYS)}){hint}", entries)
    return None if found else NetworkPolicy(**parts)


def network_policy(section: Any) -> NetworkPolicy:
    """A validated `network` section on its own (ValueError naming the first problem)."""
    found: list[str] = []
    policy = read_network(section, lambda field, message, _value: found.append(f"{field}: {message}"))
    if policy is None:
        raise ValueError(found[0])
    return policy


# ---- deciding --------------------------------------------------------------------------------

def _first(rules: Iterable[HostRule], host: str, port: int, addresses: Iterable[IPAddress] = ()) -> HostRule | None:
    addresses = tuple(addresses)
    for rule in rules:
        if rule.names(host, port) or any(rule.names_address(a, port) for a in addresses):
            return rule
    return None


def _because(rule: HostRule, verb: str, host: str, port: int) -> str:
    written = rule.host if rule.port is None else f"{rule.host}:{rule.port}"
    return rule.reason or f"{rule.label} (`{written}`) {verb} {host}:{port}"


def _floor(policy: NetworkPolicy, host: str, port: int, addresses: tuple[IPAddress, ...]) -> NetworkVerdict | None:
    """The refusal of a non-public address nobody named explicitly, if any."""
    by_name = any(rule.explicit and rule.address is None and rule.names(host, port) for rule in policy.allow)
    for address in addresses:
        scope = address_scope(address)
        if scope == "public" or by_name:
            continue
        if any(rule.explicit and rule.names_address(address, port) for rule in policy.allow):
            continue
        where = f"{address} is" if str(address) == host else f"{host} resolves to {address},"
        return NetworkVerdict(DENY, None, f"{where} a {scope} address: never reachable unless network.allow "
                                          f"names it explicitly")
    return None


def network_screen(policy: NetworkPolicy, host: str, port: int) -> NetworkVerdict | None:
    """The refusal the name alone decides (a deny entry, or a `deny` default no allow entry
    could lift), so the proxy need not look the name up; None: resolve, then `network_decide`."""
    canonical = canonical_host(host)
    if canonical is None:
        return NetworkVerdict(DENY, None, f"{host!r} is not a host name or an IP address")
    if parse_address(canonical) is not None:  # nothing to look up: the whole decision, if a refusal
        verdict = network_decide(policy, canonical, port, ())
        return verdict if verdict.decision == DENY else None
    hit = _first(policy.deny, canonical, port)
    if hit is not None:
        return NetworkVerdict(DENY, hit.label, _because(hit, "refuses", canonical, port))
    if policy.default == DENY and not any(r.names(canonical, port) or r.address is not None for r in policy.allow):
        return NetworkVerdict(DENY, "network.default", f"no network rule allows {canonical}:{port}")
    return None


def network_decide(policy: NetworkPolicy, host: str, port: int, addresses: Iterable[str | IPAddress]) -> NetworkVerdict:
    """Whether a connection to `host:port`, which resolved to `addresses` (the ones the proxy
    will connect to; empty when `host` is itself an address), is allowed, asked or refused,
    the rule that said so and why."""
    canonical = canonical_host(host)
    if canonical is None:
        return NetworkVerdict(DENY, None, f"{host!r} is not a host name or an IP address")
    resolved = tuple(a if isinstance(a, ipaddress.IPv4Address | ipaddress.IPv6Address) else ipaddress.ip_address(a)
                     for a in addresses)
    literal = parse_address(canonical)
    if literal is not None:
        resolved = (literal, *(a for a in resolved if a != literal))
    hit = _first(policy.deny, canonical, port, resolved)
    if hit is not None:
        return NetworkVerdict(DENY, hit.label, _because(hit, "refuses", canonical, port))
    refused = _floor(policy, canonical, port, resolved)
    if refused is not None:
        return refused
    hit = _first((r for r in policy.allow if r.address is None), canonical, port)
    if hit is None and resolved:
        named = [next((r for r in policy.allow if r.names_address(a, port)), None) for a in resolved]
        hit = named[0] if all(named) else None
    if hit is not None:
        return NetworkVerdict(ALLOW, hit.label, _because(hit, "allows", canonical, port))
    verb = {ALLOW: "allowed", ASK: "asked", DENY: "refused"}[policy.default]
    return NetworkVerdict(policy.default, "network.default",
                          f"no network rule names {canonical}:{port}, so it is {verb} (network.default)")
