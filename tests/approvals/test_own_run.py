"""Four eyes (issue 9): with GATEHOUSE_REVIEW_OWN_RUNS off, a reviewer cannot decide the
approvals of runs they started — approve, deny and answer are refused `403 own_run` by the
services (so by the API and the console alike); on (the default), they may."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from rest_framework.test import APIClient

from approvals.models import Approval

pytestmark = pytest.mark.django_db

REVIEWER = ("runs.add_run", "approvals.change_approval")
QUESTIONS = [{"id": "colour", "question": "Which colour?", "options": [{"label": "Red"}, {"label": "Blue"}]}]


def waiting_approval(*, starter: Any, kind: str = "permission") -> Approval:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(
        driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=starter,
        run_policy={"approvals": {"question": "ask"}},
    )
    if kind == "question":
        outcome = gate_request(
            run_id=run.pk, tool="AskUserQuestion", input={"questions": QUESTIONS}, cwd=run.workspace, kind="question",
            subtype="question", presentation={"title": "The agent asks", "questions": QUESTIONS},
        )
    else:
        outcome = gate_request(
            run_id=run.pk, tool="bash", input={"command": "npm run build"}, cwd=run.workspace,
            subtype="command", presentation={"title": "Build", "command": "npm run build"},
        )
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


@pytest.fixture
def people(make_user: Callable[..., Any]) -> tuple[Any, Any]:
    return make_user("bob", superuser=False, perms=REVIEWER), make_user("rita", superuser=False, perms=REVIEWER)


def client(user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(user)
    return api


DECISIONS = [
    ("permission", "approve", {}),
    ("permission", "deny", {"reason": "no"}),
    ("permission", "approve", {"scope": "session"}),
    ("question", "answer", {"answers": {"colour": ["Blue"]}}),
    ("question", "answer", {"decline": True}),
]


@pytest.mark.parametrize(("kind", "verb", "body"), DECISIONS)
def test_with_four_eyes_the_starter_cannot_decide(settings: Any, people: tuple[Any, Any], kind: str, verb: str, body: dict[str, Any]) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob, rita = people
    approval = waiting_approval(starter=bob, kind=kind)
    path = f"/api/v1/approvals/{approval.pk}/{verb}/"
    response = client(bob).post(path, {"hash": approval.hash, **body}, format="json")
    assert response.status_code == HTTPStatus.FORBIDDEN, response.content
    assert response.json()["code"] == "own_run" and f"run #{approval.run_id}" in response.json()["message"]
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING
    assert not approval.run.session.grants.exists()

    # Another reviewer decides it.
    response = client(rita).post(path, {"hash": approval.hash, **body}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["decided_by"] == "rita"
    assert approval.run.session.grants.exists() == (body.get("scope") == "session")


@pytest.mark.parametrize(("kind", "verb", "body"), DECISIONS)
def test_by_default_a_reviewer_may_decide_their_own_run(people: tuple[Any, Any], kind: str, verb: str, body: dict[str, Any]) -> None:
    bob, _ = people
    approval = waiting_approval(starter=bob, kind=kind)
    response = client(bob).post(f"/api/v1/approvals/{approval.pk}/{verb}/", {"hash": approval.hash, **body}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content


def test_four_eyes_holds_for_superusers_and_not_for_runs_nobody_started(settings: Any, make_user: Callable[..., Any]) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    admin = make_user("root")
    own = waiting_approval(starter=admin)
    assert client(admin).post(f"/api/v1/approvals/{own.pk}/approve/", {"hash": own.hash}, format="json").status_code == HTTPStatus.FORBIDDEN
    nobodys = waiting_approval(starter=None)  # started by a command
    assert client(admin).post(f"/api/v1/approvals/{nobodys.pk}/approve/", {"hash": nobodys.hash}, format="json").status_code == HTTPStatus.OK


def test_a_decided_request_still_says_already_decided_first(settings: Any, people: tuple[Any, Any]) -> None:
    """The refusal order does not let the starter learn more than anyone else."""
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob, rita = people
    approval = waiting_approval(starter=bob)
    assert client(rita).post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash}, format="json").status_code == HTTPStatus.OK
    response = client(bob).post(f"/api/v1/approvals/{approval.pk}/deny/", {"hash": approval.hash}, format="json")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "already_resolved")


@pytest.mark.parametrize(("value", "printed"), [(None, "True"), ("0", "False"), ("off", "False"), ("maybe", "ImproperlyConfigured")])
def test_the_setting_reads_the_environment(value: str | None, printed: str) -> None:
    import os
    import subprocess
    import sys

    from tests.processes import ROOT

    env = {k: v for k, v in os.environ.items() if k != "GATEHOUSE_REVIEW_OWN_RUNS"}
    if value is not None:
        env["GATEHOUSE_REVIEW_OWN_RUNS"] = value
    code = (
        "from django.core.exceptions import ImproperlyConfigured\n"
        "try:\n    from project import settings; print(settings.GATEHOUSE_REVIEW_OWN_RUNS)\n"
        "except ImproperlyConfigured as exc:\n    print('ImproperlyConfigured', exc)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == printed, out
