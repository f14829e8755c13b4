"""Run status follows from rows: `waiting` while any approval of the run is pending."""

from __future__ import annotations

from django.db import connection

from approvals.models import Approval
from runs.models import Run
from runs.timeline import run_status_changed

W, R = Run.Status.WAITING, Run.Status.RUNNING
assert W in Run.ALLOWED_TRANSITIONS[R] and R in Run.ALLOWED_TRANSITIONS[W]  # the moves this makes


def _sql() -> str:
    q = connection.ops.quote_name
    pending = f"EXISTS (SELECT 1 FROM {q(Approval._meta.db_table)} WHERE {q('run_id')} = %s AND {q('status')} = %s)"
    target = f"CASE WHEN {pending} THEN %s ELSE %s END"
    return (f"UPDATE {q(Run._meta.db_table)} SET {q('status')} = {target} "
            f"WHERE {q('id')} = %s AND {q('status')} IN (%s, %s) AND {q('status')} <> {target}")


def run_status_sync(*, run_id: int) -> None:
    """Set running/waiting from the run's pending approvals (a finished or queued run is
    left alone), and tell the console when it changed.

    Called in the transaction of every write that opens or closes an approval, so the
    status never says `running` while a person is still asked (two parallel approvals,
    one decided), nor `waiting` once nothing is pending. One statement, written by hand:
    the ORM took three times as long to build this UPDATE as the read and update it
    replaces (measured), and every decision makes it.
    """
    target: list[int | str] = [run_id, Approval.Status.PENDING, W, R]
    with connection.cursor() as cursor:
        cursor.execute(_sql(), [*target, run_id, R, W, *target])
        changed = cursor.rowcount
    if changed:
        run_status_changed(run_id)
