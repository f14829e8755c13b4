"""HTML pushed to the console over WebSocket, rendered from the pages' own partials.

Each function renders an inline partial of the template the page itself uses (so the
full page, the htmx swap and the WebSocket push share one markup) wrapped for an htmx
out-of-band swap. The services call these after commit, from sync code, with nothing but
an id: they re-read the row, and answer "" when it is gone (the push is then skipped).
There is no request here: no user, no CSRF token; <body hx-headers> supplies the token.
"""

from __future__ import annotations

from django.template.loader import render_to_string

from approvals.models import Approval
from approvals.selectors import grants_active
from runs.models import Activity, Run

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
