"""A run's timeline: appending its activities (numbered in order, fenced by the worker's
lease), and the after-commit pushes that say a run changed (its status to the console, a
sleeping run's wake-up to the workers). The gate, the decision services and the drivers
write here; `runs.services` holds the run's other writes."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.db import connection, transaction
from django.db.models.signals import post_save

from infra import broadcast
from runs.events import Event, Notice
from runs.leases import LeaseLost
from runs.models import Activity, Run

logger = logging.getLogger(__name__)

# Activity kinds the drivers may append through their RunContext.
DRIVER_ACTIVITY_KINDS = {"turn", "message", "tool", "usage", "notice"}


def activity_record(
    *, run_id: int, kind: str, event: Event, payload: Mapping[str, Any] | None = None, owner: str | None = None
) -> Activity:
    """Append one activity to the run's log with the next sequence number.

    The UPDATE on the run row allocates the number and, on PostgreSQL, holds the row lock
    until commit, so concurrent appends to one run queue instead of colliding. A worker's
    append names its `owner` and is refused (`LeaseLost`) when it no longer owns the run.
    """
    return activities_record(run_id=run_id, items=[(kind, event, payload or {})], owner=owner)[0]


def activities_record(
    *, run_id: int, items: list[tuple[str, Event, Mapping[str, Any]]], owner: str | None = None
) -> list[Activity]:
    """Append several activities `(kind, event, payload)` in order, in one transaction: one
    UPDATE allocates their numbers, one INSERT stores them (a driver's timeline written
    in batches: `drivers.runcontext` collects what it emits between two writes)."""
    if not items:
        return []
    with transaction.atomic(savepoint=False):
        last = _next_activity_seq(run_id, owner, count=len(items))
        first = last - len(items) + 1
        fresh = [Activity(run_id=run_id, seq=first + i, kind=kind, event=event, payload=dict(payload or {}))
                 for i, (kind, event, payload) in enumerate(items)]
        if len(fresh) == 1:
            fresh[0].save(force_insert=True)
            rows = fresh
        else:
            rows = Activity.objects.bulk_create(fresh)
            for row in rows:  # bulk_create sends no post_save: listeners (the webhook outbox) still hear each one
                post_save.send(sender=Activity, instance=row, created=True, raw=False, using=row._state.db, update_fields=None)
        for row in rows:
            broadcast.console_on_commit(
                [broadcast.run_console_group(run_id)], broadcast.change_message("activity_appended", activity_id=row.pk)
            )
    return rows


def _next_activity_seq(run_id: int, owner: str | None, *, count: int = 1) -> int:
    """Allocate the run's next `count` activity numbers in one statement (UPDATE … RETURNING,
    on SQLite and PostgreSQL alike; the last one is returned); a worker's allocation is
    fenced by its lease."""
    quote = connection.ops.quote_name
    sql = f"UPDATE {quote(Run._meta.db_table)} SET {quote('last_seq')} = {quote('last_seq')} + %s WHERE {quote('id')} = %s"
    params: list[Any] = [count, run_id]
    if owner is not None:
        finished = ", ".join(["%s"] * len(Run.FINISHED))
        sql += f" AND {quote('owner')} = %s AND {quote('status')} NOT IN ({finished})"
        params += [owner, *Run.FINISHED]
    with connection.cursor() as cursor:
        cursor.execute(sql + f" RETURNING {quote('last_seq')}", params)
        row = cursor.fetchone()
    if row is None:
        if owner is not None:
            raise LeaseLost(run_id, owner)
        raise Run.DoesNotExist(f"no run {run_id}")
    return int(row[0])


def queued_then(
    *, run_id: int, queued: list[tuple[Any, ...]], owner: str | None, call: Any, kwargs: Mapping[str, Any]
) -> Any:
    """What a driver queued since its last write, then that write (`call`), in one
    transaction and in order: `("activity", kind, event, payload)` entries (consecutive ones
    in one batch) and `("call", fn, kwargs)` entries (a step's result). The timeline costs
    no transaction of its own and a tool call waits for one transaction, not one per line
    the agent printed before it. A failing entry or `call` (other than a lost lease) is
    undone to its savepoint, the rest is kept; `call`'s error is raised after commit, and a
    failed entry — which nobody awaits — is logged and said on the run's timeline."""
    failure: Exception | None = None
    result = None
    with transaction.atomic():
        batch: list[tuple[str, Event, Mapping[str, Any]]] = []
        for entry in queued:
            if entry[0] == "activity":
                batch.append((entry[1], entry[2], entry[3]))
                continue
            activities_record(run_id=run_id, items=batch, owner=owner)
            batch = []
            try:
                with transaction.atomic():
                    entry[1](owner=owner, **entry[2])
            except LeaseLost:
                raise
            except Exception as exc:  # noqa: BLE001 - nobody awaits a queued write: say so in the log and the timeline
                what = getattr(entry[1], "__name__", str(entry[1]))
                logger.exception("run %s: a queued write (%s) failed", run_id, what)
                notice: Notice = {
                    "warning": "queued_write_failed", "write": what,
                    "text": f"Gatehouse could not record a write of this run ({what}): {type(exc).__name__}: {str(exc)[:300]}",
                }
                batch.append(("notice", Event.NOTICE, notice))
        activities_record(run_id=run_id, items=batch, owner=owner)
        try:
            with transaction.atomic():
                result = call(owner=owner, **kwargs)
        except LeaseLost:
            raise
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the queued writes commit
            failure = exc
    if failure is not None:
        raise failure
    return result


def run_status_changed(run_id: int) -> None:
    """After commit, the console's run status (its page and the inbox) is pushed again (every
    writer of a run's status calls it: `_transition`, `approvals.gate.run_status_sync`)."""
    broadcast.fragment_on_commit([broadcast.run_console_group(run_id), broadcast.INBOX_GROUP], "run_status", run_id=run_id)


def run_wake_on_commit(*, run_id: int, asleep: bool | None = None) -> None:
    """Ring the workers' doorbell for a sleeping run (a decision, a cancel): the reconcile
    loop would find it anyway, this only makes it prompt. `asleep`: when the caller read
    the run's `hibernated_at` in this transaction already (None: read it here)."""
    if asleep is None:
        asleep = Run.objects.filter(pk=run_id, hibernated_at__isnull=False).exists()
    if asleep:
        transaction.on_commit(
            lambda: broadcast.send_to_channel_now("drivers", {"type": "run.start", "run_id": run_id}, urgent=True)
        )
