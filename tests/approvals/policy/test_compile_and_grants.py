"""Policy validation, compile caching, session grants."""

import pytest

from approvals.policy import (
    DEFAULT_POLICY,
    PolicyError,
    compile_policy,
    evaluate,
    grant_covers,
    policy_version,
    suggest_grant,
    validate_grant,
)

from .policytest import ISSUE_POLICY, assert_cases


@pytest.mark.parametrize("document, field, value", [
    ({"commands": {"deny": ["ok", 3]}}, "commands.deny[1]", 3),
    ({"commands": {"deny": ["ok", ""]}}, "commands.deny[1]", ""),
    ({"commands": {"allow": [{"match": "ls", "why": "x"}]}}, "commands.allow[0].why", "x"),
    ({"commands": {"allow": [{"reason": "x"}]}}, "commands.allow[0].match", None),
    ({"commands": {"allow": ["echo 'unbalanced"]}}, "commands.allow[0]", "echo 'unbalanced"),
    ({"commands": {"default": "maybe"}}, "commands.default", "maybe"),
    ({"commands": {"alow": []}}, "commands.alow", []),
    ({"edits": {"deny": ["!negated"]}}, "edits.deny[0]", "!negated"),
    ({"edits": {"deny": "src/**"}}, "edits.deny", "src/**"),
    ({"tools": {"x": "yes"}}, "tools.x", "yes"),
    ({"tools": {"x": {"decision": "deny", "reason": ""}}}, "tools.x.reason", ""),
    ({"classes": {"harmless": "allow"}}, "classes.harmless", "allow"),
    ({"classes": {"destructive": "ok"}}, "classes.destructive", "ok"),
    ({"limits": {"max_tool_calls": -1}}, "limits.max_tool_calls", -1),
    ({"limits": {"max_denials": True}}, "limits.max_denials", True),
    ({"default": "permit"}, "default", "permit"),
    ({"defaults": "ask"}, "defaults", "ask"),
])
def test_an_invalid_policy_is_refused_naming_the_field_and_value(document, field, value):
    with pytest.raises(PolicyError) as info:
        compile_policy(document)
    assert (info.value.code, info.value.field, info.value.value) == ("invalid_policy", field, value)
    assert info.value.to_dict()["field"] == field


def test_the_issue_example_and_default_policy_compile():
    assert compile_policy(ISSUE_POLICY).version == policy_version(ISSUE_POLICY)
    assert compile_policy(DEFAULT_POLICY).default == "ask"


def test_a_policy_compiles_once_per_version(monkeypatch):
    from approvals.policy import rules
    calls = []
    real = rules._build
    monkeypatch.setattr(rules, "_build", lambda doc, version: calls.append(version) or real(doc, version))
    document = {"commands": {"allow": ["unique-cache-test"]}}
    first = compile_policy(document)
    second = compile_policy({"commands": {"allow": ["unique-cache-test"]}})
    assert first is second and len(calls) == 1
    compile_policy({"commands": {"allow": ["unique-cache-test", "x"]}})
    assert len(calls) == 2


def test_a_compiled_policy_is_not_changed_by_mutating_its_document():
    document = {"commands": {"deny": ["rm -rf"]}, "default": "allow"}
    compiled = compile_policy(document)
    document["commands"]["deny"].clear()
    assert evaluate(compiled, {"tool": "bash", "input": {"command": "rm -rf /"}}).decision == "deny"


def bash(command):
    return {"command": command}


def test_a_grant_turns_an_ask_into_an_allow():
    grants = [{"tool": "bash", "match": "npm run build"}]
    assert_cases(ISSUE_POLICY, [
        ("bash", bash("npm run build"), "allow", "grant", {"grants": grants}),
        ("bash", bash("npm run build --prod"), "allow", "grant", {"grants": grants}),
        ("bash", bash("npm run buildx"), "ask", "commands.default", {"grants": grants}),
        ("bash", bash("ls && npm run build"), "allow", "grant", {"grants": grants}),  # ls already allowed
        ("bash", bash("npm run build && make"), "ask", "commands.default", {"grants": grants}),
        ("write", {"file_path": "docs/a.md"}, "allow", "grant", {"grants": [{"tool": "write", "match": "docs/**"}]}),
        ("edit", {"file_path": "docs/a.md"}, "ask", "edits.default", {"grants": [{"tool": "write", "match": "docs/**"}]}),
        ("deployPreview", {}, "allow", "grant", {"grants": [{"tool": "deployPreview"}]}),
    ])
    verdict = evaluate(compile_policy(ISSUE_POLICY), {"tool": "bash", "input": bash("npm run build")}, grants=grants)
    assert verdict.grant == grants[0] and verdict.to_dict()["grant"] == grants[0]


