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
from approvals.selectors import grants_active
from runs.models import Activity, Run

logger = logging.getLogger(__name__)

GRANT_EVENTS = {"grant.created", "grant.revoked"}


def _run(run_id: int) -> Run | None:
    return Run.objects.select_related("session", "created_by").filter(pk=run_id).first()


def activity_appended(activity_id: int) -> str:
    """Append one row to the run page's `#timeline` (oob `beforeend`)."""
    activity = Activity.objects.select_related("run").filter(pk=activity_id).first()
    if activity is None:
        return ""
    context = {"activity": activity, "run": activity.run, "grants_changed": activity.event in GRANT_EVENTS}
    if context["grants_changed"]:
        # The run page's "Always allowed" list changes with these: push it along, by id.
        context["grants"] = grants_active(session_id=activity.run.session_id).select_related("created_by")
    return render_to_string("runs/run_detail.html#activity-oob", context)


def run_row(run_id: int) -> str:
    """A new run's row, put first in `#runs-body` (runs list, inbox "recent runs")."""
    run = _run(run_id)
    if run is None:
        return ""
    return render_to_string("runs/run_list.html#run-row-oob", {"run": run})


def run_status(run_id: int) -> str:
    """The run page header and the run's list row, each replaced in place by id."""
    run = _run(run_id)
    if run is None:
        return ""
    return render_to_string("runs/run_detail.html#run-status-oob", {"run": run})


def approval_added(approval_id: int) -> str:
    """A pending approval's card, added to `#approvals` (inbox and run page)."""
    approval = Approval.objects.select_related("run", "step").filter(pk=approval_id).first()
    if approval is None or not approval.is_pending:
        return ""
    return render_to_string("approvals/_approval_card.html#card-oob", {"approval": approval})


def approval_removed(approval_id: int) -> str:
    """Remove the card `#approval-<id>` wherever it is shown (the empty state is CSS)."""
    return render_to_string("approvals/_approval_card.html#card-removed", {"approval_id": approval_id})


# --- rendering in the console's consumers, once per change and process ------------------------

RENDERERS: dict[str, Any] = {
    "activity_appended": activity_appended,
    "run_row": run_row,
    "run_status": run_status,
    "approval_added": approval_added,
    "approval_removed": approval_removed,
}
_RENDERED: OrderedDict[str, str] = OrderedDict()
_RENDERING: dict[str, asyncio.Future[str]] = {}
_KEEP = 512


def render(fragment: str, args: dict[str, Any]) -> str:
    renderer = RENDERERS.get(fragment)
    if renderer is None or not isinstance(args, dict):
        return ""
    try:
        return str(renderer(**args))
    except Exception:  # a fragment that fails to render must never break the page's socket
        logger.exception("could not render console fragment %s", fragment)
        return ""


async def render_once(event: dict[str, Any]) -> str:
    """The HTML of a `console.change` message, rendered once per process however many
    consumers (pages) receive it: the first renders, the others await or reuse its result."""
    token = str(event.get("token") or "")
    if token in _RENDERED:
        return _RENDERED[token]
    pending = _RENDERING.get(token) if token else None
    if pending is not None:
        return await asyncio.shield(pending)
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
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
