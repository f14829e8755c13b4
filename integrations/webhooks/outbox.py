"""The outbox: a delivery row per subscribed endpoint, written with the event itself.

Every event Gatehouse sends is an activity the services already append inside the
transaction that changes the rows (`runs.timeline.activity_record`), so the outbox listens
there: the delivery commits with the approval or run it describes, or not at all, and the
sender (outside any request) finds it in the database. Nothing here touches the network.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models.signals import post_save
from django.utils import timezone

from approvals.api import ApprovalOutput
from approvals.models import Approval
from infra.prepared import Prepared
from integrations.models import WebhookDelivery, WebhookEndpoint
from runs.api import RunOutput
from runs.events import Event
from runs.models import Activity, Run

# Activity event -> webhook event.
EVENTS: dict[str, str] = {
    Event.APPROVAL_REQUESTED: WebhookEndpoint.Event.APPROVAL_REQUESTED,
    Event.USER_INPUT_REQUESTED: WebhookEndpoint.Event.APPROVAL_REQUESTED,
    Event.APPROVAL_RESOLVED: WebhookEndpoint.Event.APPROVAL_RESOLVED,
    Event.USER_INPUT_RESOLVED: WebhookEndpoint.Event.APPROVAL_RESOLVED,
    Event.RUN_COMPLETED: WebhookEndpoint.Event.RUN_FINISHED,
    Event.RUN_FAILED: WebhookEndpoint.Event.RUN_FINISHED,
    Event.RUN_CANCELLED: WebhookEndpoint.Event.RUN_FINISHED,
}


def _data(activity: Any) -> dict[str, Any] | None:
    run = Run.objects.select_related("policy").get(pk=activity.run_id)
    if EVENTS[activity.event] == "run.finished":
        return {"run": RunOutput(run).data}
    approval = Approval.objects.select_related("step", "decided_by").filter(pk=activity.payload.get("approval")).first()
    if approval is None:
        return None
    summary = {"id": run.pk, "status": run.status, "driver": run.driver, "session": run.session_id}
    return {"approval": ApprovalOutput(approval).data, "run": summary}


def body_of(event: str, activity: Any, data: dict[str, Any]) -> str:
    """The exact text that is signed and sent."""
    envelope = {
        "event": event,
        "id": f"activity-{activity.pk}",  # the same for every retry: receivers deduplicate on it
        "created_at": activity.created_at,
        "data": data,
    }
    return json.dumps(envelope, cls=DjangoJSONEncoder, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@functools.cache
def _active_endpoints() -> Prepared[Any]:
    """The active endpoints (read with every approval and run-end activity: compiled once)."""
    return Prepared(lambda: WebhookEndpoint.objects.filter(active=True))


def activity_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    event = EVENTS.get(instance.event)
    if not created or event is None:
        return

    endpoints = [e for e in _active_endpoints().all() if event in (e.events or [])]
    if not endpoints:
        return
    data = _data(instance)
    if data is None:
        return
    body = body_of(event, instance, data)
    now = timezone.now()
    WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(endpoint=e, event=event, body=body, next_attempt_at=now) for e in endpoints]
    )


def connect() -> None:
    post_save.connect(activity_saved, sender=Activity, dispatch_uid="integrations.webhooks.outbox")
