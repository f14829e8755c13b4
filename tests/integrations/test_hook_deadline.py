"""A hook's request is asked with the deadline it really has: the hook cannot wait longer
than GATEHOUSE_HOOK_WAIT_S, so its approval is opened with that bound (never later than the
run policy's own), and the `approval.requested` activity (which the webhooks and the
notifications read) says the same deadline. One card is pushed, not a second to correct it."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from approvals.models import Approval, Policy
from approvals.services import policy_save
from integrations.hooks import gateway
from runs.models import Activity

pytestmark = pytest.mark.django_db


def _asked(reviewer: Any, run_policy: dict[str, Any]) -> tuple[Approval, dict[str, Any]]:
    policy_save(policy=Policy(name="hooks", document={"default": "ask"}, run_policy=run_policy))
    call = gateway.parse_pre_tool_use({
        "session_id": "sess-deadline", "transcript_path": "/home/dev/.claude/projects/x/sess-deadline.jsonl",
        "cwd": "/work/app", "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "touch x"}, "tool_use_id": "toolu_deadline",
    })
    answer = gateway.hook_pre_tool_use(user=reviewer, call=call, policy_name="hooks")
    assert answer.outcome is not None and answer.outcome.outcome == "wait" and answer.outcome.approval_id is not None
    approval = Approval.objects.get(pk=answer.outcome.approval_id)
    [requested] = Activity.objects.filter(run_id=approval.run_id, event="approval.requested").values_list("payload", flat=True)
    return approval, requested


@pytest.mark.parametrize("timeout_s", [None, 3600])
def test_the_requested_activity_carries_the_hook_s_bounded_deadline(
    reviewer: Any, settings: Any, clock: Any, console_fragments: list[tuple[str, int]], timeout_s: float | None
) -> None:
    settings.GATEHOUSE_HOOK_WAIT_S = 120
    before = clock.now()
    approval, requested = _asked(reviewer, {"approvals": {"timeout_s": timeout_s}} if timeout_s else {})
    assert approval.deadline is not None
    assert before + timedelta(seconds=120) <= approval.deadline <= clock.now() + timedelta(seconds=120)
    assert requested["deadline"] == approval.deadline.isoformat()
    assert [f for f in console_fragments if f[1] == approval.pk] == [("approval_added", approval.pk)]  # one card, no correction


def test_a_run_policy_deadline_sooner_than_the_hook_s_wait_stands(reviewer: Any, settings: Any, clock: Any) -> None:
    settings.GATEHOUSE_HOOK_WAIT_S = 600
    approval, requested = _asked(reviewer, {"approvals": {"timeout_s": 60}})
    assert approval.deadline is not None and approval.deadline <= clock.now() + timedelta(seconds=60)
    assert requested["deadline"] == approval.deadline.isoformat()
    assert datetime.fromisoformat(requested["deadline"]) == approval.deadline
