"""Reads shared by the console, the API and the admin: one source of truth per fact."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from approvals.models import Approval, Grant, Policy


def policy_for_run(name: str = "") -> tuple[Policy | None, dict[str, Any]]:
    """The named policy, else the one marked default, else the built-in DefaultPolicy."""
    from approvals import policy as core
    from runs.services import RunError

    if name:
        row = Policy.objects.filter(name=name).first()
        if row is None:
            raise RunError("unknown_policy", f"no policy named {name!r}", field="policy")
        return row, dict(row.document)
    row = Policy.objects.filter(is_default=True).first()
    if row is not None:
        return row, dict(row.document)
    return None, dict(core.DEFAULT_POLICY)


def approvals_pending(*, run_id: int | None = None) -> QuerySet[Approval]:
    """Pending approvals, oldest first: derived from rows, never from a worker's memory."""
    qs = Approval.objects.filter(status=Approval.Status.PENDING).select_related("run", "step")
    if run_id is not None:
        qs = qs.filter(run_id=run_id)
    return qs.order_by("created_at", "id")


def grants_active(*, session_id: int) -> QuerySet[Grant]:
    return Grant.objects.filter(session_id=session_id, revoked_at__isnull=True).order_by("created_at", "id")
