"""Run status follows from rows: `waiting` while any approval of the run is pending."""

from __future__ import annotations

from approvals.models import Approval
from project.prepared import Prepared
from runs.models import Run
from runs.services import run_mark

_PENDING: Prepared[int] = Prepared(
    lambda run_id: Approval.objects.filter(run_id=run_id, status=Approval.Status.PENDING).values_list("id", flat=True)[:1], int
)


def run_status_sync(*, run_id: int) -> None:
    """Set running/waiting from the run's pending approvals (a finished run is left alone).

    Called in the transaction of every write that opens or closes an approval, so the
    status never says `running` while a person is still asked (two parallel approvals,
    one decided), nor `waiting` once nothing is pending. (Two plain statements: one
    UPDATE with the EXISTS inside it costs three times as much in the ORM, measured.)
    """
    pending = _PENDING.first(run_id) is not None
    run_mark(run_id=run_id, status=Run.Status.WAITING if pending else Run.Status.RUNNING)
