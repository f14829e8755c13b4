"""A scope refusal names the scope as a token holder writes it (`hooks`), never `Scope.HOOKS`."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest
from django.test import Client
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db(transaction=True)

HOOK_INPUT = {"session_id": "s1", "hook_event_name": "PreToolUse", "cwd": "/w", "tool_name": "Bash",
              "tool_input": {"command": "ls"}, "tool_use_id": "t1"}


@pytest.mark.parametrize("path", ["pre-tool-use", "post-tool-use", "session-end"])
def test_the_hook_gateway_names_the_missing_scope_by_its_value(token_client: Callable[..., APIClient], path: str) -> None:
    key = token_client("read").token_key  # type: ignore[attr-defined]
    response = Client().post(f"/api/v1/hooks/claude-code/{path}/", HOOK_INPUT, content_type="application/json",
                             HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == HTTPStatus.FORBIDDEN
    body = response.json()
    assert (body["code"], body["scope"]) == ("insufficient_scope", "hooks")
    assert "the scope 'hooks'" in body["message"] and "Scope." not in body["message"]


def test_a_read_refusal_names_the_scope_by_its_value(token_client: Callable[..., APIClient]) -> None:
    response = token_client("hooks").get("/api/v1/runs/")
    assert response.status_code == HTTPStatus.FORBIDDEN
    message = response.json()["message"]
    assert "the scope 'read'" in message and "Scope." not in message, message


def test_a_declared_scope_refusal_names_the_scope_by_its_value(token_client: Callable[..., APIClient]) -> None:
    response = token_client("read").post("/api/v1/webhooks/", {"url": "https://example.com/h", "events": ["run.finished"]},
                                         format="json")
    assert response.status_code == HTTPStatus.FORBIDDEN
    message = response.json()["message"]
    assert "the scope 'webhooks:manage'" in message and "Scope." not in message, message
