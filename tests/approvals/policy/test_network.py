"""The rule policy's `network` section: host globs with an optional port, deny beats allow,
and no loopback, private or metadata address unless the administrator names it explicitly."""

import pytest

from approvals.policy import PolicyError, compile_policy, policy_problems
from approvals.policy.network import (
    DEFAULT_NETWORK,
    canonical_host,
    network_decide,
    network_policy,
    network_screen,
)

POLICY = network_policy({
    "allow": ["pypi.org", "*.npmjs.org:443", "files.pythonhosted.org:443", "localhost:8000",
              {"match": "10.0.0.5:8080", "reason": "The CI cache."}, "[fd00::7]", "cache.internal",
              "*.corp.example"],
    "deny": ["*.pastebin.com", "evil.npmjs.org", "203.0.113.9"],
    "default": "ask",
})
PUBLIC = ["151.101.0.223"]


@pytest.mark.parametrize("host, port, addresses, decision, rule", [
    # allow entries: exact names, globs below a name (not the name itself), ports
    ("pypi.org", 443, PUBLIC, "allow", "network.allow[0]"),
    ("PyPI.org.", 80, PUBLIC, "allow", "network.allow[0]"),
    ("registry.npmjs.org", 443, PUBLIC, "allow", "network.allow[1]"),
    ("a.b.npmjs.org", 443, PUBLIC, "allow", "network.allow[1]"),
    ("registry.npmjs.org", 80, PUBLIC, "ask", "network.default"),  # the glob names port 443 only
    ("npmjs.org", 443, PUBLIC, "ask", "network.default"),  # `*.` is below the name
    ("evilnpmjs.org", 443, PUBLIC, "ask", "network.default"),
    ("files.pythonhosted.org", 443, PUBLIC, "allow", "network.allow[2]"),
    ("example.com", 443, PUBLIC, "ask", "network.default"),
    # deny beats allow, by name, glob or address
    ("evil.npmjs.org", 443, PUBLIC, "deny", "network.deny[1]"),
    ("x.pastebin.com", 443, PUBLIC, "deny", "network.deny[0]"),
    ("pypi.org", 443, ["203.0.113.9"], "deny", "network.deny[2]"),
    # the floor: non-public addresses only where an allow entry names them explicitly
    ("localhost", 8000, ["127.0.0.1"], "allow", "network.allow[3]"),
    ("localhost", 8001, ["127.0.0.1"], "deny", None),  # named for port 8000 only
    ("127.0.0.1", 8000, [], "deny", None),  # the name was listed, not the address
    ("pypi.org", 443, ["127.0.0.1"], "allow", "network.allow[0]"),  # the exact name: the administrator vouches
    ("registry.npmjs.org", 443, ["127.0.0.1"], "deny", None),  # a glob's name that resolves to loopback
    ("x.corp.example", 443, ["10.1.1.1"], "deny", None),  # a glob never opens the floor
    ("x.corp.example", 443, ["8.8.4.4"], "allow", "network.allow[7]"),
    ("cache.internal", 443, ["10.9.9.9"], "allow", "network.allow[6]"),  # the exact name opens it
    ("10.0.0.5", 8080, [], "allow", "network.allow[4]"),
    ("ci-cache", 8080, ["10.0.0.5"], "allow", "network.allow[4]"),  # the address named, under any name
    ("ci-cache", 8080, ["10.0.0.5", "10.0.0.6"], "deny", None),  # ...but every address must be
    ("10.0.0.5", 22, [], "deny", None),
    ("fd00::7", 443, [], "allow", "network.allow[5]"),
    ("169.254.169.254", 80, [], "deny", None),
    ("metadata.example", 80, ["169.254.169.254"], "deny", None),
    ("rebind.example", 443, ["64:ff9b::7f00:1"], "deny", None),  # NAT64 spelling of loopback
    ("rebind.example", 443, ["2002:a00:1::1"], "deny", None),  # 6to4 spelling of 10.0.0.1
    ("rebind.example", 443, ["8.8.8.8", "::1"], "deny", None),  # one bad address is enough
    # hosts that are not host names are refused, whatever the rules say
    ("evil.com\x00.npmjs.org", 443, PUBLIC, "deny", None),
    ("2130706433", 80, [], "deny", None),
    ("0x7f000001", 80, [], "deny", None),
    ("127.1", 80, [], "deny", None),
    ("exämple.com", 443, PUBLIC, "deny", None),
])
def test_each_connection_is_decided_by_the_section(host, port, addresses, decision, rule):
    verdict = network_decide(POLICY, host, port, addresses)
    assert (verdict.decision, verdict.rule) == (decision, rule), verdict.reason


