"""Bad input at the API gets a 400 that names the field, and nothing is stored."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from runs.models import AgentSession, Run

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"driver": "nope", "scenario": {"steps": [{"message": "hi"}]}}, "driver"),
        ({"driver": "scripted", "scenario": {"steps": [{"message": "hi"}]}, "colour": "red"}, "colour"),
        ({"driver": "scripted", "prompt": 5, "scenario": {"steps": [{"message": "hi"}]}}, "prompt"),
        ({"driver": "scripted", "scenario": {"steps": []}}, "scenario.steps"),
        ({"driver": "scripted", "scenario": {"steps": [{"tool": "bash", "input": {}}]}}, "scenario.steps[0].input.command"),
        ({"driver": "scripted", "scenario": {"steps": [{"tool": "bash", "input": {"command": 1}}]}}, "scenario.steps[0].input.command"),
        ({"driver": "scripted", "scenario": {"steps": [{"message": "a", "plan": "b"}]}}, "scenario.steps[0]"),
        ({"driver": "scripted"}, "scenario"),
        ({"driver": "scripted", "scenario": {"steps": [{"message": "hi"}]}, "workspace": "/no/such/dir"}, "workspace"),
    ],
)
def test_bad_run_is_refused_naming_the_field(api: Any, body: dict[str, Any], field: str) -> None:
    response = api.post("/api/v1/runs/", body, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    assert response.json()["field"] == field
    assert field.split(".")[0].split("[")[0] in response.json()["message"]
    assert not Run.objects.exists() and not AgentSession.objects.exists()


def test_malformed_json_is_refused(api: Any) -> None:
    response = api.generic("POST", "/api/v1/runs/", '{"driver": "scripted", "driver": "x"}', content_type="application/json")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert "invalid JSON" in response.json()["message"]
    assert not Run.objects.exists()


def test_api_needs_authentication(db: Any) -> None:
    from rest_framework.test import APIClient

    response = APIClient().get("/api/v1/runs/")
    assert response.status_code in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN)


def test_token_from_the_management_command_authenticates(reviewer: Any) -> None:
    from io import StringIO

    from django.core.management import call_command
    from rest_framework.test import APIClient

    out = StringIO()
    call_command("create_api_token", reviewer.username, stdout=out)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {out.getvalue().strip()}")
    assert client.get("/api/v1/runs/").status_code == HTTPStatus.OK


def test_unknown_approval_is_unavailable(api: Any) -> None:
    response = api.post("/api/v1/approvals/999/approve/", format="json")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json()["code"] == "unavailable"


def test_a_run_policy_the_driver_does_not_model_is_refused_before_anything_starts(api: Any) -> None:
    response = api.post(
        "/api/v1/runs/", {"driver": "claude-code", "prompt": "hi", "run_policy": {"browser": "allow"}}, format="json"
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST
    body = response.json()
    assert (body["code"], body["driver"], body["dimension"], body["value"]) == (
        "policy_capability_unsupported", "claude-code", "browser", "allow",
    )
    assert not Run.objects.exists() and not AgentSession.objects.exists()


def test_an_approval_mode_the_driver_does_not_model_is_refused(api: Any) -> None:
    response = api.post(
        "/api/v1/runs/",
        {"driver": "codex", "prompt": "hi", "run_policy": {"approvals": {"plan_review": "auto-approve"}}},
        format="json",
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST
    body = response.json()
    assert (body["code"], body["driver"], body["kind"], body["mode"]) == (
        "human_decision_mode_unsupported", "codex", "plan_review", "auto-approve",
    )


def test_an_invalid_run_policy_names_the_field_and_value(api: Any) -> None:
    response = api.post(
        "/api/v1/runs/",
        {"driver": "scripted", "scenario": {"steps": [{"message": "hi"}]}, "run_policy": {"approvals": {"question": "auto-approve"}}},
        format="json",
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST
    body = response.json()
    assert (body["code"], body["field"], body["value"]) == ("invalid_policy", "approvals.question", "auto-approve")
    assert not Run.objects.exists()


def test_activities_are_append_only(reviewer: Any) -> None:
    from runs.models import Activity
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=reviewer)
    activity = Activity.objects.get(run=run, event="run.created")
    activity.payload = {"rewritten": True}
    with pytest.raises(ValueError, match="append-only"):
        activity.save()


def test_a_workspace_outside_the_allowed_roots_is_refused(api: Any, settings: Any, tmp_path: Any) -> None:
    allowed = tmp_path / "allowed"
    (allowed / "project").mkdir(parents=True)
    settings.GATEHOUSE_WORKSPACE_ROOTS = [allowed.resolve()]
    body = {"driver": "scripted", "scenario": {"steps": [{"message": "hi"}]}}
    outside = api.post("/api/v1/runs/", {**body, "workspace": str(tmp_path)}, format="json")
    assert outside.status_code == HTTPStatus.BAD_REQUEST
    assert (outside.json()["code"], outside.json()["field"]) == ("invalid_workspace", "workspace")
    # `..` cannot climb out: the path is resolved first.
    climbing = api.post("/api/v1/runs/", {**body, "workspace": str(allowed / "project" / ".." / "..")}, format="json")
    assert climbing.status_code == HTTPStatus.BAD_REQUEST
    inside = api.post("/api/v1/runs/", {**body, "workspace": str(allowed / "project")}, format="json")
    assert inside.status_code == HTTPStatus.CREATED
