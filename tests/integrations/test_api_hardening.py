"""The API integrators build on: decisions carry the hash, retries are idempotent, one
error shape everywhere (a malformed id too), rate limits, and discovery endpoints."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from approvals.models import Approval
from integrations.models import IdempotencyKey
from runs.models import AgentSession, Run

# Asked under the default policy, inside the sandbox floor or not: a remote mutation.
ASKED = "git push origin main"

pytestmark = pytest.mark.django_db

RUN = {"driver": "scripted", "prompt": "p", "scenario": {"steps": [{"tool": "bash", "input": {"command": ASKED}}]}}


@pytest.fixture
def approval(db: Any) -> Approval:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario=RUN["scenario"], run_policy={"approvals": {"timeout_s": -1}})
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": ASKED}, cwd=run.workspace, subtype="command")
    return Approval.objects.get(pk=outcome.approval_id)


# --- hash_required ----------------------------------------------------------------------------


@pytest.mark.parametrize("verb,body", [("approve", {}), ("deny", {"reason": "no"}), ("answer", {"decline": True}), ("approve", {"hash": ""})])
def test_a_decision_without_the_hash_is_refused(api: APIClient, approval: Approval, verb: str, body: dict[str, Any]) -> None:
    response = api.post(f"/api/v1/approvals/{approval.pk}/{verb}/", body, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert (response.json()["code"], response.json()["field"]) == ("hash_required", "hash")
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_decision_with_the_hash_is_taken(api: APIClient, approval: Approval) -> None:
    response = api.post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content


# --- Idempotency-Key ----------------------------------------------------------------------------


def test_a_retried_run_creation_returns_the_first_response_and_starts_one_run(api: APIClient) -> None:
    first = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="ci-build-42")
    again = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="ci-build-42")
    assert first.status_code == again.status_code == HTTPStatus.CREATED
    assert json.loads(first.content) == json.loads(again.content)
    assert again["Idempotent-Replayed"] == "true"
    assert Run.objects.count() == 1 and AgentSession.objects.count() == 1


def test_the_same_key_with_another_body_is_refused(api: APIClient) -> None:
    assert api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="k1").status_code == HTTPStatus.CREATED
    other = api.post("/api/v1/runs/", {**RUN, "prompt": "other"}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert other.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert (other.json()["code"], other.json()["field"]) == ("idempotency_key_reused", "Idempotency-Key")
    assert Run.objects.count() == 1


def test_the_same_key_on_another_endpoint_is_refused(api: APIClient, approval: Approval) -> None:
    api.post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    response = api.post(f"/api/v1/approvals/{approval.pk}/deny/", {"hash": approval.hash}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_a_retried_decision_is_not_refused_as_already_decided(api: APIClient, approval: Approval) -> None:
    """Without the key the retry would get 409 already_resolved; with it, the first answer."""
    body = {"hash": approval.hash}
    first = api.post(f"/api/v1/approvals/{approval.pk}/approve/", body, format="json", HTTP_IDEMPOTENCY_KEY="d1")
    again = api.post(f"/api/v1/approvals/{approval.pk}/approve/", body, format="json", HTTP_IDEMPOTENCY_KEY="d1")
    assert first.status_code == again.status_code == HTTPStatus.OK
    assert first.json() == again.json()
    from runs.models import Activity

    assert Activity.objects.filter(run_id=approval.run_id, event="approval.resolved").count() == 1
    plain = api.post(f"/api/v1/approvals/{approval.pk}/approve/", body, format="json")
    assert plain.status_code == HTTPStatus.CONFLICT


def test_a_refusal_is_replayed_too(api: APIClient) -> None:
    bad = {**RUN, "driver": "nope"}
    first = api.post("/api/v1/runs/", bad, format="json", HTTP_IDEMPOTENCY_KEY="bad-1")
    again = api.post("/api/v1/runs/", bad, format="json", HTTP_IDEMPOTENCY_KEY="bad-1")
    assert first.status_code == again.status_code == HTTPStatus.BAD_REQUEST
    assert first.json() == again.json() and again["Idempotent-Replayed"] == "true"


def test_keys_belong_to_their_user(api: APIClient, make_user: Callable[..., Any]) -> None:
    other = APIClient()
    other.force_authenticate(make_user("bob"))
    assert api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="shared").status_code == HTTPStatus.CREATED
    assert other.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="shared").status_code == HTTPStatus.CREATED
    assert Run.objects.count() == 2


def test_keys_expire_after_a_day(api: APIClient) -> None:
    from integrations.idempotency import idempotency_purge

    assert api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="old").status_code == HTTPStatus.CREATED
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=25))
    assert api.post("/api/v1/runs/", {**RUN, "prompt": "new"}, format="json", HTTP_IDEMPOTENCY_KEY="old").status_code == HTTPStatus.CREATED
    assert Run.objects.count() == 2
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=25))
    assert idempotency_purge() == 1


def test_a_key_whose_first_request_is_still_running_is_a_conflict(api: APIClient, reviewer: Any) -> None:
    first = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    # As if the first request had not answered yet: its row has no response.
    IdempotencyKey.objects.filter(key="busy").update(status_code=None, body=None)
    response = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="busy")
    assert (first.status_code, response.status_code) == (HTTPStatus.CREATED, HTTPStatus.CONFLICT)
    assert response.json()["code"] == "idempotency_in_progress"
    assert Run.objects.count() == 1


def test_a_malformed_key_is_refused(api: APIClient) -> None:
    response = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="has space")
    assert (response.status_code, response.json()["field"]) == (HTTPStatus.BAD_REQUEST, "Idempotency-Key")
    assert not Run.objects.exists()


# --- one error shape ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/api/v1/runs/null,null/"),
        ("GET", "/api/v1/runs/abc/activities/"),
        ("POST", "/api/v1/approvals/null/approve/"),
        ("GET", "/api/v1/sessions/-1/"),
        ("DELETE", "/api/v1/grants/1.5/"),
        ("GET", "/api/v1/nothing-here/"),
        ("GET", "/api/v2/runs/"),
    ],
)
def test_a_path_that_names_nothing_is_the_json_404(api: APIClient, method: str, path: str) -> None:
    response = api.generic(method, path)
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "not_found" and path in response.json()["message"]


def test_unauthenticated_is_the_json_shape(db: Any) -> None:
    response = APIClient().get("/api/v1/runs/")
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert set(response.json()) == {"code", "message"}


# --- rate limits ----------------------------------------------------------------------------------


def test_token_clients_are_rate_limited_with_retry_after(settings: Any, token_client: Callable[..., APIClient]) -> None:
    from django.core.cache import cache

    cache.clear()
    settings.GATEHOUSE_API_RATE = "3/m"
    client = token_client()
    assert [client.get("/api/v1/drivers/").status_code for _ in range(3)] == [HTTPStatus.OK] * 3
    refused = client.get("/api/v1/drivers/")
    assert refused.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert refused.json()["code"] == "throttled"
    assert 0 < int(refused["Retry-After"]) <= 60
    assert token_client().get("/api/v1/drivers/").status_code == HTTPStatus.OK  # per token
    settings.GATEHOUSE_API_RATE = ""
    assert client.get("/api/v1/drivers/").status_code == HTTPStatus.OK
    cache.clear()


def test_the_default_rate_leaves_room_for_polling(settings: Any, token_client: Callable[..., APIClient]) -> None:
    from django.core.cache import cache

    cache.clear()
    assert settings.GATEHOUSE_API_RATE == "100/s"
    client = token_client()
    assert all(client.get("/api/v1/runs/?limit=1").status_code == HTTPStatus.OK for _ in range(30))
    cache.clear()


# --- discovery ------------------------------------------------------------------------------------


def test_drivers_are_listed_with_what_they_see(api: APIClient) -> None:
    drivers = {d["name"]: d for d in api.get("/api/v1/drivers/").json()}
    assert set(drivers) == {"scripted", "claude-code", "codex", "acp", "opencode", "claude-code-hook", "codex-hook"}
    assert drivers["codex-hook"]["external"] is True
    hook = drivers["claude-code-hook"]
    assert hook["external"] is True and hook["approval_modes"] == {"permission": ["ask", "auto-approve", "auto-deny"]}
    assert hook["sees"] and hook["cannot_see"]
    assert drivers["claude-code"]["external"] is False


def test_sessions_are_listed_and_shown(api: APIClient, approval: Approval) -> None:
    body = api.get("/api/v1/sessions/").json()
    assert body["count"] == 1
    session_id = body["results"][0]["id"]
    assert api.get(f"/api/v1/sessions/{session_id}/").json()["id"] == session_id
    assert api.get(f"/api/v1/sessions/{session_id}/grants/").json() == []
