"""Table tests: every rule of the rule policy (issue 3, section 1)."""

import pytest

from approvals.policy import DEFAULT_POLICY, PolicyError, RunView, compile_policy, evaluate

from .policytest import ISSUE_POLICY, assert_cases, disagreements, format_table


def bash(command):
    return {"command": command}


def test_table_helper_reports_every_disagreement_as_one_table():
    rows = disagreements(ISSUE_POLICY, [
        ("bash", bash("ls"), "deny", "commands.deny[0]"),
        ("bash", bash("git status"), "allow", "commands.allow[2]"),
        ("bash", bash("git push"), "allow", "commands.allow[0]"),
    ])
    assert len(rows) == 2
    table = format_table(rows)
    assert "allow commands.allow[0]" in table and "deny commands.deny[0]" in table
    with pytest.raises(AssertionError, match="2 of 2 cases disagree"):
        assert_cases(ISSUE_POLICY, [("bash", bash("ls"), "deny", None), ("bash", bash("cat x"), "ask", None)])


def test_tools_listed_in_the_policy_are_decided_outright():
    policy = {**ISSUE_POLICY, "tools": {**ISSUE_POLICY["tools"], "bash": "deny", "write": "allow"}}
    assert_cases(policy, [
        ("bash", bash("ls"), "deny", "tools.bash"),  # before any command rule
        ("write", {"file_path": ".env"}, "allow", "tools.write"),  # before the edits deny
    ])
    assert_cases(ISSUE_POLICY, [
        ("webSearch", {"query": "x"}, "allow", "tools.webSearch"),
        ("deployPreview", {}, "ask", "tools.deployPreview"),
        ("dropDatabase", {}, "deny", "tools.dropDatabase"),
    ])


def test_a_tool_rule_reason_is_the_verdict_reason():
    verdict = evaluate(compile_policy(ISSUE_POLICY), {"tool": "dropDatabase", "input": {}})
    assert verdict.reason == "Never."


@pytest.mark.parametrize("tool", ["TodoWrite", "TodoRead", "TaskCreate", "TaskUpdate", "update_plan"])
def test_bookkeeping_tools_are_allowed_even_when_the_default_asks(tool):
    assert_cases({"default": "deny"}, [(tool, {"todos": []}, "allow", "bookkeeping")])


def test_bookkeeping_tools_follow_the_tools_section_when_it_names_them():
    assert_cases({"tools": {"TodoWrite": "deny"}}, [("TodoWrite", {}, "deny", "tools.TodoWrite")])


def test_commands_match_word_by_word_from_the_start():
    assert_cases(ISSUE_POLICY, [
        ("bash", bash("git push origin main"), "deny", "commands.deny[0]"),
        ("bash", bash("git pushy"), "ask", "commands.default"),
        ("bash", bash("mygit push"), "ask", "commands.default"),
        ("bash", bash("git"), "ask", "commands.default"),  # shorter than the pattern
        ("bash", bash("ls -la src"), "allow", "commands.allow[0]"),
        ("bash", bash("lsof"), "ask", "commands.default"),
    ])


def test_a_star_matches_anything_inside_a_word_and_as_a_word():
    policy = {"commands": {"allow": ["npm run test:*", "git * --dry-run"], "default": "ask"}}
    assert_cases(policy, [
        ("bash", bash("npm run test:unit"), "allow", "commands.allow[0]"),
        ("bash", bash("npm run test:"), "allow", "commands.allow[0]"),
        ("bash", bash("npm run build"), "ask", "commands.default"),
        ("bash", bash("npm run test"), "ask", "commands.default"),
        ("bash", bash("git clean -fd --dry-run"), "allow", "commands.allow[1]"),
        ("bash", bash("git --dry-run"), "allow", "commands.allow[1]"),
        ("bash", bash("git clean -fd"), "ask", "commands.default"),
    ])


