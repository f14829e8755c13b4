"""What a verdict carries: its decision is always a Decision (with a severity), whatever the
caller named it by, and each segment's record says its side-effect class (the step keeps it,
the API's evaluate answers it)."""

from __future__ import annotations

import dataclasses

from approvals.policy import DEFAULT_POLICY, Decision, PathContext, compile_policy, evaluate
from approvals.policy.verdicts import Verdict


def test_a_verdict_named_by_its_string_holds_the_decision_member() -> None:
    for word, member in (("allow", Decision.ALLOW), ("ask", Decision.ASK), ("deny", Decision.DENY),
                         ("abort", Decision.ABORT)):
        verdict = Verdict(word, "why", "rule")
        assert verdict.decision is member and verdict.decision.severity == member.severity
        assert Verdict(member, "why", "rule").decision is member
    replaced = dataclasses.replace(Verdict("allow", "why", "rule"), decision="deny")
    assert replaced.decision is Decision.DENY


def test_each_segments_record_says_its_side_effect_class(tmp_path) -> None:
    verdict = evaluate(compile_policy(DEFAULT_POLICY), {"tool": "bash", "input": {"command": "ls && touch x"},
                                                        "cwd": str(tmp_path)}, paths=PathContext(workspace=str(tmp_path)))
    record = verdict.to_dict()
    assert [(s["command"], s["side_effect_class"]) for s in record["segments"]] == [
        ("ls", "read-only"), ("touch x", "local-mutation")]
