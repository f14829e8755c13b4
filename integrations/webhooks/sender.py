"""Sending the outbox: outside any request, in the driver worker's process.

`outbox_loop` runs beside the worker (drivers/worker.py starts it, in `serve` and in
`runworker drivers` alike). Each pass claims due deliveries one at a time (a lease on the
row, so several workers share the outbox), sends each to an address checked at send time,
and records the attempt (status code, duration, error). A 2xx delivers it; anything else is
retried after GATEHOUSE_WEBHOOK_BACKOFF_S, doubling each time (at most 15 min), until
GATEHOUSE_WEBHOOK_RETRY_FOR_S after the event; then it is `failed`.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import socket
import ssl
import time
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone

from integrations.hooks.gateway import hook_close_idle
from integrations.idempotency import idempotency_purge
from integrations.models import WebhookAttempt, WebhookDelivery
from integrations.webhooks.signing import signature
from integrations.webhooks.targets import TargetRefused, check_url, resolve

logger = logging.getLogger(__name__)

BATCH = 20
MAX_BACKOFF_S = 15 * 60.0
RESPONSE_EXCERPT = 1000
USER_AGENT = "Gatehouse-Webhooks/1"


class _Pinned:
    """Connect to the address that was checked, whatever the name resolves to by then."""

    address: str
    port: int
    timeout: Any

    def _socket(self) -> socket.socket:
        return socket.create_connection((self.address, self.port), self.timeout)


class PinnedHTTPConnection(_Pinned, http.client.HTTPConnection):
    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = self._socket()


class PinnedHTTPSConnection(_Pinned, http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, *, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self) -> None:
        self.sock = self._context.wrap_socket(self._socket(), server_hostname=self.host)  # type: ignore[attr-defined]


def post_signed(url: str, body: str, *, secret: str, event: str, delivery_id: int) -> tuple[int, str]:
    """POST the body to url (an allowed address); (status, first bytes of the answer)."""
    scheme, host, port = check_url(url)
    address = resolve(host, port)[0]
    connection_type = PinnedHTTPSConnection if scheme == "https" else PinnedHTTPConnection
    connection = connection_type(host, port, address=address, timeout=settings.GATEHOUSE_WEBHOOK_TIMEOUT_S)
    split = url.split("://", 1)[1]
    path = "/" + split.split("/", 1)[1] if "/" in split else "/"
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Gatehouse-Event": event,
        "Gatehouse-Delivery": str(delivery_id),
        "Gatehouse-Signature": signature(secret, int(time.time()), body),
    }
    try:
        connection.request("POST", path, body=body.encode(), headers=headers)
        response = connection.getresponse()
        excerpt = response.read(RESPONSE_EXCERPT).decode("utf-8", "replace")
        return response.status, excerpt
    finally:
        connection.close()


def _claim(delivery_id: int, now: Any) -> bool:
    lease = now + timedelta(seconds=settings.GATEHOUSE_WEBHOOK_TIMEOUT_S + 30)
    free = Q(locked_until__isnull=True) | Q(locked_until__lt=now)
    return (
        WebhookDelivery.objects.filter(pk=delivery_id, status=WebhookDelivery.Status.PENDING).filter(free).update(locked_until=lease)
        == 1
    )


def next_attempt_delay(attempts: int) -> float:
    """Seconds before attempt `attempts + 1`: the backoff doubled per earlier failure."""
    return float(min(settings.GATEHOUSE_WEBHOOK_BACKOFF_S * (2 ** max(attempts - 1, 0)), MAX_BACKOFF_S))


def delivery_send(*, delivery_id: int) -> str:
    """One attempt at one claimed delivery; returns its new status."""
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    number = delivery.attempts + 1
    started = timezone.now()
    clock_start = time.monotonic()
    status_code: int | None = None
    excerpt = error = ""
    permanent = False
    try:
        status_code, excerpt = post_signed(
            delivery.endpoint.url, delivery.body, secret=delivery.endpoint.secret, event=delivery.event, delivery_id=delivery.pk
        )
        if not 200 <= status_code < 300:
            error = f"HTTP {status_code}"
    except TargetRefused as exc:
        error, permanent = f"refused target: {exc}", True
    except (OSError, http.client.HTTPException) as exc:
        error = f"{type(exc).__name__}: {exc}"
    duration_ms = int((time.monotonic() - clock_start) * 1000)
    with transaction.atomic():
        WebhookAttempt.objects.create(
            delivery=delivery, number=number, started_at=started, status_code=status_code,
            duration_ms=duration_ms, error=error[:2000], response_excerpt=excerpt,
        )
        fields: dict[str, Any] = {"attempts": number, "locked_until": None, "last_error": error[:2000]}
        if not error:
            fields.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=timezone.now())
        else:
            retry_at = timezone.now() + timedelta(seconds=next_attempt_delay(number))
            give_up_at = delivery.created_at + timedelta(seconds=settings.GATEHOUSE_WEBHOOK_RETRY_FOR_S)
            if permanent or retry_at > give_up_at:
                fields["status"] = WebhookDelivery.Status.FAILED
            else:
                fields["next_attempt_at"] = retry_at
        WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    return str(fields.get("status", WebhookDelivery.Status.PENDING))


def send_due_once(limit: int = BATCH) -> int:
    """Send what is due now; returns how many deliveries were attempted."""
    now = timezone.now()
    due = list(
        WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now)
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .order_by("next_attempt_at", "id")
        .values_list("id", flat=True)[:limit]
    )
    sent = 0
    for delivery_id in due:
        if _claim(delivery_id, timezone.now()):
            delivery_send(delivery_id=delivery_id)
            sent += 1
    return sent


def _in_own_thread(fn: Any) -> Any:
    """Run `fn` in a thread of the loop's default pool with fresh database connections."""

    def run() -> Any:
        close_old_connections()
        try:
            return fn()
        finally:
            close_old_connections()

    return sync_to_async(run, thread_sensitive=False)


def _housekeeping() -> None:
    idempotency_purge()
    closed = hook_close_idle()
    if closed:
        logger.info("hook gateway: closed %d idle hook session run(s): %s", len(closed), closed)


async def outbox_loop() -> None:
    """Forever: send due deliveries (in a thread of its own: a slow receiver never holds the
    thread Django's sync views share); hourly, purge expired idempotency keys and close hook
    sessions that went quiet without a SessionEnd."""
    send = _in_own_thread(send_due_once)
    housekeeping = _in_own_thread(_housekeeping)
    last_housekeeping = 0.0
    while True:
        sent = 0
        try:
            sent = await send()
            if time.monotonic() - last_housekeeping > 3600:
                await housekeeping()
                last_housekeeping = time.monotonic()
        except Exception:
            logger.exception("webhook sender pass failed; retrying")
        await asyncio.sleep(0 if sent >= BATCH else settings.GATEHOUSE_WEBHOOK_POLL_S)
