"""Is a rule policy at least as strict as the default? (`approvals.policy.strictness`)"""

from __future__ import annotations

import importlib

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from approvals.policy import CLASSES, Decision, PathContext, RunView, compile_policy, evaluate
from approvals.policy.strictness import loosenings

PRESETS = {p["name"]: p["document"] for p in importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS}
STANDARD = PRESETS["Standard review"]
SANDBOXED = importlib.import_module("approvals.migrations.0010_sandboxed_preset").SANDBOXED["document"]
PRESETS["Sandboxed"] = SANDBOXED


def test_a_policy_is_as_strict_as_itself():
    for document in PRESETS.values():
        assert loosenings(document, document) == []


def test_the_stricter_presets_are_at_least_as_strict_as_standard_review():
    assert loosenings(PRESETS["Read-only review"], STANDARD) == []
    assert loosenings(PRESETS["Accept edits"], STANDARD) == []


def test_every_other_preset_but_full_access_is_at_least_as_strict_as_sandboxed():
    # (so a starter may name them under the default of a fresh install)
    for name in ("Read-only review", "Accept edits", "Standard review"):
        assert loosenings(PRESETS[name], SANDBOXED) == [], name


def test_sandboxed_loosens_standard_review_only_inside_the_floor():
    assert loosenings(SANDBOXED, STANDARD) == [
        "network.allow[0]: `pypi.org:443` is allowed here, not by the default policy",
        "network.allow[1]: `files.pythonhosted.org:443` is allowed here, not by the default policy",
        "network.allow[2]: `registry.npmjs.org:443` is allowed here, not by the default policy",
        "in_floor: default: a tool of no known class no rule decides is allow here, ask under the default policy",
        "in_floor: network.allow[0]: `pypi.org:443` is allowed here, not by the default policy",
        "in_floor: network.allow[1]: `files.pythonhosted.org:443` is allowed here, not by the default policy",
        "in_floor: network.allow[2]: `registry.npmjs.org:443` is allowed here, not by the default policy",
        "in_floor.code: code the policy cannot read runs unasked inside the floor here, not under the default policy",
    ]


def test_full_access_loosens_standard_review_and_says_where():
    found = loosenings(PRESETS["Full access (audited)"], STANDARD)
    assert any("destructive" in f and "allow" in f for f in found)
    assert any(f.startswith("commands") or f.startswith("default") for f in found)
    # and the other way round: the default is stricter than full access
    assert loosenings(STANDARD, PRESETS["Full access (audited)"]) == []


def test_adding_a_deny_rule_only_tightens():
    stricter = {**STANDARD, "commands": {"deny": ["git push", {"match": "npm publish", "reason": "CI publishes."}]}}
    assert loosenings(stricter, STANDARD) == []


def test_a_new_ask_rule_is_a_loosening_where_the_default_denies_by_class():
    # `ask rm` would let `rm -rf x` (destructive: denied by class) be approved by a person
    found = loosenings({**STANDARD, "commands": {"ask": ["rm"]}}, STANDARD)
    assert found == ["commands.ask: `rm` may ask about a request the default policy denies (by its commands default or classes)"]


def test_an_ask_glob_is_not_covered_by_the_same_allow_glob_which_holds_inside_the_workspace_only():
    # Found by the property below: `ask ["**"]` asks about /etc/passwd, which the baseline's
    # `allow ["**"]` leaves to its floor (outside the workspace: denied here).
    baseline = {"reads": {"allow": ["**"]}, "classes": {"outside-workspace": "deny"}, "default": "allow"}
    candidate = {**baseline, "reads": {"allow": ["**"], "ask": ["**"]}}
    read = {"tool": "read", "input": {"file_path": "/etc/passwd"}, "cwd": "/work/app"}
    paths = PathContext(workspace="/work/app")
    assert evaluate(compile_policy(baseline), read, paths=paths).decision == Decision.DENY
    assert evaluate(compile_policy(candidate), read, paths=paths).decision == Decision.ASK
    assert any(found.startswith("reads.ask: `**`") for found in loosenings(candidate, baseline))


def test_an_allow_rule_bounded_lower_in_the_default_is_a_loosening_when_unbounded():
    baseline = {**STANDARD, "commands": {"allow": [{"match": "rm", "up_to": "local-mutation"}]}}
    for looser in ("rm", {"match": "rm", "up_to": "destructive"}):
        found = loosenings({**STANDARD, "commands": {"allow": [looser]}}, baseline)
        assert "commands.allow: `rm` allows more severe classes than the default policy's rule" in found
    assert loosenings(baseline, {**STANDARD, "commands": {"allow": ["rm"]}}) == []


