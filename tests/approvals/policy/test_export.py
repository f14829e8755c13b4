"""Exporting a policy to Claude Code permissions and Codex execpolicy rules."""

import ast
import json
import re
import shlex

import pytest

from approvals.policy import PolicyError, export_policy

from .policytest import ISSUE_POLICY

POLICY = {
    "commands": {
        "allow": ["ls", "git status", "npm run test:*", "git *", {"match": "make test", "reason": "Tests are local.",
                                                                   "examples": {"match": ["make test -j4"]}}],
        "ask": ["git commit", "docker * push"],
        "deny": [{"match": "git push", "reason": "The application publishes.",
                  "examples": {"match": ["git push origin main", "git -C repo push"],
                               "not_match": ["git status", "git pull"]}},
                 "rm -rf", "sudo"],
        "default": "ask",
    },
    "edits": {"allow": ["src/**", "*.md"], "deny": [".env*", "/etc/**", "build/"], "default": "ask"},
    "reads": {"ask": ["secrets/**"], "default": "allow"},
    "tools": {"webSearch": "allow", "deployPreview": "ask", "dropDatabase": {"decision": "deny", "reason": "Never."},
              "mcp__db__wipe": "abort"},
    "classes": {"read-only": "allow", "destructive": "deny"},
    "limits": {"max_tool_calls": 200},
    "examples": [{"request": "git push", "expect": "deny"}],
}

CLAUDE_RULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\(.+\))?$")


def claude(document):
    export = export_policy(document, "claude")
    return json.loads(export.text), export.unexpressed


def test_the_claude_export_is_settings_json_with_permission_rules():
    settings, _ = claude(POLICY)
    assert list(settings) == ["permissions"]
    assert set(settings["permissions"]) == {"allow", "ask", "deny"}
    for decision, rules in settings["permissions"].items():
        assert rules and all(isinstance(r, str) and CLAUDE_RULE.match(r) for r in rules), (decision, rules)
        assert len(rules) == len(set(rules))
        assert not any(r.endswith(":*)") for r in rules)  # never the legacy prefix form


def test_every_command_rule_is_a_bash_rule_of_its_decision():
    permissions = claude(POLICY)[0]["permissions"]
    assert {"Bash(ls *)", "Bash(git status *)", "Bash(git *)", "Bash(make test *)"} <= set(permissions["allow"])
    assert "Bash(npm run test:**)" in permissions["allow"]  # `test:*` keeps its meaning (a word, not a prefix)
    assert {"Bash(git commit *)", "Bash(docker * push)", "Bash(docker * push *)"} <= set(permissions["ask"])
    assert {"Bash(git push *)", "Bash(rm -rf *)", "Bash(rm -fr *)", "Bash(sudo *)"} <= set(permissions["deny"])


def test_edit_and_read_globs_are_anchored_to_the_project_and_deny_globs_also_hold_absolutely():
    permissions = claude(POLICY)[0]["permissions"]
    assert {"Edit(/src/**)", "Edit(/**/*.md)", "Read"} <= set(permissions["allow"])
    assert {"Edit(/**/.env*)", "Edit(//**/.env*)", "Edit(/etc/**)", "Edit(//etc/**)", "Edit(/**/build/**)",
            "Edit(//**/build/**)"} <= set(permissions["deny"])
    assert {"Read(/secrets/**)", "Read(//secrets/**)"} <= set(permissions["ask"])


def test_tool_rules_use_claude_code_tool_names_and_abort_becomes_deny():
    settings, unexpressed = claude(POLICY)
    permissions = settings["permissions"]
    assert "WebSearch" in permissions["allow"] and "deployPreview" in permissions["ask"]
    assert {"dropDatabase", "mcp__db__wipe"} <= set(permissions["deny"])
    assert any(line.startswith("tools.mcp__db__wipe (abort)") for line in unexpressed)


def test_the_claude_export_lists_what_it_cannot_express():
    _, unexpressed = claude(POLICY)
    heads = [line.split(":")[0] for line in unexpressed]
    for part in ("classes.read-only (allow)", "classes.destructive (deny)", "limits.max_tool_calls (200)",
                 "commands.deny[1] `rm -rf`", "commands.allow[1] `git status`", "examples", "commands",
                 "edits, reads"):
        assert part in heads, (part, heads)
    assert "commands.default (ask)" not in heads  # Claude Code asks before a command no rule allows
    assert any("reasons of commands.allow[4], commands.deny[0]" in line for line in unexpressed)


@pytest.mark.parametrize("default, exported, noted", [("allow", "Bash", False), ("ask", None, False),
                                                      ("deny", None, True)])
def test_a_command_default_is_exported_only_where_claude_code_can_say_it(default, exported, noted):
    settings, unexpressed = claude({"commands": {"deny": ["git push"], "default": default}})
    flat = [r for rules in settings["permissions"].values() for r in rules]
    assert ("Bash" in flat) == (exported is not None)
    assert any(line.startswith(f"commands.default ({default})") for line in unexpressed) == noted


