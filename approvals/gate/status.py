"""Run status follows from rows: `waiting` while any approval of the run is pending."""

from __future__ import annotations

from django.db.models import Case, Exists, OuterRef, Q, Value, When

from approvals.models import Approval
from runs.models import Run
from runs.services import run_status_changed


def run_status_sync(*, run_id: int) -> None:
    """Set running/waiting from the run's pending approvals (a finished run is left alone).

    Called in the transaction of every write that opens or closes an approval, so the
    status never says `running` while a person is still asked (two parallel approvals,
    one decided), nor `waiting` once nothing is pending. One UPDATE: the status the
    pending approvals call for, only where it differs (running ↔ waiting, by the table).
    """
    pending = Exists(Approval.objects.filter(run_id=OuterRef("pk"), status=Approval.Status.PENDING))
    should = Case(When(pending, then=Value(Run.Status.WAITING)), default=Value(Run.Status.RUNNING))
    changed = (
        Run.objects.alias(pending=pending)
        .filter(pk=run_id)
        .filter(Q(status=Run.Status.RUNNING, pending=True) | Q(status=Run.Status.WAITING, pending=False))
        .update(status=should)
    )
    if changed:
        run_status_changed(run_id)