def test_removing_a_deny_rule_or_adding_an_allow_rule_is_a_loosening():
    base = {**STANDARD, "commands": {"deny": ["git push"], "ask": ["npm install"]}}
    assert loosenings({**STANDARD, "commands": {"ask": ["npm install"]}}, base) == [
        "commands.deny: `git push` is denied by the default policy but not by this one"]
    assert loosenings({**base, "commands": {**base["commands"], "allow": ["git push"]}}, base) == [
        "commands.allow: `git push` is not allowed by a rule of the default policy"]
    # an ask rule turned into a deny rule tightens
    assert loosenings({**STANDARD, "commands": {"deny": ["git push", "npm install"]}}, base) == []


def test_limits_only_go_down():
    base = {**STANDARD, "limits": {"max_tool_calls": 100}}
    assert loosenings({**STANDARD, "limits": {"max_tool_calls": 50, "max_denials": 3}}, base) == []
    assert loosenings({**STANDARD, "limits": {"max_tool_calls": 101}}, base) == [
        "limits.max_tool_calls: 101 is more than the default policy's 100"]
    assert loosenings(STANDARD, base) == ["limits.max_tool_calls: no limit is more than the default policy's 100"]


def test_tools_named_outright():
    base = {**STANDARD, "tools": {"deployPreview": "ask"}}
    assert loosenings({**STANDARD, "tools": {"deployPreview": "deny"}}, base) == []
    assert loosenings({**STANDARD, "tools": {"deployPreview": "allow"}}, base) == [
        "tools.deployPreview: allow is looser than the default policy's ask"]
    assert loosenings(STANDARD, base) == [
        "tools.deployPreview: the default policy decides it outright (ask); this one does not"]
    # naming the shell or an edit tool outright skips every command and path rule
    assert loosenings({**STANDARD, "tools": {"bash": "ask"}}, STANDARD) == [
        "tools.bash: ask skips what the default policy decides for it (at least deny)"]
    assert loosenings({**STANDARD, "tools": {"write": "deny", "TodoWrite": "allow"}}, STANDARD) == []
    # another tool: at least the default policy's default (ask)
    assert loosenings({**STANDARD, "tools": {"mcp__github__merge": "allow"}}, STANDARD) != []
    assert loosenings({**STANDARD, "tools": {"mcp__github__merge": "ask"}}, STANDARD) == []


def test_network_hosts_only_tighten_by_the_same_entries():
    network = {**STANDARD, "network": {"allow": ["pypi.org", "*.npmjs.org:443"], "deny": ["evil.example"]}}
    assert loosenings(network, network) == []
    assert loosenings(STANDARD, network) == ["network.deny: `evil.example` is denied by the default policy, not here"]
    assert loosenings({**network, "network": {"allow": ["pypi.org"], "deny": ["evil.example", "x.example"],
                                              "default": "deny"}}, network) == []
    assert loosenings({**network, "network": {**network["network"], "default": "allow"}}, network) == [
        "network.default: an unlisted host is allow here, ask under the default policy"]


def test_in_floor_only_tightens_when_the_floor_reads_stricter():
    base = {**STANDARD, "in_floor": {"default": "allow", "code": "allow"}}
    assert loosenings({**STANDARD, "in_floor": {"code": "allow"}}, base) == []
    looser = {**base, "in_floor": {"default": "allow", "code": "allow", "classes": {"destructive": "ask"}}}
    assert loosenings(looser, base) == [
        "in_floor: default: a destructive tool no rule decides is ask here, deny under the default policy"]
    # the classes outside the floor are compared as ever: `in_floor` never hides them
    assert loosenings({**looser, "classes": {**STANDARD["classes"], "destructive": "allow"}}, base) == [
        "default: a destructive tool no rule decides is allow here, deny under the default policy",
        "in_floor: default: a destructive tool no rule decides is ask here, deny under the default policy"]


def test_a_section_this_check_does_not_know_must_be_equal():
    # (a section it does not compare is never assumed to tighten)
    programs = {**STANDARD, "programs": {"mytool": {"class": "read-only"}}}
    assert loosenings(programs, STANDARD) == ["programs: differs from the default policy's"]


