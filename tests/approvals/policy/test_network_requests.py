"""A connection leaving the sandbox floor is a request of its own (`tool: network`), decided
by the rule policy's `network` section; "always allow this host" is a session grant that
covers that host only, never an address the section keeps out (issue 28)."""

from __future__ import annotations

import pytest

from approvals.policy import PolicyError, compile_policy, evaluate, suggest_grant, validate_grant, validate_request

POLICY = compile_policy({"network": {"allow": ["pypi.org", "*.npmjs.org:443"], "deny": ["*.pastebin.com"], "default": "ask"}})


def connect(host: str, port: int = 443, addresses: tuple[str, ...] = ("93.184.216.34",), **kw):
    request = {"tool": "network", "input": {"host": host, "port": port, "addresses": list(addresses)}, "cwd": "/ws"}
    return request, evaluate(POLICY, request, **kw)


@pytest.mark.parametrize(("host", "port", "addresses", "decision", "rule"), [
    ("pypi.org", 443, ("151.101.0.223",), "allow", "network.allow[0]"),
    ("registry.npmjs.org", 443, ("104.16.0.35",), "allow", "network.allow[1]"),
    ("registry.npmjs.org", 80, ("104.16.0.35",), "ask", "network.default"),
    ("example.com", 443, ("93.184.216.34",), "ask", "network.default"),
    ("x.pastebin.com", 443, ("1.2.3.4",), "deny", "network.deny[0]"),
    # the floor: non-public addresses are never reachable unless named explicitly
    ("localhost", 8000, ("127.0.0.1",), "deny", "network.floor"),
    ("169.254.169.254", 80, (), "deny", "network.floor"),
    ("rebind.example", 443, ("10.0.0.5",), "deny", "network.floor"),
    ("v6.example", 443, ("64:ff9b::7f00:1",), "deny", "network.floor"),
])
def test_the_network_section_decides_a_connection(host, port, addresses, decision, rule):
    _, verdict = connect(host, port, addresses)
    assert (verdict.decision, verdict.rule, verdict.side_effect_class) == (decision, rule, "remote-mutation")
    assert host in verdict.reason  # (the card says which host, whichever part of the section decided)


def test_always_allow_this_host_is_a_grant_for_that_host_only():
    request, verdict = connect("example.com")
    grant, label = suggest_grant(request, verdict)
    assert (grant, label) == ({"tool": "network", "match": "example.com"}, "Always allow example.com in this session")
    assert evaluate(POLICY, request, grants=[grant]).decision == "allow"
    other, _ = connect("evil.example")
    assert evaluate(POLICY, other, grants=[grant]).decision == "ask"
    # never an address the section keeps out, whatever the grant names
    private, _ = connect("example.com", addresses=("127.0.0.1",))
    assert evaluate(POLICY, private, grants=[grant]).decision == "deny"
    # a grant with a port covers that port only
    ported = {"tool": "network", "match": "example.com:8443"}
    assert evaluate(POLICY, connect("example.com", 8443)[0], grants=[ported]).decision == "allow"
    assert evaluate(POLICY, request, grants=[ported]).decision == "ask"


def test_no_grant_is_offered_for_a_refused_host():
    request, verdict = connect("x.pastebin.com")
    assert suggest_grant(request, verdict) is None


@pytest.mark.parametrize("match", ["*", "https://example.com", "exa mple.com", "example.com:0", ""])
def test_a_network_grant_names_one_host(match):
    with pytest.raises(PolicyError):
        validate_grant({"tool": "network", "match": match})


@pytest.mark.parametrize(("tool_input", "field"), [
    ({"port": 443}, "input.host"),
    ({"host": "x", "port": 0}, "input.port"),
    ({"host": "x", "port": True}, "input.port"),
    ({"host": "x", "port": 443, "addresses": "1.2.3.4"}, "input.addresses"),
])
def test_a_malformed_network_request_is_refused(tool_input, field):
    with pytest.raises(PolicyError) as refused:
        validate_request({"tool": "network", "input": tool_input})
    assert refused.value.field == field


def test_without_a_network_section_every_public_host_is_asked():
    request = {"tool": "network", "input": {"host": "pypi.org", "port": 443, "addresses": ["151.101.0.223"]}}
    assert evaluate(compile_policy({"default": "allow"}), request).decision == "ask"
