"""API tokens: hashed at rest, scoped, expiring, revocable; first-API tokens keep working."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from integrations.models import ALL_SCOPES, ApiToken

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_create_api_token_prints_the_token_alone_on_the_last_line_and_stores_only_its_hash(reviewer: Any) -> None:
    out = StringIO()
    call_command("create_api_token", reviewer.username, "--scopes", "read,approvals:decide", "--expires-days", "7", stdout=out,
                 stderr=StringIO())
    key = out.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get(user=reviewer)
    assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
    assert key not in str(list(ApiToken.objects.values()))  # nothing stores the token itself
    assert key.startswith(token.prefix) and len(token.prefix) < len(key) // 3
    assert token.scopes == ["read", "approvals:decide"]
    assert timedelta(days=6.9) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert _client(key).get("/api/v1/runs/").status_code == HTTPStatus.OK


def test_without_scopes_a_token_has_every_scope(reviewer: Any) -> None:
    out = StringIO()
    call_command("create_api_token", reviewer.username, stdout=out, stderr=StringIO())
    assert ApiToken.objects.get(user=reviewer).scopes == list(ALL_SCOPES)
    assert ApiToken.objects.get(user=reviewer).expires_at is None


def test_an_unknown_scope_is_refused_by_the_command(reviewer: Any) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="unknown scope 'runs:delete'"):
        call_command("create_api_token", reviewer.username, "--scopes", "read,runs:delete", stdout=StringIO())


def test_scopes_are_checked_on_top_of_permissions(token_client: Callable[..., APIClient]) -> None:
    reader = token_client("read")
    assert reader.get("/api/v1/runs/").status_code == HTTPStatus.OK
    refused = reader.post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO}, format="json")
    assert refused.status_code == HTTPStatus.FORBIDDEN
    assert refused.json()["code"] == "insufficient_scope"
    assert "runs:write" in refused.json()["message"]
    writer = token_client("runs:write")
    assert writer.post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO}, format="json").status_code == HTTPStatus.CREATED
    assert writer.get("/api/v1/runs/").json()["code"] == "insufficient_scope"


def test_a_scope_does_not_give_a_permission_the_user_lacks(make_user: Callable[..., Any], token_client: Callable[..., APIClient]) -> None:
    from django.contrib.auth.models import Permission

    from integrations.tokens import TokenError, token_create

    nobody = make_user("nobody", superuser=False)
    # made: a token never gets a scope beyond what its user may do (issue 34)
    with pytest.raises(TokenError, match="may not use the scope 'runs:write'"):
        token_create(user=nobody, scopes=["runs:write"])
    assert token_create(user=nobody)[0].scopes == ["read"]
    # used: a user who loses the permission loses it through the token too
    starter = make_user("starter", superuser=False, perms=("runs.add_run",))
    client = token_client("read", "runs:write", user=starter)
    starter.user_permissions.remove(Permission.objects.get(codename="add_run"))
    response = client.post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO}, format="json")
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert response.json()["code"] == "insufficient_scope"
    assert "may no longer do what the scope 'runs:write' allows" in response.json()["message"]


def test_an_expired_token_is_refused(reviewer: Any) -> None:
    from integrations.tokens import token_create

    token, key = token_create(user=reviewer, expires_in_days=1)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = _client(key).get("/api/v1/runs/")
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert response.json()["code"] == "token_expired"
    assert response["WWW-Authenticate"] == "Token"


def test_a_revoked_token_is_refused(reviewer: Any) -> None:
    from integrations.tokens import token_create, token_revoke

    token, key = token_create(user=reviewer)
    assert _client(key).get("/api/v1/runs/").status_code == HTTPStatus.OK
    token_revoke(token=token)
    response = _client(key).get("/api/v1/runs/")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.UNAUTHORIZED, "token_revoked")


def test_an_unknown_token_is_refused(db: Any) -> None:
    response = _client("gh_nope_nope").get("/api/v1/runs/")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.UNAUTHORIZED, "invalid_token")


def test_last_used_is_recorded_without_a_write_per_request(reviewer: Any, django_assert_max_num_queries: Any) -> None:
    from integrations.tokens import token_create

    token, key = token_create(user=reviewer)
    client = _client(key)
    client.get("/api/v1/drivers/")
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    client.get("/api/v1/drivers/")
    token.refresh_from_db()
    assert token.last_used_at == first  # at most one write a minute


def test_a_first_api_token_keeps_working_with_every_scope_and_is_stored_hashed(reviewer: Any) -> None:
    """A plain-text DRF token (the first API's, or one made by older tooling) is converted
    on first use: same key, full scope, plain text gone, revocable like any other."""
    from rest_framework.authtoken.models import Token

    legacy = Token.objects.create(user=reviewer)
    client = _client(legacy.key)
    assert client.get("/api/v1/runs/").status_code == HTTPStatus.OK
    assert client.post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO}, format="json").status_code == HTTPStatus.CREATED
    assert not Token.objects.exists()
    converted = ApiToken.objects.get(user=reviewer)
    assert (converted.legacy, converted.scopes) == (True, list(ALL_SCOPES))
    from integrations.tokens import token_revoke

    token_revoke(token=converted)
    assert client.get("/api/v1/runs/").status_code == HTTPStatus.UNAUTHORIZED


def test_the_migration_hashes_first_api_tokens(reviewer: Any) -> None:
    import importlib

    from django.apps import apps
    from rest_framework.authtoken.models import Token

    legacy = Token.objects.create(user=reviewer)
    migration = importlib.import_module("integrations.migrations.0002_hash_first_api_tokens")
    migration.hash_tokens(apps, None)
    assert not Token.objects.exists()
    assert _client(legacy.key).get("/api/v1/runs/").status_code == HTTPStatus.OK
    assert ApiToken.objects.get(user=reviewer).legacy


def test_bearer_works_too(reviewer: Any) -> None:
    from integrations.tokens import token_create

    _, key = token_create(user=reviewer)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/v1/runs/").status_code == HTTPStatus.OK


def _api_views() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                found.append((prefix + str(p.pattern), p.callback))

    walk(get_resolver().url_patterns, "")
    return [(route, callback) for route, callback in found if route.startswith("api/v1/") and hasattr(callback, "cls")]


def test_every_api_view_checks_the_token_scope() -> None:
    from integrations.tokens import TokenScope

    # The OpenAPI schema and its docs page are public, as before.
    views = [(route, cb) for route, cb in _api_views() if route not in ("api/v1/schema/", "api/v1/docs/")]
    assert len(views) > 15
    missing = [route for route, callback in views if not any(isinstance(p, TokenScope) for p in callback.cls().get_permissions())]
    assert missing == []
    # Writing methods name their scope; nothing falls through to "undeclared".
    undeclared = [
        f"{method} {route}" for route, callback in views for method in ("post", "put", "patch", "delete")
        if hasattr(callback.cls, method) and method.upper() not in getattr(callback.cls, "scopes", {})
    ]
    assert undeclared == []
