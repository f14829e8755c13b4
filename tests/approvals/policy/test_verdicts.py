"""What a verdict carries: its decision is always a Decision (with a severity): every caller
passes the member (the gate's own verdicts too: tests/approvals/gate/test_request_verdicts.py),
and each segment's record says its side-effect class (the step keeps it, the API's evaluate
answers it)."""

from __future__ import annotations

import dataclasses

from approvals.policy import DEFAULT_POLICY, Decision, PathContext, compile_policy, evaluate
from approvals.policy.verdicts import Verdict


def test_a_verdict_holds_the_decision_member_it_is_given() -> None:
    for member in Decision:
        verdict = Verdict(member, "why", "rule")
        assert verdict.decision is member and verdict.decision.severity == member.severity
        assert (verdict.reason, verdict.rule, verdict.segments, verdict.floors) == ("why", "rule", (), ())
    replaced = dataclasses.replace(Verdict(Decision.ALLOW, "why", "rule"), decision=Decision.DENY)
    assert replaced.decision is Decision.DENY and replaced.reason == "why"


def test_each_segments_record_says_its_side_effect_class(tmp_path) -> None:
    verdict = evaluate(compile_policy(DEFAULT_POLICY), {"tool": "bash", "input": {"command": "ls && touch x"},
                                                        "cwd": str(tmp_path)}, paths=PathContext(workspace=str(tmp_path)))
    record = verdict.to_dict()
    assert [(s["command"], s["side_effect_class"]) for s in record["segments"]] == [
        ("ls", "read-only"), ("touch x", "local-mutation")]