def test_reasons_say_which_rule_and_which_address():
    assert network_decide(POLICY, "ci-cache", 8080, ["10.0.0.5"]).reason == "The CI cache."
    assert network_decide(POLICY, "pypi.org", 443, PUBLIC).reason == "network.allow[0] (`pypi.org`) allows pypi.org:443"
    floor = network_decide(POLICY, "example.com", 443, ["127.0.0.1"]).reason
    assert floor == ("example.com resolves to 127.0.0.1, a loopback address: never reachable unless network.allow "
                     "names it explicitly")
    assert "169.254.169.254 is a metadata address" in network_decide(POLICY, "169.254.169.254", 80, []).reason
    assert "asked" in network_decide(POLICY, "example.com", 443, PUBLIC).reason


@pytest.mark.parametrize("default", ["allow", "ask", "deny"])
def test_the_default_decides_what_no_rule_names(default):
    policy = network_policy({"allow": ["pypi.org"], "default": default})
    assert network_decide(policy, "example.com", 443, PUBLIC).decision == default
    assert network_decide(policy, "pypi.org", 443, PUBLIC).decision == "allow"
    assert network_decide(policy, "example.com", 443, ["10.0.0.1"]).decision == "deny"  # the floor holds under allow


def test_without_a_section_every_public_host_is_asked_and_the_floor_holds():
    assert compile_policy({"default": "ask"}).network is None
    assert network_decide(DEFAULT_NETWORK, "example.com", 443, PUBLIC).decision == "ask"
    assert network_decide(DEFAULT_NETWORK, "localhost", 8000, ["127.0.0.1"]).decision == "deny"


def test_a_star_allows_every_public_host_but_no_private_one():
    policy = network_policy({"allow": ["*"], "default": "deny"})
    assert network_decide(policy, "anything.example", 443, PUBLIC).decision == "allow"
    assert network_decide(policy, "8.8.8.8", 53, []).decision == "allow"
    assert network_decide(policy, "localhost", 80, ["127.0.0.1"]).decision == "deny"


@pytest.mark.parametrize("host, port, decision", [
    ("x.pastebin.com", 443, "deny"),  # a deny entry: never looked up
    ("evil.com\x00.pypi.org", 443, "deny"),
    ("127.0.0.1", 9, "deny"),  # an address: decided whole, no lookup needed
    ("pypi.org", 443, None),  # the addresses decide: look it up
    ("example.com", 443, None),
    ("10.0.0.5", 8080, None),
])
def test_the_screen_refuses_what_the_name_alone_decides(host, port, decision):
    verdict = network_screen(POLICY, host, port)
    assert (verdict and verdict.decision) == decision


def test_under_a_deny_default_unlisted_names_are_refused_before_any_lookup():
    named = network_policy({"allow": ["pypi.org"], "default": "deny"})
    assert network_screen(named, "example.com", 443).rule == "network.default"
    assert network_screen(named, "pypi.org", 443) is None
    by_address = network_policy({"allow": ["10.0.0.5"], "default": "deny"})
    assert network_screen(by_address, "ci-cache", 443) is None  # it may resolve to the listed address


