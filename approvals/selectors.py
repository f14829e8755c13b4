"""Reads shared by the console, the API and the admin: one source of truth per fact.

The pending list has one home here: the inbox, its live updates (the consumer's filter),
and the API's `?status=pending` list all read `approvals_pending`; the inbox pages it with
a keyset cursor (`pending_page`) so the first page costs the same at 10 or 10,000 waiting.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.utils.dateparse import parse_datetime

from approvals import policy as core
from approvals.models import Approval, Grant, Policy
from infra.prepared import Prepared
from runs.errors import RunError
from runs.events import Event
from runs.models import Activity

PendingSort = Literal["deadline", "oldest", "newest"]
PENDING_SORTS: tuple[PendingSort, ...] = ("deadline", "oldest", "newest")
SIDE_EFFECT_CLASSES = ("read-only", "local-mutation", "remote-mutation", "destructive")
# Claude Code's sub-agent tool (2.1.x calls it Task; later versions Agent).
SUBAGENT_TOOLS = ("Task", "Agent")


# Read by every run's creation (compiled once: `infra.prepared`).
_NAMED: Prepared[Policy] = Prepared(lambda name: Policy.objects.filter(name=name).order_by("name")[:1], str)
_DEFAULT: Prepared[Policy] = Prepared(lambda: Policy.objects.filter(is_default=True).order_by("name")[:1])


def policy_for_run(name: str = "") -> tuple[Policy | None, dict[str, Any]]:
    """The named policy, else the one marked default, else the built-in DefaultPolicy."""
    if name:
        row = _NAMED.first(name)
        if row is None:
            raise RunError("unknown_policy", f"no policy named {name!r}", field="policy")
        return row, dict(row.document)
    row = _DEFAULT.first()
    if row is not None:
        return row, dict(row.document)
    return None, dict(core.DEFAULT_POLICY)


# --- The pending list -----------------------------------------------------------------------


@dataclass(frozen=True)
class PendingFilter:
    """What a reviewer narrows the pending list to (the inbox's query parameters). Every
    field is optional; `matches` answers the same question for one approval's facets, so a
    live update shows a new request exactly when a reload would."""

    driver: str = ""
    kind: str = ""
    side_effect_class: str = ""
    session_id: int | None = None
    run_id: int | None = None
    started_by: str = ""  # a username
    started_by_id: int | None = None  # `mine=1`: the runs the reviewer started
    # Not a filter a person chose: who may see only their own runs' approvals (neither a
    # reviewer nor an administrator: `approvals.access`) has this set to their id.
    visible_to_id: int | None = None

    @property
    def is_empty(self) -> bool:
        return self == PendingFilter(visible_to_id=self.visible_to_id)

    def apply(self, qs: QuerySet[Approval]) -> QuerySet[Approval]:
        if self.driver:
            qs = qs.filter(run__driver=self.driver)
        if self.kind:
            qs = qs.filter(kind=self.kind)
        if self.side_effect_class:
            qs = qs.filter(step__side_effect_class=self.side_effect_class)
        if self.session_id is not None:
            qs = qs.filter(run__session_id=self.session_id)
        if self.run_id is not None:
            qs = qs.filter(run_id=self.run_id)
        if self.started_by:
            qs = qs.filter(run__created_by__username=self.started_by)
        if self.started_by_id is not None:
            qs = qs.filter(run__created_by_id=self.started_by_id)
        if self.visible_to_id is not None:
            qs = qs.filter(run__created_by_id=self.visible_to_id)
        return qs

    def matches(self, facets: Mapping[str, Any]) -> bool:
        """Whether an approval with these facets (`approval_facets`) is in the filtered list."""
        checks: list[tuple[Any, Any]] = [
            (self.driver, facets.get("driver")),
            (self.kind, facets.get("kind")),
            (self.side_effect_class, facets.get("class")),
            (self.session_id, facets.get("session")),
            (self.run_id, facets.get("run")),
            (self.started_by, facets.get("started_by")),
            (self.started_by_id, facets.get("started_by_id")),
            (self.visible_to_id, facets.get("started_by_id")),
        ]
        return all(wanted in (None, "") or wanted == value for wanted, value in checks)


def approval_facets(approval: Approval) -> dict[str, Any]:
    """What `PendingFilter.matches` reads, from an approval loaded with its run and step."""
    run = approval.run
    return {
        "driver": run.driver,
        "kind": approval.kind,
        "class": approval.step.side_effect_class if approval.step_id and approval.step else "",
        "session": run.session_id,
        "run": run.pk,
        "started_by": run.created_by.username if run.created_by_id and run.created_by else "",
        "started_by_id": run.created_by_id,
    }


# Large JSON and text a card never shows (a run's policy snapshot, scenario, agent state;
# a step's output): not read, not decoded. A test keeps the page's query count flat.
_NOT_ON_A_CARD = (
    "run__policy_document", "run__scenario", "run__usage", "run__agent_state", "run__agent_processes",
    "run__run_policy_input", "run__result_text", "run__failure_detail",
    "run__session__agent_state", "run__session__run_policy",
    "step__request", "step__presentation", "step__output", "step__error", "step__told", "step__answers",
)

_ORDER: dict[str, tuple[Any, ...]] = {
    # Soonest deadline first; requests without a deadline after every one that has one.
    "deadline": (F("deadline").asc(nulls_last=True), "id"),
    "oldest": ("id",),
    "newest": ("-id",),
}


def approvals_pending(
    *, run_id: int | None = None, filters: PendingFilter | None = None, sort: PendingSort = "deadline"
) -> QuerySet[Approval]:
    """Pending approvals: derived from rows, never from a worker's memory. Loaded with what
    a card shows (run, session, starter, step), so rendering a page asks nothing per card."""
    qs = (
        Approval.objects.filter(status=Approval.Status.PENDING)
        .select_related("run", "run__session", "run__created_by", "step")
        .defer(*_NOT_ON_A_CARD)
    )
    if run_id is not None:
        qs = qs.filter(run_id=run_id)
    if filters is not None:
        qs = filters.apply(qs)
    return qs.order_by(*_ORDER[sort])


@dataclass
class PendingPage:
    approvals: list[Approval]
    count: int
    next_cursor: str = ""
    sort: PendingSort = "deadline"
    first: bool = True
    asking: dict[int, str] = field(default_factory=dict)  # approval id -> the sub-agent that asks


class BadCursor(ValueError):
    pass


def _encode_cursor(approval: Approval) -> str:
    raw = json.dumps([approval.deadline.isoformat() if approval.deadline else None, approval.pk])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime | None, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        deadline_text, pk = json.loads(raw)
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError) as exc:
        raise BadCursor(cursor) from exc
    deadline = parse_datetime(deadline_text) if isinstance(deadline_text, str) else None
    if not isinstance(pk, int) or isinstance(pk, bool) or pk < 0 or (deadline_text is not None and deadline is None):
        raise BadCursor(cursor)
    return deadline, pk


def _after(qs: QuerySet[Approval], sort: PendingSort, cursor: str) -> QuerySet[Approval]:
    """The rows after `cursor` (the last row of the previous page) in `sort` order."""
    deadline, pk = _decode_cursor(cursor)
    if sort == "oldest":
        return qs.filter(id__gt=pk)
    if sort == "newest":
        return qs.filter(id__lt=pk)
    if deadline is None:
        return qs.filter(deadline__isnull=True, id__gt=pk)
    return qs.filter(Q(deadline__gt=deadline) | Q(deadline=deadline, id__gt=pk) | Q(deadline__isnull=True))


def pending_page(
    *, filters: PendingFilter | None = None, sort: PendingSort = "deadline", cursor: str = "", size: int = 25
) -> PendingPage:
    """One page of the pending list, its total, and the cursor of the next page: a count
    and one keyset query, whatever the number waiting (plus one for sub-agent names)."""
    qs = approvals_pending(filters=filters, sort=sort)
    count = qs.count()
    page_qs = _after(qs, sort, cursor) if cursor else qs
    rows = list(page_qs[: size + 1])
    approvals, more = rows[:size], len(rows) > size
    return PendingPage(
        approvals=approvals,
        count=count,
        next_cursor=_encode_cursor(approvals[-1]) if more and approvals else "",
        sort=sort,
        first=not cursor,
        asking=subagents_asking(approvals),
    )


def pending_ids(*, filters: PendingFilter | None = None) -> set[int]:
    """The ids of the approvals waiting that match (a live inbox counts by id, not by +1/-1)."""
    return set(approvals_pending(filters=filters).order_by().values_list("pk", flat=True))


def subagents_asking(approvals: Iterable[Approval]) -> dict[int, str]:
    """For Claude Code requests, the sub-agent that asks: the `Task` (sub-agent) calls in
    the activity log that were open — called, no result yet — when the request came.

    The driver records each tool call and result with its tool_use_id; a request made while
    exactly one sub-agent runs is that sub-agent's (the main agent waits on it). With
    several running at once it names them all. One query for the whole page.
    """
    claude = [a for a in approvals if a.run.driver == "claude-code"]
    if not claude:
        return {}
    calls = (
        Activity.objects.filter(run_id__in={a.run_id for a in claude}, kind="tool", event=Event.TOOL, payload__name__in=SUBAGENT_TOOLS)
        .order_by("run_id", "seq")
        .values_list("run_id", "created_at", "payload")
    )
    started: dict[int, list[tuple[datetime, str, str]]] = {}
    ended: dict[tuple[int, str], datetime] = {}
    for run_id, created_at, payload in calls:
        tool_use_id = str(payload.get("tool_use_id") or "")
        if payload.get("phase") == "result":
            ended[(run_id, tool_use_id)] = created_at
        elif payload.get("phase") == "call":
            started.setdefault(run_id, []).append((created_at, tool_use_id, _subagent_name(payload.get("input"))))
    asking: dict[int, str] = {}
    for approval in claude:
        names = [
            name
            for at, tool_use_id, name in started.get(approval.run_id, [])
            if at <= approval.created_at and ended.get((approval.run_id, tool_use_id), approval.created_at) >= approval.created_at
        ]
        if names:
            asking[approval.pk] = " or ".join(dict.fromkeys(names))
    return asking


def _subagent_name(task_input: Any) -> str:
    """"code-reviewer (Review the diff)" from a Task call's input; agent text, escaped on output."""
    if not isinstance(task_input, dict):
        return "a sub-agent"
    kind = str(task_input.get("subagent_type") or task_input.get("name") or "sub-agent")[:80]
    description = str(task_input.get("description") or "")[:80]
    return f"{kind} ({description})" if description else kind


def grants_active(*, session_id: int) -> QuerySet[Grant]:
    return Grant.objects.filter(session_id=session_id, revoked_at__isnull=True).order_by("created_at", "id")


def grants_for_run(run: Any) -> QuerySet[Grant]:
    """The grants that may answer a request of `run`: its session's active grants, but under
    four eyes (GATEHOUSE_REVIEW_OWN_RUNS off) never one made by the run's starter: their
    "always allow" is their own decision on their own run (issue 34)."""
    grants = grants_active(session_id=run.session_id)
    if not settings.GATEHOUSE_REVIEW_OWN_RUNS and run.created_by_id is not None:
        grants = grants.exclude(created_by_id=run.created_by_id)
    return grants
