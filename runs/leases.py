"""Run leases: which worker owns a run, and the fence every worker write passes.

A worker claims a run (owner + heartbeat, compare-and-set) and renews the heartbeat; an
old heartbeat frees the run for another worker. Every write a worker makes for a run
(gate, decision applied, step finished, activity, status) names the owner it believes it
is and runs `fence()` inside its transaction: when the run is no longer owned by that
worker the write is refused with `LeaseLost`, nothing of it is stored, and the worker
stops that run at once. On PostgreSQL the fence locks the run row until commit, so a
takeover (an UPDATE of that row) waits for the write or the write sees the new owner;
SQLite's `BEGIN IMMEDIATE` transactions serialize writers the same way.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from approvals.models import Approval
from drivers.registry import external_names
from infra import clock
from infra.prepared import Prepared, PreparedUpdate
from runs.models import Run


class LeaseLost(Exception):
    """The run is no longer owned by the worker that tried to write for it."""

    def __init__(self, run_id: int, owner: str) -> None:
        super().__init__(f"run {run_id} is no longer owned by {owner}")
        self.run_id = run_id
        self.owner = owner


def fence(run_id: int, owner: str | None) -> None:
    """Refuse the enclosing transaction's write unless `owner` still holds the run.

    `owner=None` is a write that is not a worker's (a reviewer, the API, a test driving
    the services directly): it is not fenced.
    """
    if owner is None:
        return
    if _HELD.first(run_id, owner) is None:
        raise LeaseLost(run_id, owner)


def held(run: Run, owner: str | None) -> None:
    """`fence` for a run row the caller read locked in this transaction (FOR UPDATE OF the
    run, as `fence` locks it): refuse unless `owner` still holds it."""
    if owner is None:
        return
    if run.owner != owner or run.status in Run.FINISHED:
        raise LeaseLost(run.pk, owner)


class RunHeld(Exception):
    """A worker holds the run: a write only its worker may make was made for no owner."""

    def __init__(self, run_id: int, holder: str) -> None:
        super().__init__(f"run {run_id} is held by worker {holder}: only that worker settles its steps")
        self.run_id = run_id
        self.holder = holder


def held_by_none(run: Run) -> None:
    """For a run row the caller read locked: refuse (`RunHeld`) a write made for no owner
    (the hook gateway's external runs, which no worker may claim) while a worker holds the
    run (its lease names an owner and the run is not finished). A worker that died keeps
    its name on the run until another claims it: that one settles the run's steps, with
    its own fence."""
    if run.owner and run.status not in Run.FINISHED:
        raise RunHeld(run.pk, run.owner)


# Every fenced write reads this (compiled once: `infra.prepared`); the row stays locked
# until commit on PostgreSQL.
_HELD: Prepared[int] = Prepared(
    lambda run_id, owner: (
        Run.objects.select_for_update().filter(pk=run_id, owner=owner).exclude(status__in=Run.FINISHED)
        .values_list("id", flat=True)[:1]
    ),
    int, str,
)


def _lease_free(now: Any) -> Q:
    return _lease_free_before(now - timedelta(seconds=settings.GATEHOUSE_LEASE_TTL_S))


def _lease_free_before(cutoff: Any) -> Q:
    """Nobody holds the lease, or its last heartbeat is older than `cutoff`."""
    return Q(owner="") | Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff)


def _workable() -> Any:
    """Runs a worker may execute: not finished, and not external. An external run (the hook
    gateway's `claude-code-hook`) has its agent elsewhere; its steps are written unfenced
    by the gateway, so no worker may ever claim it (issue 12)."""
    return Run.objects.exclude(status__in=Run.FINISHED).exclude(driver__in=external_names())


# The claim's compare-and-set, compiled once (`infra.prepared`): the ORM took about
# 3.5 ms to compile it before every run's start, for a statement SQLite runs in 0.2 ms.
_CLAIM = PreparedUpdate(
    lambda run_id, owner, now, lease_cutoff, clock_now: (
        _workable().filter(pk=run_id).filter(_lease_free_before(lease_cutoff) | Q(owner=owner)).filter(_awake_or_due(clock_now)),
        {"owner": owner, "heartbeat_at": now},
    ),
    int, str, datetime, datetime, datetime,
)


def run_claim(*, run_id: int, owner: str) -> bool:
    """Take the run's lease if it is free (compare-and-set); True when this worker owns it.
    A sleeping run is taken only once something woke it (see `runs_claimable`)."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.GATEHOUSE_LEASE_TTL_S)
    return _CLAIM.run(run_id, owner, now, cutoff, clock.now()) == 1


_CLAIMED: Prepared[Run] = Prepared(lambda run_id: Run.objects.select_related("session").filter(pk=run_id), int)


def run_claim_and_read(*, run_id: int, owner: str) -> Run | None:
    """`run_claim`, then the run as claimed, with its session (one read, compiled once);
    None when this worker did not get it."""
    if not run_claim(run_id=run_id, owner=owner):
        return None
    return _CLAIMED.first(run_id)


def _awake_or_due(now: Any) -> Q:
    """Not asleep, or asleep with a reason to wake: nothing is pending any more (decided),
    a pending approval's deadline passed, or someone asked to cancel."""
    pending = Approval.objects.filter(run=OuterRef("pk"), status=Approval.Status.PENDING)
    return (
        Q(hibernated_at__isnull=True)
        | Q(cancel_requested=True)
        | ~Exists(pending)
        | Exists(pending.filter(deadline__lte=now))
    )


def runs_claimable(*, limit: int | None = None) -> list[int]:
    """Unfinished runs whose lease is free (never started, or their worker is gone), except
    sleeping runs that nothing has woken yet; oldest first, at most `limit`."""
    now = timezone.now()
    rows = (
        _workable()
        .filter(_lease_free(now))
        .filter(_awake_or_due(clock.now()))
        .order_by("id")
        .values_list("id", flat=True)
    )
    return list(rows[:limit] if limit is not None else rows)


def runs_leased() -> list[tuple[int, str]]:
    """Unfinished runs that some worker holds: (run id, owner)."""
    return list(Run.objects.exclude(status__in=Run.FINISHED).exclude(owner="").values_list("id", "owner"))


def run_heartbeat(*, run_id: int, owner: str) -> tuple[bool, bool]:
    """Renew the lease; returns (still owned, cancel requested)."""
    owned = Run.objects.filter(pk=run_id, owner=owner).update(heartbeat_at=timezone.now()) == 1
    cancel = Run.objects.filter(pk=run_id, cancel_requested=True).exists()
    return owned, cancel


def runs_heartbeat(*, run_ids: list[int], owner: str) -> tuple[set[int], set[int]]:
    """Renew all of a worker's leases at once; returns (still owned, cancel requested)."""
    now = timezone.now()
    with transaction.atomic():
        owned = set(Run.objects.filter(pk__in=run_ids, owner=owner).values_list("id", flat=True))
        Run.objects.filter(pk__in=owned, owner=owner).update(heartbeat_at=now)
    cancels = set(Run.objects.filter(pk__in=owned, cancel_requested=True).values_list("id", flat=True))
    return owned, cancels


def run_release(*, run_id: int, owner: str) -> None:
    Run.objects.filter(pk=run_id, owner=owner).update(owner="", heartbeat_at=None)
