"""Webhook signing secrets: a custom one is long enough and never shown back, whole or in
part, by the API, the admin or a log; only a secret Gatehouse generated has a visible
prefix (and is shown whole once, in the answer that created it)."""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from rest_framework.test import APIClient

from integrations.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/hook"
CUSTOM = "my-own-signing-secret-0123456789-abcdef"  # 39 characters
SHORTS = ["q7", "short-secret-" + "z" * 18]  # 2 and 31 characters


@pytest.fixture
def admin_client(reviewer: Any) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def _admin_add(client: Client, secret: str) -> Any:
    return client.post(
        "/admin/integrations/webhookendpoint/add/",
        {"url": URL, "events": ["run.finished"], "secret": secret, "active": "on",
         "deliveries-TOTAL_FORMS": "0", "deliveries-INITIAL_FORMS": "0"},
        follow=True,
    )


@pytest.mark.parametrize("secret", SHORTS)
def test_a_short_custom_secret_is_refused_naming_the_field(api: APIClient, secret: str, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    response = api.post("/api/v1/webhooks/", {"url": URL, "events": ["run.finished"], "secret": secret}, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    body = response.json()
    assert body["field"] == "secret" and body["message"].startswith("secret:") and "32 characters" in body["message"]
    assert secret not in json.dumps(body)
    assert not WebhookEndpoint.objects.exists()
    assert secret not in caplog.text


def test_a_custom_secret_of_32_characters_is_accepted(api: APIClient) -> None:
    response = api.post("/api/v1/webhooks/", {"url": URL, "events": ["run.finished"], "secret": "y" * 32}, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert WebhookEndpoint.objects.get().secret == "y" * 32


def test_a_custom_secret_is_never_echoed_by_the_api(api: APIClient, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    created = api.post("/api/v1/webhooks/", {"url": URL, "events": ["run.finished"], "secret": CUSTOM}, format="json")
    assert created.status_code == HTTPStatus.CREATED, created.content
    hook = created.json()
    assert (hook["secret"], hook["secret_prefix"], hook["secret_generated"]) == (None, None, False)
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == CUSTOM and not endpoint.secret_generated  # kept exactly as given, to sign with
    answers = [
        created,
        api.get("/api/v1/webhooks/"),
        api.get(f"/api/v1/webhooks/{endpoint.pk}/"),
        api.get(f"/api/v1/webhooks/{endpoint.pk}/deliveries/"),
        api.delete(f"/api/v1/webhooks/{endpoint.pk}/"),
    ]
    for answer in answers:
        assert answer.status_code == HTTPStatus.OK or answer is created
        assert CUSTOM[:8] not in answer.content.decode(), answer.content
    assert CUSTOM[:8] not in caplog.text


def test_a_generated_secret_is_shown_once_and_then_only_by_its_prefix(api: APIClient) -> None:
    created = api.post("/api/v1/webhooks/", {"url": URL, "events": ["run.finished"]}, format="json").json()
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret_generated and created["secret"] == endpoint.secret and created["secret_generated"]
    assert created["secret_prefix"] == endpoint.secret[:10] and endpoint.secret.startswith("whsec_")
    listed = api.get("/api/v1/webhooks/").json()["results"][0]
    assert listed["secret_prefix"] == endpoint.secret[:10] and "secret" not in listed
    assert endpoint.secret not in api.get(f"/api/v1/webhooks/{endpoint.pk}/").content.decode()


@pytest.mark.parametrize("secret", SHORTS)
def test_the_admin_refuses_a_short_custom_secret_without_showing_it_again(admin_client: Client, secret: str) -> None:
    response = _admin_add(admin_client, secret)
    assert response.status_code == HTTPStatus.OK
    assert not WebhookEndpoint.objects.exists()
    page = response.content.decode()
    assert "at least 32 characters" in page
    assert f'value="{secret}"' not in page  # the form is shown again without the secret typed into it


def test_the_admin_never_shows_a_custom_secret(admin_client: Client, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    response = _admin_add(admin_client, CUSTOM)
    assert response.status_code == HTTPStatus.OK
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret == CUSTOM and not endpoint.secret_generated
    pages = [
        response.content.decode(),
        " ".join(str(m) for m in get_messages(response.wsgi_request)),
        admin_client.get("/admin/integrations/webhookendpoint/").content.decode(),
        admin_client.get(f"/admin/integrations/webhookendpoint/{endpoint.pk}/change/").content.decode(),
        admin_client.get(f"/admin/integrations/webhookendpoint/{endpoint.pk}/history/").content.decode(),
    ]
    for page in pages:
        assert CUSTOM[:8] not in page
    assert CUSTOM[:8] not in caplog.text


def test_the_admin_shows_a_generated_secrets_prefix(admin_client: Client) -> None:
    response = _admin_add(admin_client, "")
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret_generated
    assert any(endpoint.secret in str(m) for m in get_messages(response.wsgi_request))  # once, right after saving
    page = admin_client.get(f"/admin/integrations/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert endpoint.secret[:10] in page and endpoint.secret not in page
    assert endpoint.secret[:10] in admin_client.get("/admin/integrations/webhookendpoint/").content.decode()


def test_the_migration_marks_only_secrets_that_look_generated() -> None:
    """Endpoints registered before Gatehouse recorded it: a `whsec_` + 43 URL-safe
    characters secret was generated; anything else shows no prefix."""
    from importlib import import_module

    from django.apps import apps

    from integrations.webhooks.signing import new_secret

    migration = import_module("integrations.migrations.0003_webhook_secret_generated")
    for secret in (new_secret(), "whsec_short", CUSTOM, new_secret() + "!"):
        WebhookEndpoint.objects.create(url=URL, events=["run.finished"], secret=secret)
    migration.mark_generated(apps, None)
    assert [e.secret_generated for e in WebhookEndpoint.objects.order_by("id")] == [True, False, False, False]
