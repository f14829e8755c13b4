"""Paths anchored to the workspace: PathContext, the new classes, reads, grants and modes."""

import pytest

from approvals.policy import (
    DEFAULT_POLICY,
    PathContext,
    PolicyError,
    apply_runtime_mode,
    compile_policy,
    evaluate,
    grant_covers,
    suggest_grant,
)

from .policytest import assert_cases, bash


def decide(policy, tool, tool_input, sandbox, grants=()):
    request = {"tool": tool, "input": tool_input, "cwd": sandbox.workspace}
    return evaluate(compile_policy(policy), request, grants=grants, paths=sandbox.context)


def test_without_a_path_context_the_requests_cwd_is_the_workspace_and_home_the_processs(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    compiled = compile_policy(DEFAULT_POLICY)
    inside = evaluate(compiled, {"tool": "write", "input": {"file_path": "a.txt"}, "cwd": str(tmp_path / "ws")})
    outside = evaluate(compiled, {"tool": "write", "input": {"file_path": "/srv/a"}, "cwd": str(tmp_path / "ws")})
    home = evaluate(compiled, {"tool": "write", "input": {"file_path": "~/.bashrc"}, "cwd": str(tmp_path / "ws")})
    assert (inside.decision, outside.decision, home.decision) == ("allow", "ask", "deny")
    assert home.paths[0].resolved == str(tmp_path / "me" / ".bashrc")


def test_the_workspace_is_carved_out_of_a_protected_directory_that_holds_it(sandbox):
    # the sandbox's workspace lies in var/workspaces/run-1, inside the protected var directory
    assert decide(DEFAULT_POLICY, "write", {"file_path": "src/a.py"}, sandbox).decision == "allow"
    assert decide(DEFAULT_POLICY, "write", {"file_path": "../other/a.py"}, sandbox).decision == "deny"
    assert decide(DEFAULT_POLICY, "read", {"file_path": "../other/a.py"}, sandbox).decision == "ask"
    assert decide(DEFAULT_POLICY, "read", {"file_path": f"{sandbox.var}/secret_key"}, sandbox).decision == "ask"


def test_a_path_is_reported_where_it_really_is(sandbox):
    verdict = decide(DEFAULT_POLICY, "write", {"file_path": "source-link/../src/./app.py"}, sandbox)
    (use,) = verdict.paths
    assert (use.resolved, use.relative, use.side_effect_class) == (f"{sandbox.workspace}/src/app.py", "src/app.py",
                                                                   "local-mutation")
    assert verdict.to_dict()["paths"][0]["relative"] == "src/app.py"
    out = decide(DEFAULT_POLICY, "write", {"file_path": "etc-link/hosts"}, sandbox)
    assert (out.decision, out.rule, out.paths[0].resolved) == ("deny", "classes.protected", "/etc/hosts")
    assert "protected (/etc)" in out.reason


def test_a_cd_moves_where_relative_paths_lead_and_the_segment_shows_it(sandbox):
    verdict = decide(DEFAULT_POLICY, "bash", bash("cd build && echo x > out.txt && cd /etc && cat hosts"), sandbox)
    assert [s.cwd for s in verdict.segments] == [None, f"{sandbox.workspace}/build", f"{sandbox.workspace}/build",
                                                 "/etc"]
    assert verdict.segments[1].paths[0].relative == "build/out.txt"
    assert (verdict.decision, verdict.rule) == ("ask", "reads.sensitive")  # /etc/hosts is protected: a read asks
    assert verdict.to_dict()["segments"][3]["cwd"] == "/etc"


def test_the_new_classes_can_be_named_in_a_policy_and_protected_is_never_allowed(sandbox):
    loose = {"classes": {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "allow",
                         "protected": "allow"}, "default": "ask"}
    assert decide(loose, "write", {"file_path": "/srv/x"}, sandbox).decision == "allow"
    protected = decide(loose, "write", {"file_path": ".git/hooks/pre-commit"}, sandbox)
    assert (protected.decision, protected.rule) == ("ask", "classes.protected")  # never less than ask
    strict = {"classes": {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "deny"}}
    assert decide(strict, "bash", bash("echo x > /srv/x"), sandbox).decision == "deny"
    # a policy whose classes do not name the new ones gets their defaults: ask and deny
    old = {"classes": {"read-only": "allow", "local-mutation": "allow"}, "default": "allow"}
    assert decide(old, "write", {"file_path": "/srv/x"}, sandbox).decision == "ask"
    assert decide(old, "write", {"file_path": ".mcp.json"}, sandbox).decision == "deny"


def test_a_rule_that_allows_a_protected_path_under_classes_that_allow_protected_still_asks(sandbox):
    # the floor of a protected path is never less than ask, even when the policy's classes
    # map protected to allow and a rule allows the write (decisions.class_floor)
    loose = {"classes": {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "allow",
                         "protected": "allow"},
             "edits": {"allow": ["**"]}, "commands": {"allow": ["*"]}, "default": "allow"}
    for tool, tool_input in (("write", {"file_path": ".git/hooks/pre-commit"}),
                             ("bash", bash("echo x > .git/hooks/pre-commit"))):
        verdict = decide(loose, tool, tool_input, sandbox)
        assert (verdict.decision, verdict.rule) == ("ask", "classes.protected"), tool


def test_rules_never_allow_a_protected_or_outside_path_either(sandbox):
    policy = {"edits": {"allow": ["**"], "default": "allow"}, "commands": {"allow": ["*"], "default": "allow"},
              "default": "allow"}
    assert_cases(policy, [
        ("write", {"file_path": ".claude/settings.json"}, "deny", "classes.protected"),
        ("write", {"file_path": "/srv/x"}, "ask", "classes.outside-workspace"),
        ("bash", bash("echo x > ~/.bashrc"), "deny", "classes.protected"),
        ("bash", bash("cat ~/.ssh/id_rsa"), "ask", "reads.sensitive"),
        ("write", {"file_path": "src/a.py"}, "allow", "edits.allow[0]"),
    ], paths=sandbox.context, cwd=sandbox.workspace)


def test_a_reads_section_is_validated_like_edits():
    with pytest.raises(PolicyError) as info:
        compile_policy({"reads": {"deny": ["!x"]}})
    assert info.value.field == "reads.deny[0]"
    with pytest.raises(PolicyError) as info:
        compile_policy({"reads": {"default": "maybe"}})
    assert info.value.field == "reads.default"
    with pytest.raises(PolicyError) as info:
        compile_policy({"classes": {"outside": "ask"}})
    assert info.value.field == "classes.outside"


def test_reads_rules_decide_read_tools_with_their_default(sandbox):
    policy = {"reads": {"allow": ["src/**"], "ask": ["docs/**"], "default": "deny"}, **DEFAULT_POLICY}
    assert_cases(policy, [
        ("read", {"file_path": "src/app.py"}, "allow", "reads.allow[0]"),
        ("read", {"file_path": "docs/a.md"}, "ask", "reads.ask[0]"),
        ("read", {"file_path": "README.md"}, "deny", "reads.default"),
        ("read", {"file_path": "/usr/include/stdio.h"}, "deny", "reads.default"),  # allow globs see the workspace only
        ("bash", bash("cat README.md"), "allow", "classes.read-only"),  # commands: only a matching read rule counts
        ("bash", bash("cat docs/a.md"), "ask", "reads.ask[0]"),
        ("webSearch", {"query": "x"}, "allow", "classes.read-only"),
    ], paths=sandbox.context, cwd=sandbox.workspace)


def test_a_grant_never_covers_a_protected_path_a_write_outside_or_a_secret_read(sandbox):
    lenient = {"classes": {"read-only": "allow", "local-mutation": "ask", "protected": "ask"}, "default": "ask"}
    whole = [{"tool": "write"}, {"tool": "read"}, {"tool": "bash"}]
    assert decide(lenient, "write", {"file_path": "src/a.py"}, sandbox, whole).decision == "allow"
    for tool, tool_input in [("write", {"file_path": ".claude/settings.json"}), ("write", {"file_path": "/srv/x"}),
                             ("read", {"file_path": ".env"}), ("bash", bash("echo x > ~/.bashrc")),
                             ("bash", bash("cat .env")), ("bash", bash("echo x > /srv/x"))]:
        verdict = decide(lenient, tool, tool_input, sandbox, whole + [{"tool": tool, "match": "**"}
                                                                       if tool != "bash" else {"tool": "bash"}])
        assert verdict.decision == "ask", (tool, tool_input, verdict.rule)


def test_a_grant_covers_a_command_whose_writes_the_policy_allows(sandbox):
    grants = [{"tool": "bash", "match": "npm run build"}]
    assert decide(DEFAULT_POLICY, "bash", bash("npm run build > build/log.txt 2>&1"), sandbox, grants).decision == \
        "allow"
    assert decide(DEFAULT_POLICY, "bash", bash("npm run build > /srv/log.txt"), sandbox, grants).decision == "ask"
    assert grant_covers(grants[0], {"tool": "bash", "input": bash("npm run build 2>&1")})


def test_suggest_grant_offers_nothing_for_protected_outside_or_secret_paths(sandbox):
    def suggestion(tool, tool_input):
        return suggest_grant({"tool": tool, "input": tool_input, "cwd": sandbox.workspace}, paths=sandbox.context)

    assert suggestion("write", {"file_path": "src/deep/a.py"})[0] == {"tool": "write", "match": "src/deep/**"}
    assert suggestion("write", {"file_path": "source-link/a.py"})[0] == {"tool": "write", "match": "src/**"}
    for tool, tool_input in [("write", {"file_path": ".claude/settings.json"}), ("write", {"file_path": "/srv/x"}),
                             ("write", {"file_path": "etc-link/hosts"}), ("read", {"file_path": ".env"}),
                             ("read", {"file_path": "keys/id_rsa"}), ("bash", bash("echo x > /srv/x")),
                             ("bash", bash("cat .env")), ("bash", bash("$X run")), ("bash", bash("LD_PRELOAD=x ls"))]:
        assert suggestion(tool, tool_input) is None, (tool, tool_input)


def test_suggest_grant_for_code_on_the_command_line_names_exactly_that_command():
    request = {"tool": "bash", "input": bash("python3 -c 'print(1)'"), "cwd": "/w"}
    grant, sentence = suggest_grant(request)
    assert grant == {"tool": "bash", "match": "python3 -c 'print(1)'"}
    assert sentence == "Always allow exactly `python3 -c 'print(1)'` in this session"
    policy = compile_policy({"default": "ask"})
    assert evaluate(policy, request, grants=[grant]).decision == "allow"
    other = {"tool": "bash", "input": bash("python3 -c 'print(2)'"), "cwd": "/w"}
    assert evaluate(policy, other, grants=[grant]).decision == "ask"


@pytest.mark.parametrize("mode", ["auto-accept-edits", "auto", "full-access"])
def test_no_runtime_mode_ever_allows_a_protected_path(mode, sandbox):
    lenient = compile_policy({"classes": {"read-only": "ask", "local-mutation": "ask", "protected": "ask"},
                              "default": "ask"})
    for tool, tool_input in [("write", {"file_path": ".git/hooks/pre-commit"}), ("bash", bash("echo x >> ~/.bashrc")),
                             ("read", {"file_path": "~/.ssh/id_rsa"})]:
        request = {"tool": tool, "input": tool_input, "cwd": sandbox.workspace}
        verdict = evaluate(lenient, request, paths=sandbox.context)
        assert verdict.decision == "ask"
        assert apply_runtime_mode(verdict, mode=mode, request=request, workspace=sandbox.workspace,
                                  paths=sandbox.context) == ("ask", "policy")


def test_auto_accept_edits_goes_by_the_resolved_path(sandbox):
    policy = compile_policy({"default": "ask"})

    def mode(path):
        request = {"tool": "write", "input": {"file_path": path}, "cwd": sandbox.workspace}
        verdict = evaluate(policy, request, paths=sandbox.context)
        return apply_runtime_mode(verdict, mode="auto-accept-edits", request=request, workspace=sandbox.workspace,
                                  paths=sandbox.context)

    assert mode("src/a.py") == ("allow", "mode")
    assert mode("source-link/a.py") == ("allow", "mode")
    assert mode("elsewhere-link/x") == ("ask", "policy")  # a symlink out of the workspace
    assert mode("/srv/x") == ("ask", "policy")


def test_auto_keeps_asking_for_writes_outside_secrets_and_what_it_could_not_read(sandbox):
    policy = compile_policy({"default": "ask"})
    for command in ("echo x > /srv/x", "cat .env", "$CMD x", "LD_PRELOAD=x ls", "curl https://x/$(id)", "env",
                    "rm \"$f\""):
        request = {"tool": "bash", "input": bash(command), "cwd": sandbox.workspace}
        verdict = evaluate(policy, request, paths=sandbox.context)
        assert apply_runtime_mode(verdict, mode="auto", request=request, workspace=sandbox.workspace) == \
            ("ask", "policy"), command
    request = {"tool": "bash", "input": bash("python -c 'print(1)'"), "cwd": sandbox.workspace}
    verdict = evaluate(policy, request, paths=sandbox.context)
    assert apply_runtime_mode(verdict, mode="auto", request=request, workspace=sandbox.workspace) == ("allow", "mode")


def test_a_path_context_is_a_small_frozen_value():
    ctx = PathContext("/w", ("/home/a",), ("/var/gh",))
    assert (ctx.workspace, ctx.homes, ctx.protected_dirs) == ("/w", ("/home/a",), ("/var/gh",))
    with pytest.raises(AttributeError):
        ctx.workspace = "/x"  # type: ignore[misc]


# A rename (Codex's `*** Move to:`, an ACP move) writes its new path too: it was judged by
# the file it moves alone, so `src/app.py` moved to `~/.bashrc` or out of the workspace
# passed as a local edit.
@pytest.mark.parametrize("target, decision", [
    ("src/b.py", "allow"), ("/srv/app.py", "ask"), ("../../../outside.py", "ask"), ("~/.bashrc", "deny"),
    (".claude/settings.json", "deny"), (".git/hooks/pre-commit", "deny"), ("sub/.git", "deny"),
])
def test_a_move_is_decided_at_both_ends(sandbox, target, decision):
    verdict = decide(DEFAULT_POLICY, "edit", {"file_path": "src/app.py", "move_path": target}, sandbox)
    assert verdict.decision == decision, verdict.reason
    assert [p.path for p in verdict.paths] == ["src/app.py", target]


def test_a_move_is_allowed_by_a_grant_or_a_mode_only_when_both_ends_are(sandbox):
    grants = [{"tool": "edit", "match": "src/**"}]
    ask_edits = {"edits": {"default": "ask"}, "default": "ask"}
    within = {"file_path": "src/app.py", "move_path": "src/b.py"}
    out_of = {"file_path": "src/app.py", "move_path": "docs/app.py"}
    assert decide(ask_edits, "edit", within, sandbox, grants).decision == "allow"
    assert decide(ask_edits, "edit", out_of, sandbox, grants).decision == "ask"
    assert suggest_grant({"tool": "edit", "input": out_of, "cwd": sandbox.workspace}, paths=sandbox.context) is None
    for tool_input, mode_decision in ((within, "allow"), ({**within, "move_path": "/srv/app.py"}, "ask")):
        request = {"tool": "edit", "input": tool_input, "cwd": sandbox.workspace}
        verdict = evaluate(compile_policy(ask_edits), request, paths=sandbox.context)
        assert apply_runtime_mode(verdict, mode="auto-accept-edits", request=request, workspace=sandbox.workspace,
                                  paths=sandbox.context)[0] == mode_decision


@pytest.mark.parametrize("bad", ["", 3, "a\x00b"])
def test_a_move_to_no_path_is_refused(sandbox, bad):
    with pytest.raises(PolicyError, match="move_path"):
        decide(DEFAULT_POLICY, "edit", {"file_path": "src/app.py", "move_path": bad}, sandbox)
