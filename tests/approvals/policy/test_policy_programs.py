"""An administrator adds or overrides a program model in the rule policy (`"programs"`),
validated like the rest; deny and ask rules still hold however the new model reads."""

from __future__ import annotations

import pytest

from approvals.policy import DEFAULT_POLICY, RunView, compile_policy, evaluate, policy_problems

DEPLOY = {"class": "read-only", "options": "v/verbose o/output: q n/dry-run", "effects": {"-o": "writes"},
          "subcommands": {"status": "read-only", "plan": "read-only", "apply": "remote-mutation"},
          "summary": "our deployment helper"}


def decide(document, command: str, floor: bool = False):
    return evaluate(compile_policy(document), {"tool": "bash", "input": {"command": command},
                                               "cwd": "/home/dev/project"}, run_view=RunView(floor=floor))


def test_a_policy_s_own_program_is_read_by_its_model():
    document = dict(DEFAULT_POLICY, programs={"deployctl": DEPLOY})
    assert decide(document, "deployctl status -v").decision == "allow"
    assert decide(document, "deployctl apply").decision == "ask"  # remote-mutation
    assert decide(document, "deployctl status --force").rule == "commands.unverified"  # not in its model
    assert decide(document, "deployctl destroy").decision == "ask"  # a subcommand it does not list: no class
    assert decide(document, "deployctl status -o /tmp/out").decision == "ask"  # writes outside the workspace
    assert decide(DEFAULT_POLICY, "deployctl status").rule == "default"  # unknown without it


def test_a_policy_may_override_a_built_in_model_without_sidestepping_its_deny_rules():
    document = dict(DEFAULT_POLICY, programs={"rm": {"class": "read-only", "options": "x/recursive"}},
                    commands={"deny": ["rm -r"]})
    # its model reads `-r` as an unknown option, the built-in as `-r`: the deny rule holds
    assert decide(document, "rm -r build").decision == "deny"
    assert decide(document, "rm build/x").decision == "allow"


@pytest.mark.parametrize("programs, field, words", [
    ({"my tool": {}}, "programs.my tool", ["command's name"]),
    ({"t": {"class": "harmless"}}, "programs.t.class", ["side-effect class"]),
    ({"t": {"options": "v/verbose o|x"}}, "programs.t.options", ["not understood", "o|x"]),
    ({"t": {"options": "v", "effects": {"-o": "writes"}}}, "programs.t.effects.-o", ["not one of the program's options"]),
    ({"t": {"options": "o:", "effects": {"-o": "deletes"}}}, "programs.t.effects.-o", ["reads, writes"]),
    ({"t": {"operands": "maybe"}}, "programs.t.operands", ["read, write, none"]),
    ({"t": {"subcommands": {"x": "destroys"}}}, "programs.t.subcommands.x", ["side-effect class"]),
    ({"t": {"color": "blue"}}, "programs.t.color", ["unknown key"]),
    ([], "programs", ["must be an object"]),
])
def test_a_policy_s_programs_are_validated_naming_the_field(programs, field, words):
    problems = policy_problems(dict(DEFAULT_POLICY, programs=programs))
    assert [p.field for p in problems] == [field], [p.message for p in problems]
    assert all(w in problems[0].message for w in words), problems[0].message