def test_chains_are_allowed_only_when_every_command_is():
    assert_cases(ISSUE_POLICY, [
        ("bash", bash("ls && cat a"), "allow", "commands.allow[0]"),
        ("bash", bash("ls && git commit -m x"), "ask", "commands.ask[0]"),
        ("bash", bash("ls; git push"), "deny", "commands.deny[0]"),
        ("bash", bash("ls || git push"), "deny", "commands.deny[0]"),
        ("bash", bash("ls | git push"), "deny", "commands.deny[0]"),
        ("bash", bash("git push & ls"), "deny", "commands.deny[0]"),
        ("bash", bash("ls\ngit push"), "deny", "commands.deny[0]"),
        ("bash", bash("(cd x && rm -rf y)"), "deny", "commands.deny[1]"),
        ("bash", bash("{ ls; rm -rf y; }"), "deny", "commands.deny[1]"),
        ("bash", bash("if ls; then rm -rf y; fi"), "deny", "commands.deny[1]"),
        ("bash", bash("for f in a; do rm -rf $f; done"), "deny", "commands.deny[1]"),
        ("bash", bash("while true; do git push; done"), "deny", "commands.deny[0]"),
        ("bash", bash("case x in x) rm -rf /;; esac"), "deny", "commands.deny[1]"),
        ("bash", bash("! git push"), "deny", "commands.deny[0]"),
        ("bash", bash("f() { rm -rf /; }; f"), "deny", "commands.deny[1]"),
    ])


def test_the_most_severe_segment_decides_and_its_rule_is_reported():
    verdict = evaluate(compile_policy(ISSUE_POLICY), {"tool": "bash", "input": bash("git commit -m x; git push")})
    assert [s.decision for s in verdict.segments] == ["ask", "deny"]
    assert (verdict.decision, verdict.rule, verdict.reason) == (
        "deny", "commands.deny[0]", "The application publishes the changes.")
    assert verdict.to_dict()["segments"][1]["rule"] == "commands.deny[0]"


def test_substitutions_are_commands_of_their_own_quoted_or_not():
    assert_cases(ISSUE_POLICY, [
        ("bash", bash('echo "$(rm -rf /)"'), "deny", "commands.deny[1]"),
        ("bash", bash("echo $(rm -rf /)"), "deny", "commands.deny[1]"),
        ("bash", bash("echo `rm -rf /`"), "deny", "commands.deny[1]"),
        ("bash", bash('echo "`rm -rf /`"'), "deny", "commands.deny[1]"),
        ("bash", bash("cat <(rm -rf /)"), "deny", "commands.deny[1]"),
        ("bash", bash("X=$(git push) ls"), "deny", "commands.deny[0]"),
        ("bash", bash("export X=$(git push)"), "deny", "commands.deny[0]"),
        ("bash", bash("ls > $(git push)"), "deny", "commands.deny[0]"),
        ("bash", bash("cat <<EOF\n$(rm -rf /)\nEOF"), "deny", "commands.deny[1]"),
        ("bash", bash("echo ${X:-$(rm -rf /)}"), "deny", "commands.deny[1]"),
        ("bash", bash('echo "rm -rf /"'), "ask", "commands.default"),
        ("bash", bash("cat 'rm -rf /'"), "allow", "commands.allow[1]"),
    ])


def test_assignments_keywords_paths_and_quotes_are_dropped_before_matching():
    policy = {"commands": {"allow": ["node app.js"], "deny": ["rm -rf"], "default": "ask"}}
    assert_cases(policy, [
        ("bash", bash("NODE_ENV=test /usr/bin/node app.js"), "allow", "commands.allow[0]"),
        ("bash", bash("A=1 B=2 node app.js"), "allow", "commands.allow[0]"),
        ("bash", bash('"node" \'app.js\''), "allow", "commands.allow[0]"),
        ("bash", bash('/bin/"rm" -rf /'), "deny", "commands.deny[0]"),
        ("bash", bash("\\rm -rf /"), "deny", "commands.deny[0]"),
        ("bash", bash("r\\m -r\\f /"), "deny", "commands.deny[0]"),
        ("bash", bash("$'\\x72m' -rf /"), "deny", "commands.deny[0]"),
        ("bash", bash("if true; then node app.js; fi"), "ask", "commands.default"),  # `true` is unknown here
    ])