def test_unverified_only_goes_up():
    assert loosenings({**STANDARD, "unverified": "ask"}, STANDARD) == []
    assert loosenings(STANDARD, {**STANDARD, "unverified": "ask"}) == [
        "unverified: allow is looser than the default policy's ask (what a program's model does not recognise, inside the sandbox floor)"]


# --- The property: nothing the check passes decides a request more loosely --------------------

COMMAND_PATTERNS = ["ls", "rm", "rm -rf", "git push", "git", "cat", "curl", "npm test", "echo", "python"]
GLOBS = ["src/**", ".env*", "**", "*.md", "docs/*"]
DECISIONS = ["allow", "ask", "deny"]
REQUESTS = [
    ("bash", {"command": c}) for c in [
        "ls", "ls -la src", "rm -rf build", "rm notes.md", "git push origin main", "git push --force", "git status",
        "cat .env", "cat src/app.py", "curl http://example.com", "curl -X POST http://example.com", "npm test",
        "echo hi > out.txt", "./build.sh", "python -c 'print(1)'", "cat /etc/passwd", "echo x > /tmp/y",
        "rm -rf /", "git commit -m x", "sudo rm x",
    ]
] + [
    ("write", {"file_path": p}) for p in ["src/a.py", ".env", "README.md", "/etc/hosts", "../outside.txt", ".git/hooks/pre-commit"]
] + [
    ("read", {"file_path": p}) for p in ["src/a.py", ".env", "/etc/passwd", "docs/x.md"]
] + [("webFetch", {"url": "https://example.com"}), ("mcp__x__y", {}), ("TodoWrite", {"todos": []}), ("Grep", {"pattern": "x"})
] + [("network", {"host": h, "port": 443}) for h in ("pypi.org", "registry.npmjs.org", "example.com")]
HOSTS = ["pypi.org", "pypi.org:443", "*.npmjs.org", "example.com", "*"]
CONTEXT = PathContext(workspace="/ws", homes=("/home/agent",), filesystem=False)


def rulesets(name: str, patterns: list[str]) -> st.SearchStrategy:
    rules = st.lists(st.sampled_from(patterns), max_size=3, unique=True)
    return st.fixed_dictionaries({}, optional={"allow": rules, "ask": rules, "deny": rules, "default": st.sampled_from(DECISIONS)})


documents = st.fixed_dictionaries({}, optional={
    "commands": rulesets("commands", COMMAND_PATTERNS),
    "edits": rulesets("edits", GLOBS),
    "reads": rulesets("reads", GLOBS),
    "tools": st.dictionaries(st.sampled_from(["bash", "write", "read", "webFetch", "mcp__x__y", "TodoWrite"]),
                             st.sampled_from(DECISIONS), max_size=2),
    "classes": st.dictionaries(st.sampled_from(CLASSES), st.sampled_from(DECISIONS), max_size=6),
    "limits": st.fixed_dictionaries({}, optional={"max_tool_calls": st.sampled_from([0, 5])}),
    "default": st.sampled_from(DECISIONS),
    "network": st.fixed_dictionaries({}, optional={
        "allow": st.lists(st.sampled_from(HOSTS), max_size=2, unique=True),
        "deny": st.lists(st.sampled_from(HOSTS), max_size=2, unique=True),
        "default": st.sampled_from(DECISIONS)}),
    "in_floor": st.fixed_dictionaries({}, optional={
        "classes": st.dictionaries(st.sampled_from(CLASSES), st.sampled_from(DECISIONS), max_size=3),
        "default": st.sampled_from(DECISIONS),
        "code": st.sampled_from(["allow", "ask"])}),
})


def decide(document: dict, tool: str, tool_input: dict, floor: bool = False) -> str:
    return evaluate(compile_policy(document), {"tool": tool, "input": tool_input, "cwd": "/ws"}, paths=CONTEXT,
                    run_view=RunView(floor=floor)).decision