@pytest.mark.parametrize("host, canonical", [
    ("PyPI.Org.", "pypi.org"), ("[::1]", "::1"), ("::FFFF:127.0.0.1", "::ffff:7f00:1"), ("10.0.0.1", "10.0.0.1"),
    ("_srv.example.com", "_srv.example.com"), ("a" * 63 + ".com", "a" * 63 + ".com"),
    ("", None), ("a..b", None), ("-", None), ("a" * 64 + ".com", None), ("host name", None), ("a\x00b", None),
    ("a\r\nb", None), ("é.com", None), ("127.1", None), ("2130706433", None), ("0x7f.0.0.1", None),
    ("[fe80::1%eth0]", None), ("[1.2.3.4]", None), ("1.2.3.4.5", None), ("x" * 300, None),
])
def test_hosts_are_read_one_way_only(host, canonical):
    assert canonical_host(host) == canonical


def only_problem(document) -> PolicyError:
    problems = policy_problems(document)
    assert len(problems) == 1, [p.message for p in problems]
    with pytest.raises(PolicyError) as info:
        compile_policy(document)
    assert info.value.to_dict() == problems[0].to_dict()
    return problems[0]


@pytest.mark.parametrize("section, field, words", [
    ({"allow": ["pypi.org", "npmjs.org", "https://evil.example/"]}, "network.allow[2]", ["not a URL"]),
    ({"allow": ["10.0.0.0/8"]}, "network.allow[0]", ["address range"]),
    ({"allow": ["api.*.com"]}, "network.allow[0]", ["`*`", "whole first label"]),
    ({"allow": ["*pypi.org"]}, "network.allow[0]", ["`*`", "whole first label"]),
    ({"allow": ["*.10.0.0.1"]}, "network.allow[0]", ["not a host name"]),
    ({"deny": ["pypi.org:0"]}, "network.deny[0]", ["port", "1 to 65535", "'0'"]),
    ({"deny": ["pypi.org:https"]}, "network.deny[0]", ["port", "'https'"]),
    ({"allow": ["[::1:443"]}, "network.allow[0]", ["[address]:port"]),
    ({"allow": ["[::1]x"]}, "network.allow[0]", ["port"]),
    ({"allow": ["2130706433"]}, "network.allow[0]", ["four decimal numbers"]),
    ({"allow": ["bücher.de"]}, "network.allow[0]", ["xn--"]),
    ({"allow": ["a b.com"]}, "network.allow[0]", ["space"]),
    ({"allow": ["a..b"]}, "network.allow[0]", ["not a host name"]),
    ({"allow": [""]}, "network.allow[0]", ["empty"]),
    ({"allow": [7]}, "network.allow[0]", ["host (a string)", "got number"]),
    ({"allow": [{"match": "pypi.org", "host": "x"}]}, "network.allow[0].host", ["unknown key 'host'"]),
    ({"allow": [{"match": "pypi.org", "reason": ""}]}, "network.allow[0].reason", ["non-empty"]),
    ({"allow": "pypi.org"}, "network.allow", ["list of hosts", "got string"]),
    ({"default": "abort"}, "network.default", ["allow, ask, deny", "'abort'"]),
    ({"ask": ["pypi.org"]}, "network.ask", ["unknown key 'ask'", "no rule names"]),
])
def test_each_refusal_names_the_rule_and_says_what_is_wrong(section, field, words):
    problem = only_problem({"network": section})
    assert (problem.code, problem.field) == ("invalid_policy", field)
    assert problem.message.startswith(f"{field}: ")
    for word in words:
        assert word in problem.message


def test_a_section_that_is_not_an_object_is_refused():
    assert only_problem({"network": ["pypi.org"]}).field == "network"


def test_every_problem_of_the_section_is_listed_in_document_order():
    problems = policy_problems({"network": {"allow": ["ok.org", "", "bad/"], "default": "maybe"}})
    assert [p.field for p in problems] == ["network.allow[1]", "network.allow[2]", "network.default"]


def test_the_compiled_policy_carries_the_section():
    compiled = compile_policy({"network": {"allow": ["pypi.org"], "deny": [], "default": "ask"}, "default": "ask"})
    assert compiled.network is not None
    assert network_decide(compiled.network, "pypi.org", 443, PUBLIC).decision == "allow"
