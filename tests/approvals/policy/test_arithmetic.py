"""bash evaluates a variable's value as arithmetic, recursively, and expands an array
subscript inside it: a value the agent chose runs a command the gate never saw
(approvals/policy/arith.py). Each `asks` case ran its command in bash 5.2 when tried
(`touch` in place of `rm -rf ~`), or is the same shape through another door."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from approvals.policy import DEFAULT_POLICY

from .policytest import DENY_LIST_POLICY, assert_at_least, assert_cases, bash

RUNS_CODE = [
    "x='a[$(rm -rf ~)]'; echo $((x))",
    "x=$(cat build/payload); echo $((x + 1))",
    "x=$(cat build/payload); echo $(( $x ))",
    "x=$(cat build/p); echo $[x]",
    "x=$(cat build/p); (( x ))",
    "x=$(cat build/p); for ((i = 0; i < x; i++)); do :; done",
    "x=$(cat build/p); let y=x+1",
    "x=$(cat build/p); [[ $x -eq 1 ]]",
    "x=$(cat build/p); echo ${a[x]}",
    "x=$(cat build/p); a[x]=1",
    "x=$(cat build/p); echo ${s:x}",
    "x=$(cat build/p); declare -i y=x",
    "x=$(cat build/p); echo ${!x}",
    "read -r n < build/n; echo $((n * 2))",
    "while read n; do ((total += n)); done < build/nums",
    "for x in 'a[$(rm -rf ~)]'; do echo $((x)); done",
    "f() { echo $(($1)); }; f 'a[$(rm -rf ~)]'",
    "x=$(cat build/p) bash -c 'echo $((x))'",
    "n=$(wc -l src/app.py); echo $((n + 1))",  # wc prints the file's name too
    "declare -n r='a[$(rm -rf ~)]'; echo $r",
    "printf -v 'a[$(rm -rf ~)]' x",
    "printf -v \"a[\\$(rm -rf ~)]\" x",
    "printf -v $'a[\\x24(rm -rf ~)]' x",
    "v=$(cat build/p); printf -v \"$v\" x",
    "unset 'a[$(rm -rf ~)]'",
    "[[ -v 'a[$(rm -rf ~)]' ]]",
    "test -v 'a[$(rm -rf ~)]'",
    "x='$(rm -rf ~)'; echo \"${x@P}\"", "x=$(cat build/p); echo ${x@P}", "a=($(cat build/p)); echo ${a[@]@P}",
]

FIXED = [
    "echo $((1 + 2))", "i=0; echo $((i + 1))", "for ((i = 0; i < 10; i++)); do echo $i; done",
    "n=$(wc -l < src/app.py); echo $((n + 1))", "n=$(cat src/app.py | wc -l); echo $((n * 2))",
    "for i in 1 2 3; do echo $((i * 2)); done", "for i in $(seq 5); do echo $((i * 2)); done",
    "echo $(( $(date +%s) - 5 ))", "x=5; [[ $x -gt 3 ]] && echo big", "echo ${a[@]} ${#a[@]} ${a[0]}",
    "name=HOME; echo ${!name}", "echo ${!BASH*}", "echo ${x:-default} ${x#pre}", "printf -v out '%s' hi; echo $out",
    "declare -a arr=(1 2 3); echo ${arr[1]}", "x=$(cat build/p); declare x; export x", "let i=1 j=i+1",
    "s=hello; echo ${s:1:2}", "for f in src/*.py; do echo ${#f}; done", "echo $((RANDOM % 6)) $(($$ + 1))",
    "x=hello; echo ${x@Q} ${x@P} ${HOME@P}",
]


def test_arithmetic_over_a_value_the_command_does_not_fix_is_code(sandbox):
    # under a policy whose default allows every command, as under the default policy
    for policy in (DENY_LIST_POLICY, DEFAULT_POLICY):
        assert_at_least(policy, [("bash", bash(c), "ask", None) for c in RUNS_CODE], paths=sandbox.context,
                        cwd=sandbox.workspace)
    assert_cases(DENY_LIST_POLICY, [("bash", bash("x='a[$(id)]'; echo $((x))"), "ask", "commands.interpreter")],
                 paths=sandbox.context, cwd=sandbox.workspace)


def test_arithmetic_over_integers_and_names_without_a_subscript_stays_allowed(sandbox):
    assert_cases(DEFAULT_POLICY, [("bash", bash(c), "allow", None) for c in FIXED], paths=sandbox.context,
                 cwd=sandbox.workspace)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.parametrize("script", [
    "x='a[$(touch {p})]'; echo $((x))",
    "declare -n r='a[$(touch {p})]'; echo $r",
    "printf -v 'a[$(touch {p})]' x",
    "[[ -v 'a[$(touch {p})]' ]]",
    "x='a[$(touch {p})]'; echo ${{!x}}",
    "x='a[$(touch {p})]'; [[ $x -eq 1 ]]",
    "x='a[$(touch {p})]'; echo ${{a[x]}}",
    "x='$(touch {p})'; echo ${{x@P}}",
])
def test_the_premise_holds_in_this_machine_s_bash(script, tmp_path):
    """What the gate asks about does run a command in bash (the reason the check exists)."""
    proof = tmp_path / "ran"
    subprocess.run(["bash", "-c", script.format(p=proof)], capture_output=True, timeout=10, check=False)
    assert proof.exists()


def test_no_session_grant_is_offered_for_arithmetic_that_may_run_code(sandbox):
    from approvals.policy import compile_policy, evaluate
    from approvals.policy.grants import suggest_grant

    request = {"tool": "bash", "input": bash("x=$(cat build/p); echo $((x))"), "cwd": sandbox.workspace}
    verdict = evaluate(compile_policy(DENY_LIST_POLICY), request, paths=sandbox.context)
    assert verdict.decision == "ask" and verdict.rule == "commands.interpreter"
    assert "evaluates `x` as arithmetic" in verdict.reason
    assert suggest_grant(request, verdict, paths=sandbox.context) is None
