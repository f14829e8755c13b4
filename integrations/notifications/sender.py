"""Sending notifications: outside any request, in the driver worker's process, beside the
webhook outbox (drivers/worker.py starts `notifications_loop` in `serve` and `runworker`).

Each due row is claimed (a lease on the row: several workers share the outbox), rendered
from the approval as it is now — one decided meanwhile is `skipped`, nothing to ask — and
sent: e-mail through Django's mail framework (EMAIL_* from GATEHOUSE_EMAIL_URL,
EMAIL_TIMEOUT), the chat message by POST to GATEHOUSE_CHAT_WEBHOOK_URL through the webhooks'
address checks (`integrations.webhooks.targets`: no private address unless allowed, the
checked address pinned, GATEHOUSE_WEBHOOK_TIMEOUT_S). A failure is retried with the
webhooks' backoff until GATEHOUSE_WEBHOOK_RETRY_FOR_S or the approval's deadline; then
`failed`. The chat URL (a secret) is never logged or recorded.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from approvals.models import Approval
from integrations.models import Notification
from integrations.notifications.links import link_expiry
from integrations.notifications.render import chat_body, email_message
from integrations.webhooks.sender import (
    USER_AGENT,
    PinnedHTTPConnection,
    PinnedHTTPSConnection,
    _in_own_thread,
    next_attempt_delay,
)
from integrations.webhooks.targets import TargetRefused, check_url, resolve

logger = logging.getLogger(__name__)

BATCH = 20


class _Permanent(Exception):
    """A failure a retry would not mend (no address, a refused target)."""


def post_json(url: str, body: str) -> int:
    """POST JSON to an allowed address (checked, then pinned); the status code."""
    scheme, host, port = check_url(url)
    address = resolve(host, port)[0]
    connection_type = PinnedHTTPSConnection if scheme == "https" else PinnedHTTPConnection
    connection = connection_type(host, port, address=address, timeout=settings.GATEHOUSE_WEBHOOK_TIMEOUT_S)
    split = url.split("://", 1)[1]
    path = "/" + split.split("/", 1)[1] if "/" in split else "/"
    try:
        connection.request("POST", path, body=body.encode(), headers={"Content-Type": "application/json", "User-Agent": USER_AGENT})
        response = connection.getresponse()
        response.read(1000)
        return int(response.status)
    finally:
        connection.close()


def _send_email(notification: Notification, approval: Approval) -> None:
    user = notification.user
    if user is None or not user.email:
        raise _Permanent("the person has no e-mail address")
    subject, text, html = email_message(approval, user)
    message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [user.email],
                                     connection=get_connection(fail_silently=False))
    message.attach_alternative(html, "text/html")
    message.send()


def _send_chat(notification: Notification, approval: Approval) -> None:
    url = settings.GATEHOUSE_CHAT_WEBHOOK_URL
    if not url:
        raise _Permanent("GATEHOUSE_CHAT_WEBHOOK_URL is not set")
    try:
        status = post_json(url, chat_body(approval, list(notification.mentions or [])))
    except TargetRefused as exc:
        raise _Permanent(f"refused target: {exc}") from None
    if not 200 <= status < 300:
        raise OSError(f"HTTP {status}")


def _claim(notification_id: int, now: Any) -> bool:
    lease = now + timedelta(seconds=max(settings.GATEHOUSE_WEBHOOK_TIMEOUT_S, settings.EMAIL_TIMEOUT or 0) + 30)
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    return Notification.objects.filter(pk=notification_id, status=Notification.Status.PENDING).filter(free) \
        .update(locked_until=lease) == 1


def notification_send(*, notification_id: int) -> str:
    """One attempt at one claimed notification; returns its new status."""
    notification = Notification.objects.select_related("user").get(pk=notification_id)
    approval = Approval.objects.select_related("run", "step").filter(pk=notification.approval_id).first()
    number = notification.attempts + 1
    fields: dict[str, Any] = {"attempts": number, "locked_until": None}
    if approval is None or not approval.is_pending:
        fields.update(status=Notification.Status.SKIPPED, last_error="decided before it was sent")
    else:
        error, permanent = "", False
        try:
            (_send_email if notification.channel == Notification.Channel.EMAIL else _send_chat)(notification, approval)
        except _Permanent as exc:
            error, permanent = str(exc), True
        except (OSError, http.client.HTTPException) as exc:  # smtplib's errors are OSErrors
            error = f"{type(exc).__name__}: {exc}"
        fields["last_error"] = error[:2000]
        if not error:
            fields.update(status=Notification.Status.SENT, sent_at=timezone.now())
        else:
            retry_at = timezone.now() + timedelta(seconds=next_attempt_delay(number))
            give_up_at = min(notification.created_at + timedelta(seconds=settings.GATEHOUSE_WEBHOOK_RETRY_FOR_S),
                             link_expiry(approval))
            if permanent or retry_at > give_up_at:
                fields["status"] = Notification.Status.FAILED
                logger.warning("notification %s (%s) failed: %s", notification.pk, notification.channel, error)
            else:
                fields["next_attempt_at"] = retry_at
    with transaction.atomic():
        Notification.objects.filter(pk=notification.pk).update(**fields)
    return str(fields.get("status", Notification.Status.PENDING))


def notifications_send_due_once(limit: int = BATCH) -> int:
    """Send what is due now; returns how many were attempted."""
    now = timezone.now()
    due = list(
        Notification.objects.filter(status=Notification.Status.PENDING, next_attempt_at__lte=now)
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .order_by("next_attempt_at", "id").values_list("id", flat=True)[:limit]
    )
    sent = 0
    for notification_id in due:
        if _claim(notification_id, timezone.now()):
            notification_send(notification_id=notification_id)
            sent += 1
    return sent


async def notifications_loop() -> None:
    """Forever: send due notifications, in a thread of their own (a slow mail server never
    holds the thread Django's sync views share, nor the webhooks' sender)."""
    send = _in_own_thread(notifications_send_due_once)
    while True:
        sent = 0
        try:
            sent = await send()
        except Exception:
            logger.exception("notification sender pass failed; retrying")
        await asyncio.sleep(0 if sent >= BATCH else settings.GATEHOUSE_WEBHOOK_POLL_S)