def test_wrapped_commands_are_judged_on_their_own():
    policy = {"commands": {"allow": ["sudo", "timeout", "find", "xargs", "bash", "env", "ls"],
                           "deny": ["rm -rf"], "default": "ask"}}
    assert_cases(policy, [
        ("bash", bash("sudo rm -rf /"), "deny", "commands.deny[0]"),
        ("bash", bash("sudo -u root rm -rf /"), "deny", "commands.deny[0]"),
        ("bash", bash("timeout 5 rm -rf /"), "deny", "commands.deny[0]"),
        ("bash", bash("env FOO=1 rm -rf /"), "deny", "commands.deny[0]"),
        ("bash", bash("find . -exec rm -rf {} +"), "deny", "commands.deny[0]"),
        ("bash", bash("ls | xargs rm -rf"), "deny", "commands.deny[0]"),
        ("bash", bash("bash -c 'ls && rm -rf /'"), "deny", "commands.deny[0]"),
        ("bash", bash("eval 'rm -rf /'"), "deny", "commands.deny[0]"),
        ("bash", bash("sudo ls"), "allow", "commands.allow[0]"),
        ("bash", bash("sudo python evil.py"), "ask", "commands.default"),
        ("bash", bash("bash -c 'ls \"'"), "ask", "commands.unparseable"),
    ])


def test_a_redirection_that_writes_a_file_is_decided_as_an_edit_of_its_target():
    assert_cases(ISSUE_POLICY, [
        ("bash", bash("ls > out.txt"), "ask", "edits.default"),
        ("bash", bash("ls >> out.txt"), "ask", "edits.default"),
        ("bash", bash("ls &> out.txt"), "ask", "edits.default"),
        ("bash", bash("ls 2> err.txt"), "ask", "edits.default"),
        ("bash", bash("ls >| out.txt"), "ask", "edits.default"),
        ("bash", bash(">out.txt ls"), "ask", "edits.default"),
        ("bash", bash("ls >&out.txt"), "ask", "edits.default"),
        ("bash", bash("{ ls; cat a; } > out.txt"), "ask", "edits.default"),
        ("bash", bash("cat <<EOF > out.txt\nhi\nEOF"), "ask", "edits.default"),
        ("bash", bash("cat $(ls) > out.txt"), "ask", "edits.default"),
        ("bash", bash("ls > src/out.txt"), "allow", "commands.allow[0]"),  # the edit rules allow src/**
        ("bash", bash("ls > .env"), "deny", "edits.deny[0]"),
        ("bash", bash("ls > /dev/null"), "allow", "commands.allow[0]"),
        ("bash", bash("ls 2>&1"), "allow", "commands.allow[0]"),
        ("bash", bash("ls >/dev/null 2>&1"), "allow", "commands.allow[0]"),
        ("bash", bash("ls 2>/dev/null >&2"), "allow", "commands.allow[0]"),
        ("bash", bash("ls >&-"), "allow", "commands.allow[0]"),
        ("bash", bash("cat < in.txt"), "allow", "commands.allow[1]"),
        ("bash", bash("ls > out.txt; rm -rf /"), "deny", "commands.deny[1]"),  # a deny still wins
    ])


def test_a_redirection_is_anchored_to_the_workspace_under_the_default_policy():
    assert_cases(DEFAULT_POLICY, [("bash", bash("echo hi > notes.txt"), "allow", "classes.local-mutation"),
                                  ("bash", bash("echo hi > build/out.txt"), "allow", "classes.local-mutation"),
                                  ("bash", bash("echo hi > /tmp/notes.txt"), "ask", "classes.outside-workspace"),
                                  ("bash", bash("echo hi >> ~/.bashrc"), "deny", "classes.protected"),
                                  ("bash", bash("echo hi"), "allow", "classes.read-only")])


def test_a_script_that_does_not_parse_is_never_allowed():
    assert_cases(ISSUE_POLICY, [
        ("bash", bash('ls "unterminated'), "ask", "commands.unparseable"),
        ("bash", bash("ls && "), "ask", "commands.unparseable"),
        ("bash", bash("ls ) ("), "ask", "commands.unparseable"),
        ("bash", bash("rm -rf / && ls ("), "deny", "commands.deny[1]"),
    ])
    assert_cases({"commands": {"allow": ["*"]}, "default": "allow"},
                 [("bash", bash("ls 'x"), "ask", "commands.unparseable")])


def test_a_computed_command_name_is_never_allowed_by_a_rule():
    assert_cases({"commands": {"allow": ["*"]}}, [
        ("bash", bash("$CMD -rf /"), "ask", "commands.dynamic"),
        ("bash", bash('"$(echo rm)" -rf /'), "ask", "commands.dynamic"),
    ])


EDITS = {"edits": {"allow": ["src/**", "docs/*.md"], "ask": ["src/secrets/**"], "deny": [".env*", "/etc/**"],
                   "default": "ask"}}


