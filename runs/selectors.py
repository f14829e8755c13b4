"""Reads of runs and sessions for the console: each a bounded number of queries per page."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce, RowNumber

from approvals.models import Approval, Grant
from runs.events import Event
from runs.models import Activity, AgentSession, Run, RuntimeMode, Step

RUNS_PER_SESSION_ROW = 3


def _count_of(model: Any, **filters: Any) -> Coalesce:
    """COUNT(*) of the rows matching `filters` (with an OuterRef), as a correlated subquery
    (a plain function, not an aggregate: no GROUP BY over the outer query)."""
    rows = model.objects.filter(**filters).order_by().annotate(c=Func(F("pk"), function="COUNT")).values("c")
    return Coalesce(Subquery(rows[:1], output_field=IntegerField()), Value(0))


def sessions_with_facts() -> QuerySet[AgentSession]:
    """Sessions, newest first, each with its number of runs, active grants and pending
    approvals, and the time of its last activity — subqueries, so a page costs one query.

    The last activity of a run is the one numbered `last_seq` (unique per run), so the
    subquery reads one row per run of the session, never its whole log."""
    last_activity = (
        Activity.objects.filter(run__session_id=OuterRef("pk"), seq=F("run__last_seq")).order_by("-created_at").values("created_at")[:1]
    )
    return (
        AgentSession.objects.select_related("created_by")
        .annotate(
            run_count=_count_of(Run, session=OuterRef("pk")),
            grant_count=_count_of(Grant, session=OuterRef("pk"), revoked_at__isnull=True),
            pending_count=_count_of(Approval, run__session=OuterRef("pk"), status=Approval.Status.PENDING),
            last_activity_at=Subquery(last_activity),
        )
        .order_by("-id")
    )


def latest_runs_of(session_ids: list[int], *, per_session: int = RUNS_PER_SESSION_ROW,
                   runs: QuerySet[Run] | None = None) -> dict[int, list[Run]]:
    """The latest runs of each session (of `runs`: those a person may see), in one query
    (a window per session)."""
    if not session_ids:
        return {}
    runs = (
        (Run.objects.all() if runs is None else runs).filter(session_id__in=session_ids)
        .annotate(position=Window(RowNumber(), partition_by=[F("session_id")], order_by=F("id").desc()))
        .filter(position__lte=per_session)
        .order_by("session_id", "-id")
    )
    found: dict[int, list[Run]] = {}
    for run in runs:
        found.setdefault(run.session_id, []).append(run)
    return found


def runtime_mode_for(run: Run) -> str:
    """The session's runtime mode as it applies to `run`: under four eyes
    (GATEHOUSE_REVIEW_OWN_RUNS off) a mode the run's starter set approves nothing for the
    run (a mode that approves asks is a decision like an approval; issue 34). Never
    changed, the modes count as set by the session's creator."""
    session = run.session
    if settings.GATEHOUSE_REVIEW_OWN_RUNS or session.runtime_mode == RuntimeMode.APPROVAL_REQUIRED:
        return session.runtime_mode
    setter = session.modes_set_by_id or session.created_by_id
    if setter is not None and setter == run.created_by_id:
        return RuntimeMode.APPROVAL_REQUIRED
    return session.runtime_mode


def session_latest_run(session: AgentSession) -> Run | None:
    """The run a follow-up continues: the session's latest."""
    return Run.objects.filter(session=session).select_related("policy").order_by("-id").first()


# --- The run page's timeline -----------------------------------------------------------------

TIMELINE_PAGE = 100


def timeline_page(run: Run, *, before: int | None = None, after: int | None = None, size: int = TIMELINE_PAGE) -> tuple[list[Activity], int | None]:
    """The latest `size` activities of the run (or those before seq `before`), oldest first,
    and the seq to ask for the page before it (None at the start). `after` (a reconnect's
    catch-up) returns every activity after that seq instead."""
    activities = Activity.objects.filter(run=run)
    if after is not None:
        return list(activities.filter(seq__gt=after).order_by("seq")[:5000]), None
    if before is not None:
        activities = activities.filter(seq__lt=before)
    rows = list(activities.order_by("-seq")[: size + 1])
    earlier = rows[size - 1].seq if len(rows) > size else None
    return list(reversed(rows[:size])), earlier


def steps_by_seq(run_id: int, activities: list[Activity]) -> dict[int, Step]:
    """The steps the timeline's finished tools name (for their duration), in one query."""
    named = [a.payload.get("step") for a in activities if a.event == Event.TOOL_FINISHED and isinstance(a.payload, dict)]
    seqs = {s for s in named if isinstance(s, int)}
    if not seqs:
        return {}
    return {step.seq: step for step in Step.objects.filter(run_id=run_id, seq__in=seqs).only("seq", "started_at", "finished_at")}