def _mutated(draw, baseline: dict) -> dict:
    """`baseline` changed in a few random ways, tightening or loosening (so that many
    candidates pass the check and the property is tested on them, not filtered away)."""
    doc = {k: (dict(v) if isinstance(v, dict) else v) for k, v in baseline.items()}
    for _ in range(draw(st.integers(1, 3))):
        move = draw(st.sampled_from(["rule", "class", "default", "ruleset_default", "tool", "drop_rule",
                                     "floor", "network"]))
        if move in ("rule", "drop_rule", "ruleset_default"):
            name = draw(st.sampled_from(["commands", "edits", "reads"]))
            ruleset = {k: list(v) if isinstance(v, list) else v for k, v in (doc.get(name) or {}).items()}
            if move == "rule":
                decision = draw(st.sampled_from(DECISIONS))
                pattern = draw(st.sampled_from(COMMAND_PATTERNS if name == "commands" else GLOBS))
                ruleset[decision] = list(dict.fromkeys([*ruleset.get(decision, []), pattern]))
            elif move == "drop_rule":
                decision = draw(st.sampled_from(DECISIONS))
                if ruleset.get(decision):
                    ruleset[decision] = ruleset[decision][1:]
            else:
                ruleset["default"] = draw(st.sampled_from(DECISIONS))
            doc[name] = ruleset
        elif move == "class":
            doc["classes"] = {**(doc.get("classes") or {}), draw(st.sampled_from(CLASSES)): draw(st.sampled_from(DECISIONS))}
        elif move == "default":
            doc["default"] = draw(st.sampled_from(DECISIONS))
        elif move == "floor":
            key = draw(st.sampled_from(["classes", "default", "code"]))
            section = dict(doc.get("in_floor") or {})
            if key == "classes":
                section["classes"] = {**(section.get("classes") or {}),
                                      draw(st.sampled_from(CLASSES)): draw(st.sampled_from(DECISIONS))}
            else:
                section[key] = draw(st.sampled_from(DECISIONS if key == "default" else ["allow", "ask"]))
            doc["in_floor"] = section
        elif move == "network":
            section = {k: list(v) if isinstance(v, list) else v for k, v in (doc.get("network") or {}).items()}
            key = draw(st.sampled_from(["allow", "deny", "default"]))
            if key == "default":
                section["default"] = draw(st.sampled_from(DECISIONS))
            else:
                section[key] = list(dict.fromkeys([*section.get(key, []), draw(st.sampled_from(HOSTS))]))
            doc["network"] = section
        else:
            doc["tools"] = {**(doc.get("tools") or {}),
                            draw(st.sampled_from(["bash", "write", "read", "webFetch", "mcp__x__y", "TodoWrite"])): draw(st.sampled_from(DECISIONS))}
    return doc


@st.composite
def pairs(draw):
    baseline = draw(documents)
    return _mutated(draw, baseline), baseline


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=pairs())
def test_a_policy_with_no_loosening_never_decides_a_request_more_loosely(pair):
    candidate, baseline = pair
    assume(loosenings(candidate, baseline) == [])
    for floor in (False, True):
        for tool, tool_input in REQUESTS:
            mine, theirs = decide(candidate, tool, tool_input, floor), decide(baseline, tool, tool_input, floor)
            assert Decision(mine).severity >= Decision(theirs).severity, (floor, tool, tool_input, mine, theirs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(baseline=documents, extra=st.lists(st.sampled_from(COMMAND_PATTERNS), min_size=1, max_size=2))
def test_tightening_a_policy_is_never_reported(baseline, extra):
    commands = dict(baseline.get("commands") or {})
    commands["deny"] = list(dict.fromkeys([*commands.get("deny", []), *extra]))
    commands["ask"] = [p for p in commands.get("ask", []) if p not in extra]
    commands["allow"] = [p for p in commands.get("allow", []) if p not in extra]
    assert loosenings({**baseline, "commands": commands}, baseline) == []


def test_a_tools_class_is_compared_by_what_the_class_decides():
    mcp = "mcp__github__create_issue"
    remote = {**STANDARD, "tools": {mcp: {"class": "remote-mutation"}}}  # asked, as by default
    assert loosenings(remote, STANDARD) == []
    assert loosenings({**STANDARD, "tools": {mcp: {"class": "destructive"}}}, remote) == []  # denied: tighter
    assert loosenings({**STANDARD, "tools": {mcp: {"class": "read-only"}}}, remote) == [
        f"tools.{mcp}: allow here (by its class), ask under the default policy"]
    # an outright decision against a class, both ways
    assert loosenings({**STANDARD, "tools": {mcp: "allow"}}, remote) == [
        f"tools.{mcp}: allow skips what the default policy decides for it (at least ask)"]
    assert loosenings({**STANDARD, "tools": {mcp: {"class": "read-only"}}}, {**STANDARD, "tools": {mcp: "ask"}}) == [
        f"tools.{mcp}: its class decides allow here; the default policy decides it outright (ask)"]
