"""HTML pushed to the console over WebSocket, rendered from the pages' own partials.

Each function renders an inline partial of the template the page itself uses (so the
full page, the htmx swap and the WebSocket push share one markup) wrapped for an htmx
out-of-band swap. The services only name the change after commit (`broadcast.
fragment_on_commit`); the console's consumers render it here, once per process
(`render_once`), with nothing but an id: they re-read the row, and answer "" when it is
gone (the push is then skipped). There is no request here: no user, no CSRF token;
<body hx-headers> supplies the token.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from approvals.models import Approval
from approvals.selectors import approval_facets, grants_active, subagents_asking
from runs.events import Event
from runs.models import Activity, Run
from runs.selectors import steps_by_seq

logger = logging.getLogger(__name__)

GRANT_EVENTS = {Event.GRANT_CREATED, Event.GRANT_REVOKED}


class Rendered(str):
    """A fragment's HTML and, for the pages that filter what they show, its `facets` (what
    `approvals.selectors.PendingFilter.matches` reads). Computed once per change and
    process like the HTML; a plain `str` renderer has no facets (every page gets it)."""

    facets: dict[str, Any] | None

    def __new__(cls, html: str, facets: dict[str, Any] | None = None) -> Rendered:
        obj = super().__new__(cls, html)
        obj.facets = facets
        return obj


def _run(run_id: int) -> Run | None:
    return Run.objects.select_related("session", "created_by").filter(pk=run_id).first()


def _run_facets(run: Run) -> dict[str, Any]:
    """What a run row's push is filtered by: the page's session filter, and who may see the
    run (`approvals.access.run_facets_visible`: its starter, reviewers once it has asked)."""
    return {"run": run.pk, "session": run.session_id, "driver": run.driver, "started_by_id": run.created_by_id,
            "has_approvals": Approval.objects.filter(run_id=run.pk).exists()}


def activity_appended(activity_id: int) -> str:
    """Append one row to the run page's `#timeline` (oob `beforeend`)."""
    activity = Activity.objects.select_related("run").filter(pk=activity_id).first()
    if activity is None:
        return ""
    context: dict[str, Any] = {
        "activity": activity, "run": activity.run, "grants_changed": activity.event in GRANT_EVENTS,
        "steps": steps_by_seq(activity.run_id, [activity]),
    }
    if context["grants_changed"]:
        # The run page's "Always allowed" list changes with these: push it along, by id.
        context["grants"] = grants_active(session_id=activity.run.session_id).select_related("created_by")
    return render_to_string("runs/run_detail.html#activity-oob", context)


def run_row(run_id: int) -> str:
    """A new run's row, put first in `#runs-body` (runs list, inbox "recent runs")."""
    run = _run(run_id)
    if run is None:
        return ""
    return Rendered(render_to_string("runs/run_list.html#run-row-oob", {"run": run}), {"runs": _run_facets(run)})


def run_status(run_id: int) -> str:
    """The run page header and the run's list row, each replaced in place by id."""
    run = _run(run_id)
    if run is None:
        return ""
    return Rendered(render_to_string("runs/run_detail.html#run-status-oob", {"run": run}), {"runs": _run_facets(run)})


def _approval(approval_id: int) -> Approval | None:
    return Approval.objects.select_related("run", "run__session", "run__created_by", "step").filter(pk=approval_id).first()


def approval_added(approval_id: int) -> str:
    """A pending approval's card, added to `#approvals` (inbox, run and session pages); its
    facets let a filtered inbox show it only when it matches (else it bumps a counter)."""
    approval = _approval(approval_id)
    if approval is None or not approval.is_pending:
        return ""
    context = {"approval": approval, "asking": subagents_asking([approval])}
    html = render_to_string("approvals/_approval_card.html#card-oob", context)
    return Rendered(html, {"approval": approval_facets(approval), "added": approval.pk})


def approval_changed(approval_id: int) -> str:
    """A pending card replaced in place, by id (a second-reviewer request's first approval:
    "1 of 2"); nothing where the card is not shown."""
    approval = _approval(approval_id)
    if approval is None or not approval.is_pending:
        return ""
    context = {"approval": approval, "asking": subagents_asking([approval]), "replace_oob": True}
    html = render_to_string("approvals/_approval_card.html#card", context)
    return Rendered(html, {"approval": approval_facets(approval), "changed": approval.pk})


def approval_removed(approval_id: int) -> str:
    """Remove the card `#approval-<id>` wherever it is shown (the empty state is CSS); the
    facets (read from the resolved row) keep a filtered inbox's count right."""
    html = render_to_string("approvals/_approval_card.html#card-removed", {"approval_id": approval_id})
    approval = _approval(approval_id)
    return Rendered(html, {"approval": approval_facets(approval), "removed": approval_id} if approval else None)


# --- rendering in the console's consumers, once per change and process ------------------------

RENDERERS: dict[str, Any] = {
    "activity_appended": activity_appended,
    "run_row": run_row,
    "run_status": run_status,
    "approval_added": approval_added,
    "approval_removed": approval_removed,
    "approval_changed": approval_changed,
}
_RENDERED: OrderedDict[str, Rendered] = OrderedDict()
_RENDERING: dict[str, asyncio.Future[Rendered]] = {}
_KEEP = 512


def render(fragment: str, args: dict[str, Any]) -> Rendered:
    renderer = RENDERERS.get(fragment)
    if renderer is None or not isinstance(args, dict):
        return Rendered("")
    try:
        html = renderer(**args)
    except Exception:  # a fragment that fails to render must never break the page's socket
        logger.exception("could not render console fragment %s", fragment)
        return Rendered("")
    return html if isinstance(html, Rendered) else Rendered(str(html))


async def render_once(event: dict[str, Any]) -> str:
    """The HTML of a `console.change` message, rendered once per process however many
    consumers (pages) receive it: the first renders, the others await or reuse its result."""
    return str(await rendered_once(event))


async def rendered_once(event: dict[str, Any]) -> Rendered:
    """`render_once` with the fragment's facets (a `Rendered`), for consumers that filter."""
    token = str(event.get("token") or "")
    if token in _RENDERED:
        return _RENDERED[token]
    pending = _RENDERING.get(token) if token else None
    if pending is not None:
        return await asyncio.shield(pending)
    future: asyncio.Future[Rendered] = asyncio.get_running_loop().create_future()
    if token:
        _RENDERING[token] = future
    try:
        html = await database_sync_to_async(render)(str(event.get("fragment") or ""), event.get("args") or {})
    finally:
        _RENDERING.pop(token, None)
    future.set_result(html)
    if token:
        _RENDERED[token] = html
        while len(_RENDERED) > _KEEP:
            _RENDERED.popitem(last=False)
    return html


# --- per connection: the inbox's counters (plain numbers, no template) -------------------------


def pending_count_oob(count: int) -> str:
    """The inbox's "N waiting" (matching its filter), replaced by id."""
    return f'<span id="pending-count" class="count" data-count="{int(count)}" hx-swap-oob="true">{int(count)}</span>'


def outside_count_oob(count: int) -> str:
    """How many new requests arrived that this page does not show (another filter, a later page)."""
    return f'<span id="outside-count" data-count="{int(count)}" hx-swap-oob="true">{int(count)}</span>'
