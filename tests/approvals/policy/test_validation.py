"""Validating a rule policy: every refusal names the section, the rule and what is wrong,
and `policy_problems` lists every problem of a document at once."""

import pytest

from approvals.policy import DEFAULT_POLICY, PolicyError, compile_policy, policy_problems, policy_version

from .policytest import DENY_LIST_POLICY, ISSUE_POLICY


def only_problem(document) -> PolicyError:
    problems = policy_problems(document)
    assert len(problems) == 1, [p.message for p in problems]
    with pytest.raises(PolicyError) as info:
        compile_policy(document)
    assert info.value.to_dict() == problems[0].to_dict()  # compile_policy refuses with the same first problem
    return problems[0]


@pytest.mark.parametrize("document, field, words", [
    # command patterns that do not parse or can never match
    ({"commands": {"deny": ["ok", "git push", "echo 'unbalanced"]}}, "commands.deny[2]", ["does not parse",
                                                                                          "quote is not closed"]),
    ({"commands": {"deny": ["echo x\\"]}}, "commands.deny[0]", ["does not parse", "lone backslash"]),
    ({"commands": {"ask": ["   "]}}, "commands.ask[0]", ["empty"]),
    ({"commands": {"deny": ["curl * | sh"]}}, "commands.deny[0]", ["`|`", "never match", "one simple command"]),
    ({"commands": {"deny": ["git add . && git commit"]}}, "commands.deny[0]", ["`&&`", "never match"]),
    ({"commands": {"allow": ["npm run build > log"]}}, "commands.allow[0]", ["`>`", "never match"]),
    ({"commands": {"deny": ["rm\x00 -rf"]}}, "commands.deny[0]", ["NUL", "never match"]),
    ({"commands": {"deny": [{"match": "git\npush"}]}}, "commands.deny[0].match", ["newline", "never match"]),
    ({"commands": {"deny": [7]}}, "commands.deny[0]", ["command pattern", "got number"]),
    # globs that can never match
    ({"edits": {"allow": ["./src/**"]}}, "edits.allow[0]", ["`.` segment", "never match", "without `./`"]),
    ({"reads": {"deny": ["../shared/**"]}}, "reads.deny[0]", ["`..` segment", "never match"]),
    ({"edits": {"deny": ["src//a.py"]}}, "edits.deny[0]", ["empty segment", "never match"]),
    ({"edits": {"deny": ["//etc/**"]}}, "edits.deny[0]", ["`//`", "`/etc/**`", "never match"]),
    ({"edits": {"deny": ["secret\x00"]}}, "edits.deny[0]", ["NUL", "never match"]),
    ({"edits": {"deny": ["**/"]}}, "edits.deny[0]", ["matches no path", "`**`"]),
    ({"edits": {"deny": ["/"]}}, "edits.deny[0]", ["names no path"]),
    ({"edits": {"deny": ["src/[ab"]}}, "edits.deny[0]", ["`[`", "not closed"]),
    ({"edits": {"deny": ["src\\"]}}, "edits.deny[0]", ["lone backslash"]),
    ({"edits": {"deny": ["!src/**"]}}, "edits.deny[0]", ["negated", "not supported"]),
    ({"edits": {"deny": ["#x"]}}, "edits.deny[0]", ["comment"]),
    ({"edits": {"deny": [""]}}, "edits.deny[0]", ["empty"]),
    # unknown decisions, classes and keys
    ({"commands": {"default": "maybe"}}, "commands.default", ["unknown decision 'maybe'", "allow, ask, deny, abort"]),
    ({"tools": {"deployPreview": {"decision": "later"}}}, "tools.deployPreview.decision", ["unknown decision"]),
    ({"classes": {"harmless": "allow"}}, "classes.harmless", ["unknown class 'harmless'", "known classes:",
                                                              "read-only", "remote-mutation", "protected"]),
    ({"commands": {"alow": ["ls"]}}, "commands.alow", ["unknown key 'alow'", "did you mean 'allow'"]),
    ({"commands": {"deny": [{"match": "ls", "because": "x"}]}}, "commands.deny[0].because",
     ["unknown key 'because'", "match, reason, examples"]),
    ({"defaults": "ask"}, "defaults", ["unknown key", "did you mean 'default'"]),
    ({"limits": {"max_denials": -2}}, "limits.max_denials", ["whole number", "-2"]),
])
def test_each_refusal_names_the_rule_and_says_what_is_wrong(document, field, words):
    problem = only_problem(document)
    assert (problem.code, problem.field) == ("invalid_policy", field)
    assert problem.message.startswith(f"{field}: ")
    for word in words:
        assert word in problem.message, problem.message


@pytest.mark.parametrize("glob", [
    "**foo**",  # the same as *foo*
    "/etc/**",  # an absolute glob: a deny rule holds for the files outside the workspace
    "/srv/elsewhere/data/**",
    "*", "**", "build/", "src/**/", ".env*", "docs/*.md", "a[bc]d", "\\#notes",
])
def test_globs_that_can_match_are_accepted(glob):
    assert policy_problems({"edits": {"deny": [glob]}, "reads": {"allow": [glob]}}) == []


@pytest.mark.parametrize("pattern", ["git push", "npm run test:*", "git * --force", "*", "echo '|'", "echo \\;",
                                     "git log --format=\"%H | %s\"", "curl -X POST"])
def test_command_patterns_that_can_match_are_accepted(pattern):
    assert policy_problems({"commands": {"deny": [pattern], "allow": [{"match": pattern, "reason": "ok"}]}}) == []


