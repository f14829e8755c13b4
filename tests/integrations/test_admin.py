"""The admin: tokens are created there (shown once, stored hashed) and revoked; webhook
endpoints are registered there with their secret shown once."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from integrations.models import ApiToken, WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(reviewer: Any) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def test_a_token_made_in_the_admin_is_shown_once_and_works(admin_client: Client, reviewer: Any) -> None:
    response = admin_client.post(
        "/admin/integrations/apitoken/add/",
        {"user": reviewer.pk, "name": "dashboard", "scopes": ["read"], "expires_in_days": "30"},
        follow=True,
    )
    assert response.status_code == HTTPStatus.OK
    token = ApiToken.objects.get(name="dashboard")
    shown = [str(m) for m in get_messages(response.wsgi_request) if "shown only now" in str(m)]
    assert len(shown) == 1
    key = shown[0].rsplit(" ", 1)[1]
    assert key.startswith(token.prefix) and token.scopes == ["read"] and token.expires_at is not None
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/runs/").status_code == HTTPStatus.OK
    page = admin_client.get(f"/admin/integrations/apitoken/{token.pk}/change/").content.decode()
    assert key not in page and token.prefix in page
    admin_client.post("/admin/integrations/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert api.get("/api/v1/runs/").status_code == HTTPStatus.UNAUTHORIZED


def test_the_first_apis_plain_text_tokens_are_not_offered_in_the_admin(admin_client: Client) -> None:
    assert admin_client.get("/admin/authtoken/tokenproxy/").status_code == HTTPStatus.NOT_FOUND


def test_a_webhook_registered_in_the_admin_shows_its_secret_once(admin_client: Client) -> None:
    response = admin_client.post(
        "/admin/integrations/webhookendpoint/add/",
        {"url": "http://127.0.0.1:9/hook", "events": ["run.finished"], "secret": "", "active": "on",
         "deliveries-TOTAL_FORMS": "0", "deliveries-INITIAL_FORMS": "0"},
        follow=True,
    )
    assert response.status_code == HTTPStatus.OK, response.content[:500]
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret.startswith("whsec_")
    assert any(endpoint.secret in str(m) for m in get_messages(response.wsgi_request))
    assert endpoint.secret not in admin_client.get(f"/admin/integrations/webhookendpoint/{endpoint.pk}/change/").content.decode()
