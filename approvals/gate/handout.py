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
from runs.models import Step

from .lifecycle import step_move
from .outcome import GateOutcome, Outcome

S = Step.Status
_PERSON_KINDS = (Approval.Kind.QUESTION, Approval.Kind.PLAN_REVIEW)


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
) -> GateOutcome:
    """Move the step to where `outcome` leaves it and return what the driver is told."""
    if outcome == "wait":
        raise ValueError("a pending approval is not handed out")
    if outcome in ("allow", "answer") and step.kind in _PERSON_KINDS:
        step_move(step.pk, S.ANSWERED, decided_by=decided_by, answers=dict(answers) if answers is not None else None,
                  plan_mode=plan_mode)
    elif outcome == "allow":
        step_move(step.pk, S.ALLOWED, S.EXECUTING, decided_by=decided_by)
    elif outcome == "deny":
        step_move(step.pk, S.DENIED, decided_by=decided_by, told=reason)
    elif outcome == "abort":
        step_move(step.pk, S.ABORTED, decided_by=decided_by, told=reason)
    else:  # pragma: no cover - Outcome is a closed set
        raise ValueError(f"unknown outcome {outcome!r}")
    return GateOutcome(
        step_id=step.pk, outcome=outcome, reason=reason, decided_by=decided_by, approval_id=approval_id,
        answers=answers, plan_mode=plan_mode, scope=scope, timed_out=timed_out,
    )
