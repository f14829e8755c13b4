"""Closed world for allow (issue 29): what a program's model does not recognise is never
allowed by a class rule on its own; inside the sandbox floor the policy's `unverified`
setting decides, without one it is asked about."""

from __future__ import annotations

import pytest

from approvals.policy import DEFAULT_POLICY, RunView, compile_policy, evaluate, policy_problems

from .policytest import bash

DEFAULT = compile_policy(DEFAULT_POLICY)
FLOOR = RunView(floor=True)


def decide(command: str, *, policy=DEFAULT, floor: bool = False, cwd: str = "/home/dev/project", grants=()):
    return evaluate(policy, {"tool": "bash", "input": bash(command), "cwd": cwd},
                    run_view=FLOOR if floor else None, grants=grants)


@pytest.mark.parametrize("command", [
    "ls --weird", "cat --number-lines-please x", "git log --frobnicate", "sort -Q x", "du --no-such-option",
    "gh extension install owner/ext", "gh repo clone a/b", "git reflog expire --all",
    "git pull https://other.example/repo main", "git clone https://other.example/x", "git fetch git@host:x.git",
    "man -C ./man.conf ls", "wget -e robots=off https://example.com",
])
def test_what_a_model_does_not_recognise_is_asked_without_a_floor_and_allowed_inside_one(command):
    outside = decide(command)
    assert (outside.decision, outside.rule) == ("ask", "commands.unverified"), outside
    assert "commands.unverified" in outside.floors
    assert decide(command, floor=True).decision == "allow"


def test_the_reason_says_what_was_not_recognised():
    verdict = decide("ls --weird src")
    assert "`ls --weird` is not in ls's model" in verdict.reason
    assert "`git pull` from `https://other.example/repo`" in decide("git pull https://other.example/repo main").reason


@pytest.mark.parametrize("command", [
    "ls -la src", "ls --color=auto -lh", "cat -n src/app.py", "head -20 src/app.py", "git log --oneline -20",
    "git status --short --branch", "git diff --stat --no-color", "git rev-parse --show-toplevel",
    "git branch --show-current", "grep -rn --include='*.py' TODO src", "wc -l src/app.py", "du -sh src",
    "sort -u -k2,2 x", "find . -name '*.py' -type f -print", "git pull origin main", "git fetch --prune",
    "pip install requests", "kubectl get pods -o wide", "ps -eo pid,comm", "tail -n +5 x",
])
def test_everyday_commands_the_models_declare_stay_allowed_without_a_floor(command):
    assert decide(command).decision == "allow", decide(command)


def test_the_issue_s_examples_are_not_allowed_by_the_default_policy():
    pip_user = decide("pip install --user x")  # writes ~/.local (its bin is protected)
    assert pip_user.decision == "deny" and any(p.path == "~/.local" for s in pip_user.segments for p in s.paths)
    secrets = decide("kubectl get secrets -o yaml")
    assert (secrets.decision, secrets.rule) == ("ask", "reads.sensitive")
    assert decide("kubectl get secrets -o yaml", floor=True).decision == "ask"  # a secret read, floor or not
    assert decide("kubectl get secrets").decision == "allow"  # names only
    pull = decide("git pull https://other.example/repo main")
    assert (pull.decision, pull.rule) == ("ask", "commands.unverified")


@pytest.mark.parametrize("setting, floor, expected", [
    (None, True, "allow"), ("allow", True, "allow"), ("ask", True, "ask"), ("deny", True, "deny"),
    (None, False, "ask"), ("allow", False, "ask"), ("ask", False, "ask"), ("deny", False, "deny"),
])
def test_the_unverified_setting_decides_inside_the_floor_and_without_one_never_allows(setting, floor, expected):
    document = dict(DEFAULT_POLICY, **({"unverified": setting} if setting else {}))
    assert decide("ls --weird", policy=compile_policy(document), floor=floor).decision == expected


def test_the_unverified_setting_is_validated_like_the_rest():
    problems = policy_problems(dict(DEFAULT_POLICY, unverified="sometimes"))
    assert [p.field for p in problems] == ["unverified"]
    assert "allow, ask, deny" in problems[0].message and "'sometimes'" in problems[0].message
    assert policy_problems(dict(DEFAULT_POLICY, unverified=True))[0].field == "unverified"


def test_an_allow_rule_or_an_exact_grant_still_allows_what_the_model_does_not_recognise():
    allowing = compile_policy(dict(DEFAULT_POLICY, commands={"allow": ["ls"]}))
    assert decide("ls --weird", policy=allowing).decision == "allow"
    granted = decide("ls --weird", grants=[{"tool": "bash", "match": "ls --weird"}])
    assert (granted.decision, granted.rule) == ("allow", "grant")


def test_an_unknown_program_is_decided_as_before_and_a_deny_is_never_lifted_by_the_floor():
    assert decide("./build.sh --fast").rule == "default"
    assert decide("rm -rf / --weird", floor=True).decision == "deny"
    assert decide("git push --frobnicate", floor=True).decision == "ask"  # remote: its class asks anyway
