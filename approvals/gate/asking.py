"""Opening an approval: what a person is asked, bound by its hash, with its deadline."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from approvals import policy as core
from approvals.models import Approval
from infra import broadcast, clock
from runs.events import ApprovalRequested, Event
from runs.models import Run, Step
from runs.timeline import activity_record

from .status import run_status_sync

# Questions are logged as user input; everything else as approvals.
ACTIVITY_KIND: dict[str, str] = {Approval.Kind.QUESTION: "user-input"}


def activity_kind(kind: str) -> str:
    return ACTIVITY_KIND.get(kind, "approval")


def deadline_for(run: Run) -> datetime | None:
    timeout = run.run_policy.get("approvals", {}).get("timeout_s")
    if timeout is None:
        return None
    return clock.now() + timedelta(seconds=float(timeout))


def _sooner(deadline: datetime | None, latest: datetime | None) -> datetime | None:
    """The earlier of two deadlines, None for none."""
    if deadline is None or latest is None:
        return latest if deadline is None else deadline
    return min(deadline, latest)


def routing_for(run: Run, kind: str) -> str:
    """ask | auto-approve | auto-deny for this kind, from the run's materialised policy."""
    if kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT:
        return "ask"
    routing = str(run.run_policy.get("approvals", {}).get(kind, "ask"))
    if kind == Approval.Kind.QUESTION and routing != "ask":
        return "auto-deny"  # there is no answer to invent: a question is asked or declined
    return routing


def capability_of(run: Run, step_seq: int, request: Mapping[str, Any], subtype: str, attempt: int, kind: str) -> dict[str, Any]:
    # The run, step and attempt make a retried or repeated request a different approval,
    # so a decision made for an earlier one is refused as stale.
    if kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT:
        return {"tool": request.get("tool"), "args": request.get("input"), "run": run.pk, "step": step_seq, "attempt": attempt}
    return {"tool": request.get("tool"), "subtype": subtype, "run": run.pk, "step": step_seq, "attempt": attempt}


def approval_open(
    *,
    run: Run,
    step: Step,
    kind: str,
    subtype: str,
    request: Mapping[str, Any],
    presentation: Mapping[str, Any],
    attempt: int = 1,
    verdict: core.Verdict | None = None,
    latest_deadline: datetime | None = None,
) -> Approval:
    """Create a pending approval for the step, log it, mark the run waiting, push the card.
    `latest_deadline`: the asker cannot wait longer (the hook gateway's hook times out): the
    deadline is the run policy's, or that one if it is sooner (or the policy sets none)."""
    capability = capability_of(run, step.seq, request, subtype, attempt, kind)
    confirmation, word = "", ""
    if kind == Approval.Kind.PERMISSION:
        # What approving takes (issue 32.2), fixed now so the card and the API ask the same.
        confirmation, word = core.confirmation_for(
            core.confirm_requirements(run.run_policy or {}), request, verdict)
    # "Always allow" is not offered where one approval takes more than Approve.
    suggestion = core.suggest_grant(request, verdict) if kind == Approval.Kind.PERMISSION and not confirmation else None
    approval = Approval.objects.create(
        run=run,
        step=step,
        kind=kind,
        subtype=subtype,
        capability=capability,
        presentation=dict(presentation),
        request=dict(request),
        hash=core.approval_hash(kind=kind, capability=capability, presentation=presentation, request=request),
        suggested_grant=suggestion[0] if suggestion else None,
        suggested_grant_label=suggestion[1] if suggestion else "",
        deadline=_sooner(deadline_for(run), latest_deadline),
        attempt=attempt,
        confirmation=confirmation,
        confirmation_word=word,
    )
    event = Event.USER_INPUT_REQUESTED if kind == Approval.Kind.QUESTION else Event.APPROVAL_REQUESTED
    payload: ApprovalRequested = {
        "approval": approval.pk,
        "step": step.seq,
        "kind": kind,
        "subtype": subtype,
        "attempt": attempt,
        "deadline": approval.deadline.isoformat() if approval.deadline else None,
    }
    if confirmation:
        payload["confirmation"] = confirmation
    activity_record(run_id=run.pk, kind=activity_kind(kind), event=event, payload=payload)
    run_status_sync(run_id=run.pk)
    approval_id = approval.pk
    broadcast.fragment_on_commit(
        [broadcast.INBOX_GROUP, broadcast.run_console_group(run.pk)], "approval_added", approval_id=approval_id
    )
    return approval
