"""Signed webhooks: an outbox written with the event, sent outside the request, retried with
exponential backoff for a bounded time, every attempt recorded; no private targets unless allowed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient

from integrations.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from integrations.webhooks.sender import send_due_once
from integrations.webhooks.signing import signature, verify
from integrations.webhooks.targets import TargetRefused, resolve
from tests.flow import eventually, pending_approval, start_run
from tests.integrations.receiver import Receiver

# Asked under the default policy, inside the sandbox floor or not: a remote mutation.
ASKED = "git push origin main"

WRITE = {"steps": [{"tool": "bash", "input": {"command": ASKED}}]}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as server:
        yield server


def _register(api: APIClient, url: str, events: list[str], **extra: Any) -> dict[str, Any]:
    response = api.post("/api/v1/webhooks/", {"url": url, "events": events, **extra}, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    return response.json()


def _ask(db: Any = None) -> Any:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario=WRITE, run_policy={"approvals": {"timeout_s": -1}})
    return gate_request(run_id=run.pk, tool="bash", input={"command": ASKED}, cwd=run.workspace, subtype="command")


@pytest.mark.django_db
def test_a_delivery_is_signed_and_a_receiver_can_verify_it(api: APIClient, receiver: Receiver) -> None:
    hook = _register(api, receiver.url, ["approval.requested"])
    assert hook["secret"].startswith("whsec_") and "secret" not in api.get("/api/v1/webhooks/").json()["results"][0]
    outcome = _ask()
    assert WebhookDelivery.objects.get().status == "pending"  # written with the approval, not sent yet
    assert receiver.requests == []

    assert send_due_once() == 1
    [request] = receiver.requests
    headers, body = request["headers"], request["body"]
    assert request["path"] == "/hooks/gatehouse"
    assert headers["Content-Type"] == "application/json" and headers["Gatehouse-Event"] == "approval.requested"
    assert verify(hook["secret"], headers["Gatehouse-Signature"], body, now=int(time.time()))
    assert not verify(hook["secret"], headers["Gatehouse-Signature"], body + " ", now=int(time.time()))
    assert not verify("whsec_other", headers["Gatehouse-Signature"], body, now=int(time.time()))
    payload = json.loads(body)
    assert payload["event"] == "approval.requested"
    assert payload["data"]["approval"]["id"] == outcome.approval_id
    assert payload["data"]["approval"]["hash"]  # a chat bot can decide from the delivery alone
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    assert WebhookAttempt.objects.get().status_code == 200


def test_the_documented_verification_recipe_verifies_a_real_signature() -> None:
    """The five lines docs/api.md gives a receiver, run as written."""
    from tests.processes import ROOT

    api_docs = (ROOT / "docs" / "api.md").read_text()
    recipe = api_docs.split("A receiver checks it in five lines:\n\n```python\n", 1)[1].split("```", 1)[0]
    assert len(recipe.strip().splitlines()) == 5
    namespace: dict[str, Any] = {}
    exec(recipe, namespace)  # noqa: S102  (the docs' own code)
    secret, body = "whsec_test", '{"event":"run.finished","note":"é"}'
    header = signature(secret, int(time.time()), body)
    assert namespace["verified"](secret, header, body.encode())
    assert not namespace["verified"](secret, header, body.encode() + b" ")
    assert not namespace["verified"](secret, signature(secret, int(time.time()) - 3600, body), body.encode())


@pytest.mark.django_db
def test_failed_attempts_are_retried_with_exponential_backoff(api: APIClient, settings: Any) -> None:
    settings.GATEHOUSE_WEBHOOK_BACKOFF_S = 0.3
    with Receiver([500, 503, 200]) as receiver:
        _register(api, receiver.url, ["approval.requested"])
        _ask()
        deadline = time.monotonic() + 10
        while len(receiver.requests) < 3 and time.monotonic() < deadline:
            send_due_once()
            time.sleep(0.02)
    attempts = list(WebhookAttempt.objects.order_by("number"))
    assert [(a.number, a.status_code) for a in attempts] == [(1, 500), (2, 503), (3, 200)]
    assert attempts[0].error == "HTTP 500" and attempts[2].error == ""
    assert all(a.duration_ms < 5000 for a in attempts)
    gaps = [b["at"] - a["at"] for a, b in zip(receiver.requests, receiver.requests[1:], strict=False)]
    assert gaps[0] >= 0.3 and gaps[1] >= 0.6  # 0.3 s, then twice as long
    assert WebhookDelivery.objects.get().status == "delivered"


@pytest.mark.django_db
def test_retries_stop_after_the_retry_window(api: APIClient, settings: Any) -> None:
    settings.GATEHOUSE_WEBHOOK_BACKOFF_S = 0.1
    settings.GATEHOUSE_WEBHOOK_RETRY_FOR_S = 0.5
    with Receiver([500] * 50) as receiver:
        _register(api, receiver.url, ["approval.requested"])
        _ask()
        deadline = time.monotonic() + 5
        while WebhookDelivery.objects.get().status == "pending" and time.monotonic() < deadline:
            send_due_once()
            time.sleep(0.02)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed"
    assert 2 <= delivery.attempts <= 4 and delivery.last_error == "HTTP 500"
    assert len(receiver.requests) == delivery.attempts


@pytest.mark.django_db
def test_an_unreachable_receiver_is_an_attempt_with_its_error(api: APIClient, settings: Any) -> None:
    from tests.processes import free_port

    _register(api, f"http://127.0.0.1:{free_port()}/", ["approval.requested"])
    _ask()
    send_due_once()
    attempt = WebhookAttempt.objects.get()
    assert attempt.status_code is None and "ConnectionRefusedError" in attempt.error
    assert WebhookDelivery.objects.get().status == "pending"


@pytest.mark.django_db
def test_private_targets_are_refused_unless_allowed(api: APIClient, settings: Any, receiver: Receiver) -> None:
    settings.GATEHOUSE_WEBHOOK_ALLOW_PRIVATE = False
    for url in [receiver.url, "http://10.1.2.3/x", "http://[::1]:9/x", "http://[64:ff9b::7f00:1]:9/x", "http://169.254.169.254/latest", "ftp://example.com/"]:
        response = api.post("/api/v1/webhooks/", {"url": url, "events": ["run.finished"]}, format="json")
        assert response.status_code == HTTPStatus.BAD_REQUEST, url
        assert response.json()["field"] == "url"
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_the_address_is_checked_again_at_send_time(api: APIClient, settings: Any, receiver: Receiver, monkeypatch: Any) -> None:
    """DNS rebinding: a name that was public when registered and resolves to a private
    address when sent is refused, and nothing is sent."""
    import socket

    endpoint = WebhookEndpoint.objects.create(url="http://hooks.example.test/x", events=["approval.requested"], secret="s")
    settings.GATEHOUSE_WEBHOOK_ALLOW_PRIVATE = False
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", 80))])
    _ask()
    send_due_once()
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    assert delivery.status == "failed" and "10.0.0.7" in delivery.last_error
    assert receiver.requests == []


@pytest.mark.django_db
def test_registering_webhooks_is_for_administrators(make_user: Any, receiver: Receiver) -> None:
    client = APIClient()
    client.force_authenticate(make_user("dev", superuser=False, perms=("runs.add_run",)))
    response = client.post("/api/v1/webhooks/", {"url": receiver.url, "events": ["run.finished"]}, format="json")
    assert response.status_code == HTTPStatus.FORBIDDEN


@pytest.mark.django_db
def test_unknown_events_are_refused(api: APIClient, receiver: Receiver) -> None:
    response = api.post("/api/v1/webhooks/", {"url": receiver.url, "events": ["run.started"]}, format="json")
    assert (response.status_code, response.json()["field"]) == (HTTPStatus.BAD_REQUEST, "events")
    assert "run.started" in response.json()["message"]


@pytest.mark.django_db
def test_attempts_are_visible_in_the_admin(api: APIClient, receiver: Receiver, reviewer: Any) -> None:
    from django.test import Client

    receiver.statuses = [502]
    _register(api, receiver.url, ["approval.requested"])
    _ask()
    send_due_once()
    admin = Client()
    admin.force_login(reviewer)
    delivery = WebhookDelivery.objects.get()
    page = admin.get(f"/admin/integrations/webhookdelivery/{delivery.pk}/change/").content.decode()
    assert "502" in page and "HTTP 502" in page
    assert admin.get("/admin/integrations/webhookendpoint/").status_code == HTTPStatus.OK


@pytest.mark.django_db(transaction=True)
async def test_the_worker_sends_approval_and_run_events_after_the_decision(api: APIClient, worker: Any, settings: Any) -> None:
    """End to end through the real worker: the decision's answer does not wait for the
    receiver (slow here); the events arrive, in order, signed."""
    settings.GATEHOUSE_WEBHOOK_POLL_S = 0.1
    with Receiver(delay_s=1.0) as receiver:
        hook = await sync_to_async(_register)(api, receiver.url, ["approval.requested", "approval.resolved", "run.finished"])
        run = await start_run(api, WRITE)
        approval = await pending_approval(api, run["id"])
        started = time.monotonic()
        response = await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
        assert response.status_code == HTTPStatus.OK
        assert time.monotonic() - started < 1.0  # not held up by the 1 s receiver
        await eventually(lambda: len(receiver.requests) >= 3, timeout=30)
    events = [json.loads(r["body"])["event"] for r in receiver.requests]
    assert events == ["approval.requested", "approval.resolved", "run.finished"]
    finished = json.loads(receiver.requests[2]["body"])["data"]["run"]
    assert (finished["id"], finished["status"]) == (run["id"], "completed")
    assert all(verify(hook["secret"], r["headers"]["Gatehouse-Signature"], r["body"], now=int(time.time())) for r in receiver.requests)


@pytest.mark.parametrize("address", [
    "64:ff9b::7f00:1", "64:ff9b:1::7f00:1", "2002:7f00:1::", "::ffff:127.0.0.1", "::127.0.0.1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe", "64:ff9b::a9fe:a9fe", "2002:a00:1::1",
])
def test_ipv6_forms_that_embed_a_private_ipv4_address_are_refused(settings: Any, address: str) -> None:
    settings.GATEHOUSE_WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(TargetRefused, match="not a public one"):
        resolve(address, 80)


def test_an_ipv6_form_that_embeds_a_public_ipv4_address_is_accepted(settings: Any) -> None:
    settings.GATEHOUSE_WEBHOOK_ALLOW_PRIVATE = False
    assert resolve("64:ff9b::808:808", 80) == ["64:ff9b::808:808"]
