"""What the policy core's limits count of a run (`max_tool_calls`, `max_denials`): read by
the live policy (gate/request.py) and its shadow (gate/shadow.py)."""

from __future__ import annotations

from django.db.models import Count, Q

from approvals import policy as core
from runs.models import Step


def run_view(run_id: int) -> core.RunView:
    counts = Step.objects.filter(run_id=run_id).aggregate(
        calls=Count("id"), denials=Count("id", filter=Q(status=Step.Status.DENIED))
    )
    return core.RunView(tool_calls=counts["calls"] or 0, denials=counts["denials"] or 0)
