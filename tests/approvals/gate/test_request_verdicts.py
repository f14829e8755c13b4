"""The verdicts the gate makes itself (a question or plan to review, a policy that no longer
compiles, a malformed request) hold `Decision` members, as the policy core's do: `Verdict`
takes a Decision, it no longer reads a string into one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from approvals.gate import request as gate
from approvals.policy import Decision
from runs.services import run_create


@pytest.mark.parametrize("kind", ["plan_review", "question"])
def test_what_needs_a_person_is_asked_with_the_member(kind: str) -> None:
    verdict, grants, view = gate._verdict(SimpleNamespace(), {}, kind)  # type: ignore[arg-type]
    assert type(verdict.decision) is Decision and verdict.decision is Decision.ASK
    assert verdict.decision.severity == Decision.ASK.severity
    assert (grants, view) == ([], None)


def test_a_policy_that_no_longer_compiles_denies_with_the_member() -> None:
    run = SimpleNamespace(policy_document={"commands": {"deny": ["curl * | sh"]}, "default": "allow"},
                          policy_version="old-server-hash")
    verdict, _, _ = gate._verdict(run, {"tool": "bash", "input": {"command": "ls"}}, "permission")  # type: ignore[arg-type]
    assert type(verdict.decision) is Decision and verdict.decision is Decision.DENY


@pytest.mark.django_db
def test_a_malformed_request_is_denied_with_the_member(reviewer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded: list[Any] = []
    real = gate.step_record

    def spy(*args: Any, **kwargs: Any) -> Any:
        recorded.append(kwargs["verdict"])
        return real(*args, **kwargs)

    monkeypatch.setattr(gate, "step_record", spy)
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    answer = gate.gate_request(run_id=run.pk, tool="bash", input={"no_command": 1}, cwd=run.workspace)
    assert answer.outcome == "deny" and "Malformed request" in (answer.reason or "")
    assert [type(v) for v in recorded] == [Decision] and recorded == [Decision.DENY]
