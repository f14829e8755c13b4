"""The API integrators build on: decisions carry the hash, retries are idempotent, one
error shape everywhere (a malformed id too), rate limits, and discovery endpoints."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
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


def test_a_first_request_that_crashed_keeps_no_key_and_its_retry_does_the_work(reviewer: Any, settings: Any, tmp_path: Any) -> None:
    client = APIClient()
    client.force_authenticate(reviewer)
    client.raise_request_exception = False  # the 500 the server answers, as a client sees it
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("")
    settings.GATEHOUSE_WORKSPACES_DIR = in_the_way / "workspaces"  # cannot be made: the run's workspace fails
    first = client.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="crash-1")
    assert (first.status_code, first.json()["code"]) == (HTTPStatus.INTERNAL_SERVER_ERROR, "server_error")
    assert not Run.objects.exists() and not IdempotencyKey.objects.exists()

    settings.GATEHOUSE_WORKSPACES_DIR = tmp_path / "workspaces"
    retry = client.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="crash-1")
    assert retry.status_code == HTTPStatus.CREATED, retry.content
    assert "Idempotent-Replayed" not in retry
    again = client.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="crash-1")
    assert (again.status_code, again["Idempotent-Replayed"], again.json()) == (HTTPStatus.CREATED, "true", retry.json())
    assert Run.objects.count() == 1


def test_a_first_request_answered_with_a_5xx_keeps_no_key_and_its_retry_does_the_work(api: APIClient, monkeypatch: Any) -> None:
    from rest_framework.exceptions import APIException

    from runs import api as runs_api

    class Unavailable(APIException):
        status_code = HTTPStatus.SERVICE_UNAVAILABLE
        default_detail = "try again later"

    real = runs_api.run_create
    failures = iter([Unavailable()])

    def failing_once(**kwargs: Any) -> Any:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return real(**kwargs)

    monkeypatch.setattr(runs_api, "run_create", failing_once)
    first = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="busy-server")
    assert first.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert not IdempotencyKey.objects.exists()
    retry = api.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY="busy-server")
    assert retry.status_code == HTTPStatus.CREATED and "Idempotent-Replayed" not in retry
    assert Run.objects.count() == 1


def _post_in_thread(reviewer: Any, key: str, results: list[Any], barrier: threading.Barrier | None = None) -> threading.Thread:
    """One API request on a thread of its own (its own database connection), as a second
    client's would be."""

    def post() -> None:
        client = APIClient()
        client.force_authenticate(reviewer)
        try:
            if barrier is not None:
                barrier.wait(30)
            results.append(client.post("/api/v1/runs/", RUN, format="json", HTTP_IDEMPOTENCY_KEY=key))
        finally:
            connection.close()

    thread = threading.Thread(target=post)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_a_retry_while_the_first_request_is_at_work_is_told_so_and_the_work_is_done_once(reviewer: Any, monkeypatch: Any) -> None:
    from runs import api as runs_api

    real = runs_api.run_create
    at_work, may_finish = threading.Event(), threading.Event()
    calls: list[int] = []

    def held(**kwargs: Any) -> Any:  # the first request, held inside the view until the retry is answered
        calls.append(1)
        at_work.set()
        assert may_finish.wait(30)
        return real(**kwargs)

    monkeypatch.setattr(runs_api, "run_create", held)
    first: list[Any] = []
    second: list[Any] = []
    first_thread = _post_in_thread(reviewer, "together", first)
    assert at_work.wait(30)
    _post_in_thread(reviewer, "together", second).join(30)
    may_finish.set()
    first_thread.join(30)

    [refused] = second
    assert (refused.status_code, refused.json()["code"]) == (HTTPStatus.CONFLICT, "idempotency_in_progress")
    [created] = first
    assert created.status_code == HTTPStatus.CREATED and "Idempotent-Replayed" not in created
    third: list[Any] = []
    _post_in_thread(reviewer, "together", third).join(30)
    assert (third[0].status_code, third[0]["Idempotent-Replayed"], third[0].json()) == (HTTPStatus.CREATED, "true", created.json())
    assert len(calls) == 1 and Run.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_start_one_run(reviewer: Any) -> None:
    clients = 6
    barrier = threading.Barrier(clients)
    results: list[Any] = []
    for thread in [_post_in_thread(reviewer, "burst", results, barrier) for _ in range(clients)]:
        thread.join(60)
    assert len(results) == clients
    fresh = [r for r in results if r.status_code == HTTPStatus.CREATED and "Idempotent-Replayed" not in r]
    assert len(fresh) == 1, [(r.status_code, r.content) for r in results]
    for response in results:
        if response is fresh[0]:
            continue
        if response.status_code == HTTPStatus.CONFLICT:
            assert response.json()["code"] == "idempotency_in_progress"
        else:
            assert (response.status_code, response["Idempotent-Replayed"], response.json()) == (
                HTTPStatus.CREATED, "true", fresh[0].json())
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
