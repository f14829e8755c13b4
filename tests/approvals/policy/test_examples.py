"""Examples as tests: rule examples (match / not_match) and top-level examples (expect),
judged in the fixed example context."""

import pytest

from approvals.policy import (
    EXAMPLE_CONTEXT,
    ExampleFailure,
    PathContext,
    PolicyError,
    check_examples,
    compile_policy,
    evaluate,
    examples_of,
)

from .policytest import ISSUE_POLICY

CLASSES = {"read-only": "allow", "local-mutation": "allow", "remote-mutation": "ask", "destructive": "deny"}


def rule(match, *, examples=None, reason=None):
    out = {"match": match}
    if reason:
        out["reason"] = reason
    if examples is not None:
        out["examples"] = examples
    return out


def failures_by_where(document) -> dict[str, ExampleFailure]:
    return {f.where: f for f in check_examples(document)}


def test_a_policy_whose_examples_all_hold_has_no_failures():
    document = {
        "commands": {
            "allow": [rule("git status", examples={"match": ["git status -s"], "not_match": ["git push"]})],
            "deny": [rule("git push", reason="The application publishes.",
                          examples={"match": ["git push origin main", "git -C repo push", "sudo git push -f",
                                              "ls && git push"],
                                    "not_match": ["git status", "git pull"]}),
                     rule("rm -rf", examples={"match": ["rm -r -f /", "rm build -fr", "echo \"$(rm -rf ~)\""]})],
        },
        "edits": {"allow": [rule("src/**", examples={"match": ["src/app.py", "/workspace/src/a/b.py"],
                                                     "not_match": ["docs/a.md", "/elsewhere/src/x"]})],
                  "deny": [rule(".env*", examples={"match": [".env", "config/.env.local",
                                                             {"tool": "bash", "input": {"command": "echo x > .env"}}],
                                                   "not_match": ["src/env.py"]})]},
        "reads": {"ask": [rule("secrets/**", examples={"match": ["secrets/db.txt"], "not_match": ["README.md"]})]},
        "classes": CLASSES,
        "examples": [{"request": "git push --force", "expect": "deny"},
                     {"request": "ls -la", "expect": "allow", "rule": "classes.read-only"},
                     {"request": {"tool": "write", "input": {"file_path": "~/.bashrc"}}, "expect": "deny",
                      "why": "shell start-up files are protected"}],
    }
    assert check_examples(document) == []
    assert len(examples_of(document)) == 2 + 6 + 3 + 4 + 4 + 2 + 3


def test_an_allow_rule_example_decided_by_a_deny_rule_fails_naming_both():
    document = {"commands": {"allow": [rule("git *", examples={"match": ["git status", "git push origin"]})],
                             "deny": ["git push"]}}
    [failure] = check_examples(document)
    assert failure.where == "commands.allow[0].examples.match[1]"
    assert failure.request == {"tool": "bash", "input": {"command": "git push origin"}, "cwd": "/workspace"}
    assert (failure.decision, failure.rule) == ("deny", "commands.deny[0]")
    assert failure.got == "deny by commands.deny[0]"
    assert failure.expected == "allow by commands.allow[0]"
    assert failure.message == ("commands.allow[0] (`git *`) matches the example, but the request gets deny by "
                               "commands.deny[0], not allow.")
    assert failure.to_dict()["where"] == failure.where


def test_an_allow_rule_example_fails_when_a_floor_asks():
    document = {"commands": {"allow": [rule("python", examples={"match": ["python app.py", "python -c 'print(1)'"]})]}}
    [failure] = check_examples(document)
    assert failure.where == "commands.allow[0].examples.match[1]"
    assert (failure.decision, failure.rule) == ("ask", "commands.interpreter")


def test_a_deny_or_ask_rule_example_passes_when_something_stricter_decides():
    document = {
        "commands": {"deny": ["git push", rule("git push origin", examples={"match": ["git push origin main"]})],
                     "ask": [rule("git", examples={"match": ["git push"]})]},
        "edits": {"ask": [rule("**/*.sh", examples={"match": [".git/hooks/pre-commit.sh"]})]},
        "classes": CLASSES,
    }
    # deny[1] is shadowed by deny[0], which also denies the ask rule `git`'s example; the hook is protected
    assert check_examples(document) == []


def test_a_match_example_the_rule_does_not_match_fails_with_what_decided_it():
    document = {"commands": {"deny": [rule("git push", examples={"match": ["git pull"]})]}, "classes": CLASSES}
    [failure] = check_examples(document)
    assert failure.got == "allow by classes.local-mutation"
    assert failure.expected == "deny (or stricter), with commands.deny[0] matching"
    assert failure.message == ("The example should be matched by commands.deny[0] (`git push`), but that rule does "
                               "not match it (it gets allow by classes.local-mutation).")


def test_a_not_match_example_fails_only_when_the_rule_matches():
    document = {"commands": {"deny": [rule("git push", examples={"not_match": ["git status", "git push -f"]})],
                             "ask": [rule("git status")]},
                "classes": CLASSES}
    [failure] = check_examples(document)  # git status is asked by another rule: still not matched by deny[0]
    assert failure.where == "commands.deny[0].examples.not_match[1]"
    assert failure.expected == "commands.deny[0] does not match"
    assert "but that rule matches it (it gets deny by commands.deny[0])" in failure.message


def test_a_rule_matches_a_part_of_a_script_even_when_another_part_decides():
    document = {"commands": {"allow": [rule("ls", examples={"not_match": ["ls && git push"]})],
                             "deny": ["git push"]}}
    [failure] = check_examples(document)
    assert (failure.where, failure.rule) == ("commands.allow[0].examples.not_match[0]", "commands.deny[0]")


