"""What an operator's dashboard counts, read from the rows at scrape time (`/metrics`).

Several processes serve Gatehouse (web processes and workers, docs/architecture.md): no
process holds the whole picture in memory, the database does. So every figure here is one
aggregate query (COUNT / SUM with GROUP BY) over the rows, run when Prometheus scrapes:

- gauges (pending approvals, runs by status) are the rows as they are now;
- counters and the histogram are **cumulative over every row kept** (never a window), so
  they only grow, as Prometheus counters must, and `rate()` / `increase()` work whatever
  process answers the scrape. Deleting rows (a run deleted in the admin) lowers them:
  Prometheus reads that as a counter reset.

Each function returns plain tuples; `project/metrics.py` turns them into metric families.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Case, Count, F, FloatField, Func, IntegerField, Sum, Value, When

from approvals.models import Approval
from approvals.policy.request import NETWORK_TOOL
from runs.models import Activity, Run, Step

# Time to decide, in seconds: a person answering at once, within minutes, within the
# default deadline (300 s), within a working day.
DECISION_BUCKETS_S: tuple[float, ...] = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600)

# A step's status, as the outcome of its decision (steps still requested or waiting have none).
STEP_OUTCOMES: dict[str, str] = {
    Step.Status.ALLOWED: "allow",
    Step.Status.EXECUTING: "allow",
    Step.Status.FINISHED: "allow",
    Step.Status.DENIED: "deny",
    Step.Status.ABORTED: "abort",
    Step.Status.ANSWERED: "answer",
}


def pending_approvals() -> list[tuple[str, str, int]]:
    """(kind, side-effect class, count) of the approvals waiting now ("" class: none, e.g. a question)."""
    rows = (
        Approval.objects.filter(status=Approval.Status.PENDING)
        .values("kind", "step__side_effect_class")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(r["kind"], r["step__side_effect_class"] or "", r["n"]) for r in rows]


@dataclass(frozen=True)
class DecisionTimes:
    """Cumulative histogram of one (kind, decided_via): `buckets[i]` counts those decided
    within `DECISION_BUCKETS_S[i]` seconds."""

    kind: str
    via: str
    buckets: tuple[int, ...]
    count: int
    sum_s: float


class Seconds(Func):
    """`end - start` in seconds as a float, in the database's own arithmetic (Django's
    generic datetime difference is a Python function per row on SQLite)."""

    output_field = FloatField()
    template = "EXTRACT(EPOCH FROM (%(expressions)s))"  # PostgreSQL
    arg_joiner = " - "

    def __init__(self, end: str, start: str) -> None:
        super().__init__(F(end), F(start))

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s)) * 86400.0)",
                           arg_joiner=") - julianday(", **extra)


def decision_times() -> list[DecisionTimes]:
    """Time from an approval's creation to its decision, for every decided one (approved,
    denied, answered, expired; not cancelled: nobody decided those). One query: each row's
    seconds are computed once and put in the first bucket that holds them, then the buckets
    are summed up here (a Prometheus bucket counts everything at or below its bound)."""
    first_bucket = Case(
        *[When(took__lte=bound, then=Value(i)) for i, bound in enumerate(DECISION_BUCKETS_S)],
        default=Value(len(DECISION_BUCKETS_S)), output_field=IntegerField(),
    )
    rows = (
        Approval.objects.filter(decided_at__isnull=False)
        .exclude(status__in=(Approval.Status.PENDING, Approval.Status.CANCELLED))
        .annotate(took=Seconds("decided_at", "created_at"))
        .annotate(bucket=first_bucket)
        .values("kind", "decided_via", "bucket")
        .annotate(n=Count("id"), total=Sum("took"))
        .order_by()
    )
    per_label: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
    for r in rows:
        counts, total = per_label.setdefault((r["kind"], r["decided_via"] or ""), ([0] * (len(DECISION_BUCKETS_S) + 1), [0.0]))
        counts[r["bucket"]] += r["n"]
        total[0] += float(r["total"] or 0.0)
    found = []
    for (kind, via), (counts, total) in sorted(per_label.items()):
        cumulative, running = [], 0
        for n in counts[:-1]:
            running += n
            cumulative.append(running)
        found.append(DecisionTimes(kind=kind, via=via, buckets=tuple(cumulative), count=sum(counts), sum_s=max(total[0], 0.0)))
    return found


def decisions() -> list[tuple[str, str, str, int]]:
    """(kind, outcome, decided_by, count) of every decided step: what the gate's decisions
    were and who or what made them (`Step.DecidedBy`: policy, grant, mode, external, console,
    api, link, person, timeout, system)."""
    rows = (
        Step.objects.filter(status__in=list(STEP_OUTCOMES))
        .values("kind", "status", "decided_by")
        .annotate(n=Count("id"))
        .order_by()
    )
    totals: dict[tuple[str, str, str], int] = {}
    for r in rows:
        key = (r["kind"], STEP_OUTCOMES[r["status"]], r["decided_by"] or "unknown")
        totals[key] = totals.get(key, 0) + r["n"]
    return [(*key, n) for key, n in sorted(totals.items())]


def approvals_resolved() -> list[tuple[str, str, str, int]]:
    """(kind, status, decided_via, count) of every approval no longer pending."""
    rows = (
        Approval.objects.exclude(status=Approval.Status.PENDING)
        .values("kind", "status", "decided_via")
        .annotate(n=Count("id"))
        .order_by()
    )
    return [(r["kind"], r["status"], r["decided_via"] or "", r["n"]) for r in rows]


def runs_by_status() -> list[tuple[str, str, int]]:
    """(driver, status, count) of every run kept."""
    rows = Run.objects.values("driver", "status").annotate(n=Count("id")).order_by()
    return [(r["driver"], r["status"], r["n"]) for r in rows]


def egress_connections() -> list[tuple[str, str, int]]:
    """(outcome, decided_by, count) of the egress proxy's connections that left a record.

    What the proxy decides is recorded two ways (drivers/runegress.py): a host the policy
    *asks* about becomes a step (tool `network`), decided like any request ("asked":
    allowed or refused by a person, a grant, the runtime mode or the deadline); a host the
    policy or the start-up rule *refuses* is said once per host and run on the timeline (a
    `network_refused` notice). A connection the policy allows at once (and the agent's
    model API) is not recorded anywhere, so it is not counted here."""
    asked = (
        Step.objects.filter(tool=NETWORK_TOOL, status__in=list(STEP_OUTCOMES))
        .values("status", "decided_by")
        .annotate(n=Count("id"))
        .order_by()
    )
    totals: dict[tuple[str, str], int] = {}
    for r in asked:
        key = ("asked_allowed" if STEP_OUTCOMES[r["status"]] == "allow" else "asked_refused", r["decided_by"] or "unknown")
        totals[key] = totals.get(key, 0) + r["n"]
    refused = Activity.objects.filter(kind=Activity.Kind.NOTICE, payload__warning="network_refused").count()
    if refused:
        totals[("refused", "policy")] = refused
    return [(*key, n) for key, n in sorted(totals.items())]
