"""The bypass tables of test_bypasses.py, written for the built-in default policy, against the
presets a fresh install offers (approvals/migrations/0005 and 0010).

"Standard review" decides every attempt as the built-in default does. "Sandboxed" without a
floor decides every one exactly as Standard review (same decision, same rule). Inside the
floor Sandboxed runs what stays in the workspace unasked (the workspace's own code), but
network, writes outside the workspace or through symlinks out of it, protected files and
secret reads stay asked or denied.
"""

from __future__ import annotations

import importlib

import pytest

from approvals.policy import RunView, compile_policy, evaluate

from .policytest import assert_at_least, assert_cases, bash
from .test_bypasses import (
    NETWORK,
    OUTSIDE_THE_WORKSPACE,
    PROTECTED,
    RUNS_THE_WORKSPACE_S_CODE,
    SECRET_READS,
    SYMLINKS_OUT_OF_THE_WORKSPACE,
)

STANDARD = next(p for p in importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS
                if p["name"] == "Standard review")["document"]
SANDBOXED = importlib.import_module("approvals.migrations.0010_sandboxed_preset").SANDBOXED["document"]

# What must not leave the workspace unasked, floor or not.
LEAVES_THE_WORKSPACE = {"network": NETWORK, "outside": OUTSIDE_THE_WORKSPACE, "symlinks": SYMLINKS_OUT_OF_THE_WORKSPACE,
                        "protected": PROTECTED, "secrets": SECRET_READS}
TABLES = {**LEAVES_THE_WORKSPACE, "workspace-code": RUNS_THE_WORKSPACE_S_CODE}

# Found while writing these tests: awk reading a file whose name is a variable
# (`getline < f`) was read only as code the policy cannot read (`commands.interpreter`),
# which the floor runs unasked (`in_floor.code: allow`), while `cat $f` stays a sensitive read
# (asked in the floor too). The read is now also a read of a path only known at run time.
AWK_RUN_TIME_READ = ("bash", bash("awk 'BEGIN{f=\".env\"; getline l < f; print l}'"), "ask", None)
assert AWK_RUN_TIME_READ in SECRET_READS


@pytest.mark.parametrize("name", TABLES)
def test_standard_review_decides_every_bypass_as_the_built_in_default(name: str, sandbox) -> None:
    assert_cases(STANDARD, TABLES[name], paths=sandbox.context, cwd=sandbox.workspace)


@pytest.mark.parametrize("name", TABLES)
def test_without_a_floor_sandboxed_decides_every_bypass_as_standard_review(name: str, sandbox) -> None:
    no_floor = RunView(floor=False)
    assert_cases(SANDBOXED, TABLES[name], paths=sandbox.context, cwd=sandbox.workspace, run_view=no_floor)

    def decided(document: dict, case: tuple) -> tuple[str, str]:
        verdict = evaluate(compile_policy(document), {"tool": case[0], "input": case[1], "cwd": sandbox.workspace},
                           paths=sandbox.context, run_view=no_floor)
        return verdict.decision, verdict.rule

    assert [case[1] for case in TABLES[name] if decided(SANDBOXED, case) != decided(STANDARD, case)] == []


@pytest.mark.parametrize("name", LEAVES_THE_WORKSPACE)
def test_inside_the_floor_sandboxed_still_asks_or_denies_what_leaves_the_workspace(name: str, sandbox) -> None:
    assert_at_least(SANDBOXED, LEAVES_THE_WORKSPACE[name], paths=sandbox.context, cwd=sandbox.workspace, run_view=RunView(floor=True))


def test_inside_the_floor_a_secret_read_through_awks_run_time_file_name_is_asked(sandbox) -> None:
    assert_at_least(SANDBOXED, [AWK_RUN_TIME_READ], paths=sandbox.context, cwd=sandbox.workspace,
                    run_view=RunView(floor=True))
    verdict = evaluate(compile_policy(SANDBOXED), {"tool": "bash", "input": AWK_RUN_TIME_READ[1], "cwd": sandbox.workspace},
                       paths=sandbox.context, run_view=RunView(floor=True))
    assert (verdict.decision, verdict.rule) == ("ask", "reads.sensitive")
    assert "`$f`" in verdict.reason and "only known at run time" in verdict.reason