def test_edit_globs_without_a_slash_match_the_file_name_anywhere():
    assert_cases(EDITS, [
        ("write", {"file_path": ".env"}, "deny", "edits.deny[0]"),
        ("edit", {"file_path": "config/.env.local"}, "deny", "edits.deny[0]"),
        ("write", {"file_path": "/home/dev/project/a/b/.env.production"}, "deny", "edits.deny[0]"),
        ("write", {"file_path": "src/.env"}, "deny", "edits.deny[0]"),  # deny beats allow
        ("write", {"file_path": "environment.txt"}, "ask", "edits.default"),
    ])


def test_edit_globs_match_workspace_relative_paths_only():
    assert_cases(EDITS, [
        ("write", {"file_path": "src/app.py"}, "allow", "edits.allow[0]"),
        ("write", {"file_path": "/home/dev/project/src/app.py"}, "allow", "edits.allow[0]"),
        ("MultiEdit", {"file_path": "/elsewhere/src/deep/x.py"}, "ask", "edits.default"),  # outside the workspace
        ("write", {"file_path": "/etc/src/x"}, "deny", "edits.deny[1]"),
        ("write", {"file_path": "lib/src/x.py"}, "ask", "edits.default"),  # `src/**` is anchored at the workspace
        ("write", {"file_path": "docs/guide.md"}, "allow", "edits.allow[1]"),
        ("write", {"file_path": "docs/deep/guide.md"}, "ask", "edits.default"),
        ("write", {"file_path": "srcx/app.py"}, "ask", "edits.default"),
        ("NotebookEdit", {"notebook_path": "src/n.ipynb"}, "allow", "edits.allow[0]"),
        ("write", {"file_path": "src/secrets/key.pem"}, "ask", "edits.ask[0]"),  # ask beats allow
    ])


def test_dot_and_dot_dot_are_resolved_before_edit_globs_match():
    assert_cases(EDITS, [
        ("write", {"file_path": "src/../.env"}, "deny", "edits.deny[0]"),
        ("write", {"file_path": "./src/./app.py"}, "allow", "edits.allow[0]"),
        ("write", {"file_path": "src/../README.md"}, "ask", "edits.default"),
        ("write", {"file_path": "../../../etc/passwd"}, "deny", "edits.deny[1]"),
        ("write", {"file_path": "src/../../other/src/x"}, "ask", "edits.default"),  # climbs out of the workspace
        ("write", {"file_path": "../../src/x"}, "ask", "edits.default"),
    ])


def test_edit_rules_do_not_apply_to_reads_and_a_secret_read_is_at_least_ask():
    assert_cases({"edits": {"deny": ["**"], "default": "deny"}, "default": "ask"},
                 [("read", {"file_path": "src/app.py"}, "ask", "default")])
    assert_cases(DEFAULT_POLICY, [("read", {"file_path": ".env"}, "ask", "reads.sensitive"),
                                  ("read", {"file_path": "src/app.py"}, "allow", "classes.read-only")])


def test_rule_set_default_comes_before_classes():
    policy = {"commands": {"default": "deny"}, "classes": {"read-only": "allow"}, "default": "allow"}
    assert_cases(policy, [("bash", bash("ls"), "deny", "commands.default")])


def test_without_a_rule_set_default_the_side_effect_class_decides():
    policy = {"commands": {"allow": ["npm test"]}, "edits": {"deny": [".env"]}, **{
        "classes": {"read-only": "allow", "local-mutation": "ask", "remote-mutation": "ask",
                    "destructive": "deny"}}, "default": "allow"}
    assert_cases(policy, [
        ("bash", bash("ls"), "allow", "classes.read-only"),
        ("bash", bash("mkdir x"), "ask", "classes.local-mutation"),
        ("bash", bash("git push"), "ask", "classes.remote-mutation"),
        ("bash", bash("git reset --hard"), "deny", "classes.destructive"),
        ("write", {"file_path": "a.txt"}, "ask", "classes.local-mutation"),
        ("read", {"file_path": "a.txt"}, "allow", "classes.read-only"),
        ("webSearch", {"query": "x"}, "allow", "classes.read-only"),
    ])


def test_a_class_without_a_mapping_is_denied():
    policy = {"classes": {"read-only": "allow"}, "default": "allow"}
    assert_cases(policy, [
        ("bash", bash("touch x"), "deny", "classes.local-mutation"),
        ("write", {"file_path": "a.txt"}, "deny", "classes.local-mutation"),
    ])