def test_a_granted_request_keeps_what_the_policy_found_and_says_which_grant_allowed_it():
    policy = compile_policy(ISSUE_POLICY)
    cases = [
        ("bash", bash("ls && npm run build"), {"tool": "bash", "match": "npm run build"},
         "Allowed by the session grant for bash `npm run build`."),
        ("write", {"file_path": "docs/a.md"}, {"tool": "write", "match": "docs/**"},
         "Allowed by the session grant for write `docs/**`."),
        ("deployPreview", {}, {"tool": "deployPreview"}, "Allowed by the session grant for deployPreview."),
    ]
    for tool, tool_input, grant, reason in cases:
        request = {"tool": tool, "input": tool_input}
        asked, granted = evaluate(policy, request), evaluate(policy, request, grants=[grant])
        assert (asked.decision, granted.decision, granted.rule, granted.reason) == ("ask", "allow", "grant", reason)
        # the class, the paths and the floors are the policy's: the gate records them (and a
        # protected path, which no grant lifts, is read from them)
        assert (granted.side_effect_class, granted.paths, granted.floors) == (asked.side_effect_class, asked.paths,
                                                                              asked.floors)
        assert len(granted.segments) == len(asked.segments)
        for mine, policys in zip(granted.segments, asked.segments, strict=True):
            if policys.decision == "allow":
                assert mine == policys  # already allowed: its own rule stays
            else:
                assert (mine.decision, mine.rule, mine.reason) == ("allow", "grant", "Allowed by a session grant.")
    granted_write = evaluate(policy, {"tool": "write", "input": {"file_path": "docs/a.md"}},
                             grants=[{"tool": "write", "match": "docs/**"}])
    assert granted_write.side_effect_class is not None and granted_write.paths


def test_a_grant_never_turns_a_deny_or_abort_into_an_allow():
    from approvals.policy import RunView
    assert_cases(ISSUE_POLICY, [
        ("bash", bash("git push"), "deny", "commands.deny[0]", {"grants": [{"tool": "bash", "match": "git push"}]}),
        ("bash", bash("git push"), "deny", "commands.deny[0]", {"grants": [{"tool": "bash"}]}),
        ("write", {"file_path": ".env"}, "deny", "edits.deny[0]", {"grants": [{"tool": "write"}]}),
        ("dropDatabase", {}, "deny", "tools.dropDatabase", {"grants": [{"tool": "dropDatabase"}]}),
        ("deployPreview", {}, "abort", "limits.max_tool_calls",
         {"grants": [{"tool": "deployPreview"}], "run_view": RunView(tool_calls=200)}),
    ])


def test_a_grant_never_covers_a_write_the_policy_asks_about_or_an_unparseable_script():
    grants = [{"tool": "bash", "match": "npm"}, {"tool": "bash"}]
    assert_cases(ISSUE_POLICY, [
        ("bash", bash("npm run build > log.txt"), "ask", "commands.default", {"grants": grants}),
        ("bash", bash("ls > files.txt"), "ask", "edits.default", {"grants": grants}),
        ("bash", bash("npm run 'build"), "ask", "commands.unparseable", {"grants": grants}),
        ("bash", bash("$X run"), "ask", "commands.default", {"grants": grants}),
    ])
    assert not grant_covers({"tool": "bash", "match": "npm"}, {"tool": "bash", "input": bash("npm x > f")})
    assert grant_covers({"tool": "bash", "match": "npm"}, {"tool": "bash", "input": bash("npm x 2>&1")})
    assert not grant_covers({"tool": "bash", "match": "npm"}, {"tool": "bash", "input": bash("npm x && ls")})


@pytest.mark.parametrize("grant, field", [
    ({"tool": ""}, "tool"),
    ({"tool": "bash", "match": ""}, "match"),
    ({"tool": "bash", "match": "echo 'x"}, "match"),
    ({"tool": "write", "match": "!x"}, "match"),
    ({"tool": "deployPreview", "match": "x"}, "match"),
    ({"tool": "bash", "scope": "forever"}, "scope"),
])
def test_an_invalid_grant_is_refused(grant, field):
    with pytest.raises(PolicyError) as info:
        validate_grant(grant)
    assert (info.value.code, info.value.field) == ("invalid_grant", field)


@pytest.mark.parametrize("request_, grant, sentence", [
    ({"tool": "bash", "input": bash("npm run build")}, {"tool": "bash", "match": "npm run build"},
     "Always allow `npm run build` in this session"),
    ({"tool": "bash", "input": bash("git commit -m 'fix: x'")}, {"tool": "bash", "match": "git commit"},
     "Always allow `git commit` in this session"),
    ({"tool": "write", "input": {"file_path": "docs/guide.md"}, "cwd": "/w"}, {"tool": "write", "match": "docs/**"},
     "Always allow edits to `docs/**` in this session"),
    ({"tool": "deployPreview", "input": {}}, {"tool": "deployPreview"}, "Always allow `deployPreview` in this session"),
])
def test_suggest_grant_proposes_the_narrowest_useful_grant(request_, grant, sentence):
    assert suggest_grant(request_) == (grant, sentence)
    assert grant_covers(grant, request_)


@pytest.mark.parametrize("request_", [
    {"tool": "bash", "input": bash("npm run build > out.log")},
    {"tool": "bash", "input": bash("npm run 'build")},
    {"tool": "bash", "input": bash("rm -rf build")},
    {"tool": "bash", "input": bash("git push origin main")},
    {"tool": "bash", "input": bash("npm test && make")},
    {"tool": "bash", "input": bash("$TOOL x")},
    {"tool": "write", "input": {"file_path": "/etc/hosts"}, "cwd": "/w"},
])
def test_suggest_grant_offers_nothing_when_no_grant_is_safe(request_):
    assert suggest_grant(request_) is None
