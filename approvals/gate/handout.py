"""The last move of a decision: record it on the step and hand it to the driver.

Every answer a driver receives passes through `hand_out`, in the transaction that records
it, so the step's state always says what the agent was told: an allowed permission is
`executing` from the moment it is handed out (a crash after that is an interrupted side
effect, never a silent re-run); an answered question or reviewed plan is `answered` with
the answers on the step; a refusal is `denied`/`aborted` with what the agent was told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from approvals.models import Approval
from drivers.base import GateAnswer, Outcome
from runs.models import Step

from .lifecycle import step_move

S = Step.Status
_PERSON_KINDS = (Approval.Kind.QUESTION, Approval.Kind.PLAN_REVIEW)


def handed_out(
    kind: str, *, outcome: Outcome, reason: str = "", decided_by: str = "policy", answers: Mapping[str, Any] | None = None,
    plan_mode: str = "",
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Where `outcome` leaves a step of `kind`: the states it moves through and the fields
    recorded with the move (pure; `hand_out` and the gate's `step_record` apply it)."""
    if outcome == "wait":
        raise ValueError("a pending approval is not handed out")
    if outcome in ("allow", "answer") and kind in _PERSON_KINDS:
        return (S.ANSWERED,), {"decided_by": decided_by, "answers": dict(answers) if answers is not None else None,
                               "plan_mode": plan_mode}
    if outcome == "allow":
        return (S.ALLOWED, S.EXECUTING), {"decided_by": decided_by}
    if outcome == "deny":
        return (S.DENIED,), {"decided_by": decided_by, "told": reason}
    if outcome == "abort":
        return (S.ABORTED,), {"decided_by": decided_by, "told": reason}
    raise ValueError(f"unknown outcome {outcome!r}")  # pragma: no cover - Outcome is a closed set


def hand_out(
    step: Step,
    *,
    outcome: Outcome,
    reason: str = "",
    decided_by: str = "policy",
    approval_id: int | None = None,
    answers: Mapping[str, Any] | None = None,
    plan_mode: str = "",
    scope: str = "once",
    timed_out: bool = False,
    told_answers: Mapping[str, Any] | None = None,
    updated_input: Mapping[str, Any] | None = None,
) -> GateAnswer:
    """Move the step to where `outcome` leaves it and return what the driver is told
    (`told_answers`: the answers as the agent gets them, where they differ from the record:
    secret answers, unanswered questions said in words)."""
    path, fields = handed_out(step.kind, outcome=outcome, reason=reason, decided_by=decided_by, answers=answers,
                              plan_mode=plan_mode)
    step_move(step.pk, *path, **fields)
    return GateAnswer(
        step_id=step.pk, outcome=outcome, reason=reason, decided_by=decided_by, approval_id=approval_id,
        answers=told_answers if told_answers is not None else answers, plan_mode=plan_mode, scope=scope,
        timed_out=timed_out, updated_input=updated_input if outcome == "allow" else None,
    )