def test_a_request_decided_by_a_tool_rule_is_matched_by_no_command_rule():
    document = {"commands": {"deny": [rule("git push", examples={"match": ["git push"],
                                                                "not_match": ["git push --tags"]})]},
                "tools": {"bash": "deny"}}
    [failure] = check_examples(document)
    assert failure.where == "commands.deny[0].examples.match[0]"
    assert failure.rule == "tools.bash"


def test_edit_and_read_rule_examples_are_paths_in_the_example_workspace():
    document = {
        "edits": {"allow": [rule("src/**", examples={"match": ["src/a.py", "/workspace/src/b.py", "src/../x.py"]})]},
        "reads": {"deny": [rule("/etc/**", examples={"match": ["/etc/passwd", "../../etc/hosts"],
                                                     "not_match": ["/srv/etc/x"]})]},
    }
    failures = failures_by_where(document)
    assert list(failures) == ["edits.allow[0].examples.match[2]"]  # src/../x.py is /workspace/x.py
    failure = failures["edits.allow[0].examples.match[2]"]
    assert failure.request == {"tool": "write", "input": {"file_path": "src/../x.py"}, "cwd": "/workspace"}
    [read] = [e for e in examples_of(document) if e.where == "reads.deny[0].examples.match[0]"]
    assert read.request == {"tool": "read", "input": {"file_path": "/etc/passwd"}, "cwd": "/workspace"}


def test_an_edit_rule_matches_the_files_a_command_writes():
    document = {"edits": {"deny": [rule("dist/**", examples={
        "match": [{"tool": "bash", "input": {"command": "npm run build > dist/log.txt"}},
                  {"tool": "bash", "input": {"command": "cp a.js dist/a.js"}}],
        "not_match": [{"tool": "bash", "input": {"command": "cat dist/a.js"}}]})]}}
    assert check_examples(document) == []


def test_a_whole_request_keeps_its_own_cwd():
    document = {"edits": {"allow": [rule("src/**", examples={
        "match": [{"tool": "edit", "input": {"file_path": "a.py"}, "cwd": "/workspace/src"}],
        "not_match": [{"tool": "edit", "input": {"file_path": "a.py"}, "cwd": "/workspace/lib"}]})]}}
    assert check_examples(document) == []


def test_top_level_examples_expect_a_decision_and_optionally_its_rule():
    document = {**ISSUE_POLICY, "examples": [
        {"request": "git push origin main", "expect": "deny", "rule": "commands.deny[0]"},
        {"request": "git status", "expect": "allow", "rule": "commands.deny[0]"},
        {"request": "npm run build", "expect": "allow", "why": "builds are local"},
        {"request": {"tool": "dropDatabase", "input": {}}, "expect": "deny"},
    ]}
    failures = failures_by_where(document)
    assert list(failures) == ["examples[1]", "examples[2]"]
    assert failures["examples[1]"].expected == "allow by commands.deny[0]"
    assert failures["examples[1]"].message == ("The example should get allow by commands.deny[0], but it gets allow "
                                               "by commands.allow[2].")
    assert failures["examples[2]"].message == ("The example should get allow (builds are local), but it gets ask by "
                                               "commands.default.")


def test_the_example_context_is_fixed_and_reads_no_file(tmp_path):
    assert EXAMPLE_CONTEXT.workspace == "/workspace" and EXAMPLE_CONTEXT.homes == ("/home/agent",)
    assert EXAMPLE_CONTEXT.filesystem is False
    # the same question on a real workspace with a link to /etc, and by text alone
    (tmp_path / "etc-link").symlink_to("/etc")
    policy = compile_policy({"edits": {"allow": ["**"]}})
    request = {"tool": "write", "input": {"file_path": "etc-link/hosts"}, "cwd": str(tmp_path)}
    on_disk = evaluate(policy, request, paths=PathContext(str(tmp_path)))
    by_text = evaluate(policy, request, paths=PathContext(str(tmp_path), filesystem=False))
    assert (on_disk.decision, on_disk.rule) == ("deny", "classes.protected")
    assert (by_text.decision, by_text.rule) == ("allow", "edits.allow[0]")
    # a glob is expanded to no file: the decision does not depend on what the directory holds
    (tmp_path / "x.pem").write_text("x")
    read = {"tool": "bash", "input": {"command": "cat x*"}, "cwd": str(tmp_path)}
    assert evaluate(compile_policy({"classes": CLASSES}), read, paths=PathContext(str(tmp_path))).decision == "ask"
    assert evaluate(compile_policy({"classes": CLASSES}), read,
                    paths=PathContext(str(tmp_path), filesystem=False)).decision == "allow"


def test_check_examples_refuses_an_invalid_document_with_its_first_problem():
    with pytest.raises(PolicyError) as info:
        check_examples({"commands": {"deny": [rule("git push", examples={"match": [3]})]}})
    assert info.value.field == "commands.deny[0].examples.match[0]"


def test_examples_are_never_run_while_deciding_a_request(monkeypatch):
    from approvals.policy import examples
    monkeypatch.setattr(examples, "run_example", lambda *a: pytest.fail("an example ran"))
    document = {"commands": {"deny": [rule("git push", examples={"match": ["git status"]})]}}
    verdict = evaluate(compile_policy(document), {"tool": "bash", "input": {"command": "git push"}})
    assert verdict.rule == "commands.deny[0]"