def test_a_request_without_a_class_falls_to_the_policy_default():
    assert_cases({"classes": {"read-only": "allow"}, "default": "deny"}, [
        ("bash", bash("python script.py"), "deny", "default"),
        ("mcp__db__query", {"sql": "select 1"}, "deny", "default"),
    ])
    assert_cases({"classes": {"read-only": "allow"}, "default": "allow"}, [
        ("mcp__db__query", {}, "allow", "default")])


def test_a_policy_without_classes_falls_to_its_default():
    assert_cases({"default": "deny"}, [
        ("bash", bash("ls"), "deny", "default"),
        ("write", {"file_path": "a"}, "deny", "default"),
        ("read", {"file_path": "a"}, "deny", "default"),
    ])
    assert_cases({}, [("bash", bash("ls"), "ask", "default")])


def test_an_empty_script_is_not_allowed_by_vacuous_truth():
    assert_cases(ISSUE_POLICY, [("bash", bash(""), "ask", "commands.default"),
                                ("bash", bash("# nothing"), "ask", "commands.default")])
    assert_cases({"default": "ask", "classes": {"read-only": "allow"}}, [("bash", bash("  "), "ask", "default")])


def test_default_policy_allows_reads_and_local_changes_asks_remote_and_denies_destructive():
    assert_cases(DEFAULT_POLICY, [
        ("bash", bash("ls -la"), "allow", "classes.read-only"),
        ("bash", bash("git status"), "allow", "classes.read-only"),
        ("bash", bash("touch a && mkdir b"), "allow", "classes.local-mutation"),
        ("bash", bash("git commit -m wip"), "allow", "classes.local-mutation"),
        ("bash", bash("git push origin main"), "ask", "classes.remote-mutation"),
        ("bash", bash("curl -X POST https://x"), "ask", "classes.remote-mutation"),
        ("bash", bash("npm publish"), "ask", "classes.remote-mutation"),
        ("bash", bash("gh pr create --fill"), "ask", "classes.remote-mutation"),
        ("bash", bash("rm -rf build"), "deny", "classes.destructive"),
        ("bash", bash("git reset --hard HEAD~1"), "deny", "classes.destructive"),
        ("bash", bash("git clean -fd"), "deny", "classes.destructive"),
        ("bash", bash("dd if=/dev/zero of=/dev/sda"), "deny", "classes.destructive"),
        ("bash", bash("mkfs.ext4 /dev/sda1"), "deny", "classes.destructive"),
        ("bash", bash("python x.py"), "ask", "default"),
        ("write", {"file_path": "src/a.py"}, "allow", "classes.local-mutation"),
        ("read", {"file_path": "src/a.py"}, "allow", "classes.read-only"),
        ("TodoWrite", {"todos": []}, "allow", "bookkeeping"),
        ("mcp__github__create_issue", {}, "ask", "default"),
    ])


def test_crossing_max_tool_calls_aborts():
    policy = {"limits": {"max_tool_calls": 3}, "default": "allow"}
    assert_cases(policy, [
        ("bash", bash("ls"), "allow", "default", {"run_view": RunView(tool_calls=2)}),
        ("bash", bash("ls"), "abort", "limits.max_tool_calls", {"run_view": RunView(tool_calls=3)}),
        ("TodoWrite", {}, "abort", "limits.max_tool_calls", {"run_view": RunView(tool_calls=9)}),
    ])


def test_crossing_max_denials_aborts_before_any_other_rule():
    policy = {"limits": {"max_denials": 2}, "tools": {"webSearch": "allow"}}
    assert_cases(policy, [
        ("webSearch", {}, "allow", "tools.webSearch", {"run_view": RunView(denials=1)}),
        ("webSearch", {}, "abort", "limits.max_denials", {"run_view": RunView(denials=2)}),
    ])


def test_a_run_stopped_by_a_limit_is_told_which_limit():
    # the reason is what the agent (and the timeline) are told when the run is aborted
    calls = evaluate(compile_policy({"limits": {"max_tool_calls": 3}}), {"tool": "bash", "input": bash("ls")},
                     run_view=RunView(tool_calls=3))
    denials = evaluate(compile_policy({"limits": {"max_denials": 2}}), {"tool": "bash", "input": bash("ls")},
                       run_view=RunView(denials=2))
    assert (calls.decision, calls.reason) == ("abort", "The run reached its limit of 3 tool calls.")
    assert (denials.decision, denials.reason) == ("abort", "The run reached its limit of 2 denied requests.")