def codex_calls(text: str) -> list[dict]:
    """Each rule line parsed as the Starlark call it is (keyword arguments only)."""
    calls = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        node = ast.parse(line, mode="eval").body
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "prefix_rule", line
        assert not node.args, line
        calls.append({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords})
    return calls


def codex_matches(pattern, tokens) -> bool:
    alternatives = [p if isinstance(p, list) else [p] for p in pattern]
    return len(tokens) >= len(alternatives) and all(t in alts for t, alts in zip(tokens, alternatives, strict=False))


def test_the_codex_export_lines_are_prefix_rule_calls_codex_would_load():
    export = export_policy(POLICY, "codex")
    calls = codex_calls(export.text)
    assert calls
    for call in calls:
        assert set(call) <= {"pattern", "decision", "justification", "match", "not_match"}
        assert call["decision"] in ("allow", "prompt", "forbidden")
        pattern = call["pattern"]
        assert pattern and all(isinstance(p, str) or (isinstance(p, list) and all(isinstance(a, str) for a in p))
                               for p in pattern)
        # Codex validates the examples when it loads the file: they must agree with its prefix reading
        assert all(codex_matches(pattern, tokens) for tokens in call.get("match", []))
        assert not any(codex_matches(pattern, tokens) for tokens in call.get("not_match", []))


def test_every_expressible_command_rule_is_a_prefix_rule_of_its_decision():
    calls = codex_calls(export_policy(POLICY, "codex").text)
    by_pattern = {json.dumps(c["pattern"]): c for c in calls}
    assert by_pattern['["git", "push"]']["decision"] == "forbidden"
    assert by_pattern['["git", "push"]']["justification"] == "The application publishes."
    assert by_pattern['["git", "push"]']["match"] == [["git", "push", "origin", "main"]]
    assert by_pattern['["git", "push"]']["not_match"] == [["git", "status"], ["git", "pull"]]
    assert by_pattern['["rm", ["-rf", "-fr"]]']["decision"] == "forbidden"
    assert by_pattern['["sudo"]']["decision"] == "forbidden"
    assert by_pattern['["git", "commit"]']["decision"] == "prompt"
    assert by_pattern['["git"]']["decision"] == "allow"  # `git *`: a trailing * is the prefix itself
    assert by_pattern['["make", "test"]']["match"] == [["make", "test", "-j4"]]
    deny_rules = [p if isinstance(p, str) else p["match"] for p in POLICY["commands"]["deny"]]
    forbidden = [c["pattern"] for c in calls if c["decision"] == "forbidden"]
    assert len(forbidden) == len(deny_rules)
    for pattern, rule in zip(forbidden, deny_rules, strict=True):
        assert codex_matches(pattern, shlex.split(rule))


def test_the_codex_export_lists_what_it_cannot_express():
    unexpressed = export_policy(POLICY, "codex").unexpressed
    heads = [line.split(":")[0] for line in unexpressed]
    for part in ("commands.allow[2] `npm run test", "commands.ask[1] `docker * push`", "edits.allow[0] `src/**`",
                 "reads.ask[0] `secrets/**`", "tools.webSearch (allow)", "tools.mcp__db__wipe (abort)",
                 "classes.destructive (deny)", "limits.max_tool_calls (200)", "commands.default (ask)", "examples"):
        assert any(h.startswith(part) for h in heads), (part, heads)
    assert any(line.startswith("commands.deny[0].examples.match[1] `git -C repo push`") for line in unexpressed)


def test_a_reason_with_quotes_and_non_ascii_survives_as_a_starlark_string():
    reason = 'Ne publiez pas "ici" — utilisez la CI.\n'
    calls = codex_calls(export_policy({"commands": {"deny": [{"match": "git push", "reason": reason}]}}, "codex").text)
    assert calls == [{"pattern": ["git", "push"], "decision": "forbidden", "justification": reason}]


def test_the_issue_policy_exports_to_both_formats():
    assert json.loads(export_policy(ISSUE_POLICY, "claude").text)["permissions"]["deny"][0] == "Bash(git push *)"
    assert codex_calls(export_policy(ISSUE_POLICY, "codex").text)[0]["pattern"] == ["ls"]


def test_an_unknown_format_or_an_invalid_policy_is_refused():
    with pytest.raises(ValueError, match="unknown export format 'json'"):
        export_policy(POLICY, "json")
    with pytest.raises(PolicyError):
        export_policy({"commands": {"deny": ["a | b"]}}, "claude")


@pytest.mark.parametrize("fmt", ["claude", "codex"])
def test_a_network_section_is_listed_as_unexpressed(fmt):
    unexpressed = export_policy({"network": {"allow": ["pypi.org"]}, "default": "ask"}, fmt).unexpressed
    assert any(line.startswith("network: ") and "egress proxy" in line for line in unexpressed)
    assert not any(line.startswith("network") for line in export_policy({"default": "ask"}, fmt).unexpressed)
