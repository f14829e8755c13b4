"""The deadline's services (approvals/services.py): a give-up expires a pending approval at
once, recorded and broadcast as any expiry. (The hook gateway's bound on a deadline is set
when the approval is opened: tests/integrations/test_hook_deadline.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from approvals.gate import gate_request
from approvals.models import Approval, Policy
from approvals.services import approval_decide, approval_give_up, policy_save
from runs.models import Activity
from runs.services import run_create

pytestmark = pytest.mark.django_db


def _pending(reviewer: Any, *, timeout_s: float | None) -> Approval:
    policy_save(policy=Policy(name="ask-all", document={"default": "ask"}))
    run_policy = {"approvals": {"timeout_s": timeout_s if timeout_s is not None else -1}}
    run = run_create(
        driver="scripted",
        prompt="p",
        scenario={"steps": [{"message": "m"}]},
        policy_name="ask-all",
        run_policy=run_policy,
        user=reviewer,
    )
    asked = gate_request(run_id=run.pk, tool="bash", input={"command": "date"}, cwd="/tmp")
    assert asked.outcome == "wait" and asked.approval_id is not None
    return Approval.objects.get(pk=asked.approval_id)


def test_a_give_up_expires_the_approval_at_once_as_any_expiry_is_recorded(
    reviewer: Any, clock: Any, console_fragments: list[tuple[str, int]]
) -> None:
    approval = _pending(reviewer, timeout_s=3600)  # an hour left: only the give-up expires it
    console_fragments.clear()
    assert approval_give_up(approval_id=approval.pk) is True
    expired = Approval.objects.get(pk=approval.pk)
    assert (expired.status, expired.decided_via) == (Approval.Status.EXPIRED, Approval.Via.TIMEOUT)
    assert expired.deadline is not None and expired.deadline <= clock.now()
    resolved = Activity.objects.filter(run_id=approval.run_id, event="approval.resolved").values_list("payload", flat=True)
    assert list(resolved) == [{"approval": approval.pk, "decision": "expired", "via": "timeout"}]
    assert ("approval_removed", approval.pk) in console_fragments  # the card leaves the inbox


def test_a_give_up_leaves_a_decided_approval_as_it_was(reviewer: Any, admin_user: Any, clock: Any) -> None:
    approval = _pending(reviewer, timeout_s=3600)
    approval_decide(approval_id=approval.pk, user=admin_user, approve=True, hash=approval.hash)
    assert approval_give_up(approval_id=approval.pk) is False
    decided = Approval.objects.get(pk=approval.pk)
    assert (decided.status, decided.deadline) == (Approval.Status.APPROVED, approval.deadline)
