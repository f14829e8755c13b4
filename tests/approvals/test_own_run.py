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

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("standard_review_default")]

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


# --- Four eyes on every path (issue 34): grants and modes are decisions too -------------------


def test_under_four_eyes_a_grant_never_answers_its_makers_own_runs(settings: Any, people: tuple[Any, Any]) -> None:
    """Rita grants "always allow" on Bob's run in a session where her own run works too: the
    grant answers Bob's requests, never Rita's (it would be her deciding her own run)."""
    from approvals.gate import gate_request
    from runs.services import run_create

    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob, rita = people
    first = waiting_approval(starter=rita)  # Rita's session
    session = first.run.session
    bobs = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=None, session=session)
    bobs.created_by = bob
    bobs.save(update_fields=["created_by"])
    asked = gate_request(run_id=bobs.pk, tool="bash", input={"command": "npm run build"}, cwd=bobs.workspace,
                         subtype="command", presentation={"title": "Build", "command": "npm run build"})
    response = client(rita).post(f"/api/v1/approvals/{asked.approval_id}/approve/",
                                 {"hash": Approval.objects.get(pk=asked.approval_id).hash, "scope": "session"}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
    # Bob's next identical request is answered by the grant ...
    again = gate_request(run_id=bobs.pk, tool="bash", input={"command": "npm run build"}, cwd=bobs.workspace, subtype="command")
    assert (again.outcome, again.decided_by) == ("allow", "grant")
    # ... Rita's own run's is not: a person must decide it
    hers = gate_request(run_id=first.run_id, tool="bash", input={"command": "npm run build"}, cwd=first.run.workspace, subtype="command")
    assert hers.outcome == "wait"
    # without four eyes the grant answers both
    settings.GATEHOUSE_REVIEW_OWN_RUNS = True
    hers = gate_request(run_id=first.run_id, tool="bash", input={"command": "npm run build"}, cwd=first.run.workspace, subtype="command")
    assert (hers.outcome, hers.decided_by) == ("allow", "grant")


def test_under_four_eyes_a_mode_the_starter_set_approves_nothing_of_their_runs(
    settings: Any, make_user: Callable[..., Any]
) -> None:
    """auto-accept-edits approves the edits a policy asks about: a decision. Set by the run's
    starter under four eyes it approves nothing of their runs; set by another person it does."""
    from approvals.gate import gate_request
    from runs.services import run_create

    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob = make_user("bob", superuser=False, perms=("runs.add_run",))
    rita = make_user("rita", superuser=False, perms=("runs.add_run", "runs.change_agentsession"))
    # "Read-only review" asks about every edit (stricter than the default: Bob may name it)
    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=bob, policy_name="Read-only review")
    edit = {"file_path": "notes.md", "content": "x"}

    def write() -> Any:
        return gate_request(run_id=run.pk, tool="write", input=edit, cwd=run.workspace, subtype="file-change")

    assert write().outcome == "wait"
    assert client(bob).patch(f"/api/v1/sessions/{run.session_id}/", {"runtime_mode": "auto-accept-edits"},
                             format="json").status_code == HTTPStatus.OK
    assert write().outcome == "wait"  # Bob's own mode: not his decision to make on his run
    for mode in ("approval-required", "auto-accept-edits"):  # Rita sets it (the second change is hers)
        assert client(rita).patch(f"/api/v1/sessions/{run.session_id}/", {"runtime_mode": mode},
                                  format="json").status_code == HTTPStatus.OK
    assert (write().outcome, write().decided_by) == ("allow", "mode")
    # without four eyes, Bob's own mode approves his edits as before
    settings.GATEHOUSE_REVIEW_OWN_RUNS = True
    client(bob).patch(f"/api/v1/sessions/{run.session_id}/", {"runtime_mode": "approval-required"}, format="json")
    client(bob).patch(f"/api/v1/sessions/{run.session_id}/", {"runtime_mode": "auto-accept-edits"}, format="json")
    assert (write().outcome, write().decided_by) == ("allow", "mode")


def test_changing_another_persons_session_needs_the_permission(people: tuple[Any, Any], make_user: Callable[..., Any]) -> None:
    bob, rita = people
    approval = waiting_approval(starter=bob)
    response = client(rita).patch(f"/api/v1/sessions/{approval.run.session_id}/", {"runtime_mode": "auto-accept-edits"}, format="json")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.FORBIDDEN, "foreign_session")
    approval.run.session.refresh_from_db()
    assert approval.run.session.runtime_mode == "approval-required"