def test_policy_problems_lists_every_problem_in_document_order():
    document = {
        "commands": {"allow": ["ls", "echo 'x"], "deny": ["rm -rf", "curl | sh"], "default": "sometimes"},
        "edits": {"allow": ["./src/**"], "deny": ["!x"]},
        "classes": {"harmless": "allow", "destructive": "nope"},
        "limits": {"max_tool_calls": "many"},
        "default": "permit",
        "extra": True,
    }
    assert [p.field for p in policy_problems(document)] == [
        "commands.allow[1]", "commands.deny[1]", "commands.default",
        "edits.allow[0]", "edits.deny[0]",
        "classes.harmless", "classes.destructive",
        "limits.max_tool_calls",
        "default",
        "extra",
    ]
    with pytest.raises(PolicyError) as info:
        compile_policy(document)
    assert info.value.field == "commands.allow[1]"


def test_a_valid_policy_has_no_problems_and_the_shapes_of_today_still_compile():
    for document in (ISSUE_POLICY, DENY_LIST_POLICY, DEFAULT_POLICY, {}):
        assert policy_problems(document) == []
        assert compile_policy(document).version == policy_version(document)


def test_a_document_that_is_not_a_json_object_is_one_problem():
    assert [p.message for p in policy_problems([1, 2])] == ["the policy must be a JSON object"]
    assert [p.field for p in policy_problems({"default": float("nan")})] == [""]


@pytest.mark.parametrize("examples, field, words", [
    ("git push", "commands.deny[0].examples", ["must be an object", "got string"]),
    ({"matches": ["x"]}, "commands.deny[0].examples.matches", ["unknown key 'matches'", "match or not_match"]),
    ({"match": "git push"}, "commands.deny[0].examples.match", ["must be a list", "got string"]),
    ({"match": ["git push", 3]}, "commands.deny[0].examples.match[1]", ["shell command", "request object",
                                                                        "got number"]),
    ({"not_match": [""]}, "commands.deny[0].examples.not_match[0]", ["must not be empty"]),
    ({"match": [{"tool": "bash", "input": {"cmd": "x"}}]}, "commands.deny[0].examples.match[0].input.command",
     ["input.command"]),
    ({"match": [{"tool": "bash", "input": {"command": "ls"}, "cwd": "relative"}]},
     "commands.deny[0].examples.match[0].cwd", ["absolute"]),
])
def test_a_malformed_rule_examples_block_is_a_problem_with_its_path(examples, field, words):
    problem = only_problem({"commands": {"deny": [{"match": "git push", "examples": examples}]}})
    assert problem.field == field
    for word in words:
        assert word in problem.message, problem.message


@pytest.mark.parametrize("examples, field, words", [
    ({"request": "ls"}, "examples", ["must be a list"]),
    ([{"request": "ls", "expect": "yes"}], "examples[0].expect", ["unknown decision 'yes'"]),
    ([{"request": "ls"}], "examples[0].expect", ["is missing"]),
    ([{"expect": "allow"}], "examples[0].request", ["is missing"]),
    (["ls"], "examples[0]", ["must be an object", "request", "expect"]),
    ([{"request": "ls", "expect": "allow", "note": "x"}], "examples[0].note", ["unknown key 'note'"]),
    ([{"request": "ls", "expect": "allow", "why": ""}], "examples[0].why", ["non-empty string"]),
    ([{"request": {"tool": ""}, "expect": "allow"}], "examples[0].request.tool", ["non-empty string"]),
])
def test_a_malformed_top_level_example_is_a_problem_with_its_path(examples, field, words):
    problem = only_problem({"examples": examples})
    assert problem.field == field
    for word in words:
        assert word in problem.message, problem.message


def test_examples_are_part_of_the_document_but_not_of_the_compiled_rules():
    plain = {"commands": {"deny": [{"match": "git push", "reason": "Publishes."}]}}
    with_examples = {"commands": {"deny": [{"match": "git push", "reason": "Publishes.",
                                            "examples": {"match": ["git push origin main"], "not_match": ["ls"]}}]},
                     "examples": [{"request": "git push", "expect": "deny", "why": "publishing"}]}
    a, b = compile_policy(plain), compile_policy(with_examples)
    assert a.commands.rules == b.commands.rules  # type: ignore[union-attr]
    assert a.version != b.version  # the version identifies the whole document
    assert b.document == with_examples


def test_the_version_of_a_document_of_today_is_unchanged():
    # pinned before rules could carry examples: the canonical hash must not move
    assert compile_policy(ISSUE_POLICY).version == "eecef3b5cd2038202750c6296c1cad2b343cbaa5083f9a594472d79c1f5b01e2"
    assert compile_policy(DEFAULT_POLICY).version == "7fbd1823b06d58120b741ef68993daf90a430ec8c0b2f1b084db801fb0e0c273"


def test_up_to_bounds_an_allow_command_rule_and_is_refused_elsewhere():
    from approvals.policy import PolicyError, compile_policy

    compile_policy({"commands": {"allow": [{"match": "rm", "up_to": "local-mutation"}]}})  # valid
    for document, field in (
        ({"commands": {"allow": [{"match": "rm", "up_to": "harmless"}]}}, "commands.allow[0].up_to"),
        ({"commands": {"deny": [{"match": "rm", "up_to": "read-only"}]}}, "commands.deny[0].up_to"),
        ({"edits": {"allow": [{"match": "src/**", "up_to": "read-only"}]}}, "edits.allow[0].up_to"),
    ):
        with pytest.raises(PolicyError) as caught:
            compile_policy(document)
        assert field in str(caught.value.message) or caught.value.field == field, (caught.value.message, field)