def test_every_verdict_carries_a_reason():
    compiled = compile_policy(ISSUE_POLICY)
    for command in ["ls", "git push", "rm -rf /", "foo", "ls > x", "ls 'x"]:
        verdict = evaluate(compiled, {"tool": "bash", "input": bash(command)})
        assert verdict.reason and verdict.rule
    assert evaluate(compiled, {"tool": "bash", "input": bash("git push")}).reason == (
        "The application publishes the changes.")


def test_segments_report_each_command_its_class_rule_and_paths():
    verdict = evaluate(compile_policy(ISSUE_POLICY), {"tool": "bash", "input": bash("ls src | cat x > out"),
                                                      "cwd": "/home/dev/project"})
    assert [s.to_dict() for s in verdict.segments] == [
        {"command": "ls src", "words": ["ls", "src"], "side_effect_class": "read-only", "decision": "allow",
         "rule": "commands.allow[0]", "writes_file": False, "reason": verdict.segments[0].reason, "cwd": None,
         "paths": []},
        {"command": "cat x", "words": ["cat", "x"], "side_effect_class": "local-mutation",
         "decision": "ask", "rule": "edits.default", "writes_file": True,
         "reason": verdict.segments[1].reason, "cwd": None,
         "paths": [
             {"path": "out", "access": "write", "resolved": "/home/dev/project/out", "relative": "out",
              "side_effect_class": "local-mutation", "decision": "ask", "rule": "edits.default",
              "reason": verdict.segments[1].paths[0].reason},
             {"path": "x", "access": "read", "resolved": "/home/dev/project/x", "relative": "x",
              "side_effect_class": "read-only", "decision": "allow", "rule": None, "reason": ""},
         ]},
    ]
    assert set(verdict.to_dict()) == {"decision", "reason", "rule", "segments"}


def test_entering_plan_mode_is_bookkeeping_under_every_preset():
    """Claude Code's EnterPlanMode changes nothing (issue 30.4); leaving plan mode is a plan review."""
    import importlib

    presets = importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS
    for preset in presets:
        verdict = evaluate(compile_policy(preset["document"]), {"tool": "EnterPlanMode", "input": {}})
        assert (verdict.decision, verdict.rule) == ("allow", "bookkeeping"), preset["name"]
    # the policy's tools section still decides it when it names it
    assert evaluate(compile_policy({"tools": {"EnterPlanMode": "ask"}}), {"tool": "EnterPlanMode", "input": {}}).decision == "ask"


def test_a_tool_given_a_class_is_decided_by_the_class_rules():
    # an MCP tool the administrator classes (issue 30.10): the class rules decide it
    policy = compile_policy({"classes": {"remote-mutation": "ask", "read-only": "allow", "destructive": "deny"},
                             "tools": {"mcp__github__create_issue": {"class": "remote-mutation"},
                                       "mcp__github__get_issue": {"class": "read-only"},
                                       "mcp__github__delete_repo": {"class": "destructive", "reason": "Never."}},
                             "default": "ask"})
    decide = lambda tool: evaluate(policy, {"tool": tool, "input": {}})  # noqa: E731
    assert (decide("mcp__github__get_issue").decision, decide("mcp__github__get_issue").rule) == (
        "allow", "classes.read-only")
    created = decide("mcp__github__create_issue")
    assert (created.decision, created.rule, created.side_effect_class) == ("ask", "classes.remote-mutation",
                                                                          "remote-mutation")
    assert decide("mcp__github__delete_repo").decision == "deny"
    assert decide("mcp__other__tool").rule == "default"


@pytest.mark.parametrize(("entry", "field"), [
    ({"class": "harmless"}, "tools.mcp__x__y.class.harmless"),
    ({"class": "read-only", "decision": "allow"}, "tools.mcp__x__y"),
    ({"reason": "no decision"}, "tools.mcp__x__y.decision"),
])
def test_a_malformed_tool_class_is_refused_naming_the_field(entry, field):
    with pytest.raises(PolicyError) as info:
        compile_policy({"tools": {"mcp__x__y": entry}})
    assert info.value.field == field


def test_the_shell_and_file_tools_take_no_class():
    with pytest.raises(PolicyError) as info:
        compile_policy({"tools": {"bash": {"class": "read-only"}}})
    assert info.value.field == "tools.bash.class"


# --- tools the rule sets do not read (mutation testing of decide_request and fallback) --------

def test_a_tool_classed_protected_is_decided_by_the_classes_mapping_and_never_allowed() -> None:
    # (an MCP tool the administrator names `protected`: no path floor runs after the class)
    request = {"tool": "mcp__vault__read", "input": {}, "cwd": "/ws"}
    decided = {}
    for mapped in ("deny", "ask", "allow"):
        policy = compile_policy({"tools": {"mcp__vault__read": {"class": "protected"}}, "classes": {"protected": mapped}})
        verdict = evaluate(policy, request)
        decided[mapped] = (verdict.decision, verdict.rule, verdict.side_effect_class)
        assert "`mcp__vault__read` is protected" in verdict.reason
        assert verdict.segments == () and verdict.to_dict()["segments"] == []
    assert decided == {"deny": ("deny", "classes.protected", "protected"),
                       "ask": ("ask", "classes.protected", "protected"),
                       "allow": ("ask", "classes.protected", "protected")}


def test_a_tool_no_rule_names_is_decided_by_the_default_with_its_name_in_the_reason() -> None:
    verdict = evaluate(compile_policy({"default": "ask"}), {"tool": "mcp__fs__stat", "input": {}, "cwd": "/ws"})
    assert (verdict.decision, verdict.rule) == ("ask", "default")
    assert verdict.reason == "No rule decides `mcp__fs__stat`; the policy default is ask."


def test_a_tool_that_is_not_a_read_tool_is_not_allowed_by_the_reads_rules_for_a_path_it_names() -> None:
    # the reads rules judge the read tools; an unknown tool naming a file is not a read of it
    policy = compile_policy({"default": "ask", "reads": {"allow": ["**"]}})
    verdict = evaluate(policy, {"tool": "mcp__fs__delete", "input": {"file_path": "src/app.py"}, "cwd": "/ws"})
    assert (verdict.decision, verdict.rule) == ("ask", "default")


def test_bookkeeping_tools_are_allowed_as_read_only_with_nothing_else_to_show() -> None:
    verdict = evaluate(compile_policy({"default": "ask"}), {"tool": "TodoWrite", "input": {"todos": []}, "cwd": "/ws"})
    assert (verdict.decision, verdict.rule, verdict.side_effect_class, verdict.segments) == (
        "allow", "bookkeeping", "read-only", ())
    assert verdict.reason == "`TodoWrite` is bookkeeping, allowed unless the policy's tools say otherwise."


def test_a_tool_the_policy_decides_outright_keeps_its_class_on_the_card() -> None:
    policy = compile_policy({"tools": {"WebFetch": "allow", "mcp__db__drop": {"decision": "deny", "reason": "No."}}})
    fetch = evaluate(policy, {"tool": "WebFetch", "input": {"url": "https://example.com/"}, "cwd": "/ws"})
    assert (fetch.decision, fetch.rule, fetch.side_effect_class) == ("allow", "tools.WebFetch", "read-only")
    assert fetch.reason == "The policy decides `WebFetch` outright: allow."
    drop = evaluate(policy, {"tool": "mcp__db__drop", "input": {}, "cwd": "/ws"})
    assert (drop.decision, drop.rule, drop.reason) == ("deny", "tools.mcp__db__drop", "No.")


def test_an_edits_reason_names_the_tool_and_the_file() -> None:
    policy = compile_policy({"edits": {"allow": ["src/**"], "ask": ["*.md"], "default": "deny"}})
    reasons = {}
    for tool, path in (("edit", "src/a.py"), ("write", "README.md"), ("edit", "x.txt")):
        verdict = evaluate(policy, {"tool": tool, "input": {"file_path": path, "old_string": "a", "new_string": "b",
                                                          "content": "b"}, "cwd": "/tmp/ws"})
        reasons[path] = verdict.reason
    assert reasons == {"src/a.py": "edit of `src/a.py` allowed by the edits rule `src/**`.",
                       "README.md": "write of `README.md` needs approval by the edits rule `*.md`.",
                       "x.txt": "No edits rule matches edit of `x.txt`; the edits default is deny."}
