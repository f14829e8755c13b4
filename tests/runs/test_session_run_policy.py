"""The session's run policy is a layer people can set (issue 30, item 5): over the API, in the
console's session panel and in the admin, validated and under the same ceiling and
permission as a run's; the session's next runs that give none of their own run under it."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from runs.models import AgentSession, Run

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def bob(make_user: Callable[..., Any]) -> Any:
    return make_user("bob", superuser=False, perms=("runs.add_run",))


def session_of(user: Any) -> AgentSession:
    response = api(user).post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO}, format="json")
    return AgentSession.objects.get(pk=response.json()["session"])


def test_a_starter_tightens_their_sessions_run_policy_and_the_next_run_runs_under_it(bob: Any) -> None:
    session = session_of(bob)
    wanted = {"approvals": {"timeout_s": 60, "on_timeout": "abort"}}
    response = api(bob).patch(f"/api/v1/sessions/{session.pk}/", {"run_policy": wanted}, format="json")
    assert (response.status_code, response.json()["run_policy"]) == (HTTPStatus.OK, wanted)
    assert Run.objects.get(session=session).activities.filter(event="session.run_policy_changed").exists()
    run = api(bob).post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO, "session": session.pk}, format="json").json()
    assert run["run_policy"]["approvals"]["timeout_s"] == 60 and run["run_policy"]["approvals"]["on_timeout"] == "abort"
    # null clears it: inherit again
    response = api(bob).patch(f"/api/v1/sessions/{session.pk}/", {"run_policy": None}, format="json")
    assert response.json()["run_policy"] is None


def test_loosening_invalid_or_anothers_is_refused_and_nothing_changes(bob: Any, make_user: Callable[..., Any]) -> None:
    session = session_of(bob)
    loose = api(bob).patch(f"/api/v1/sessions/{session.pk}/", {"run_policy": {"approvals": {"permission": "auto-approve"}}}, format="json")
    assert (loose.status_code, loose.json()["code"], loose.json()["field"]) == (403, "policy_override_forbidden", "approvals.permission")
    bad = api(bob).patch(f"/api/v1/sessions/{session.pk}/", {"run_policy": {"sandbox": "nope"}}, format="json")
    assert (bad.status_code, bad.json()["code"]) == (400, "invalid_policy") and "sandbox" in bad.json()["message"]
    keeper = make_user("kate", superuser=False, perms=("runs.add_run", "runs.view_run"))
    foreign = api(keeper).patch(f"/api/v1/sessions/{session.pk}/", {"run_policy": {"approvals": {"timeout_s": 5}}}, format="json")
    assert (foreign.status_code, foreign.json()["code"]) == (403, "foreign_session")
    session.refresh_from_db()
    assert session.run_policy is None
    olga = make_user("olga", superuser=False, perms=("runs.add_run", "runs.override_policy", "runs.change_agentsession"))
    assert api(olga).patch(f"/api/v1/sessions/{session.pk}/", {"run_policy": {"approvals": {"permission": "auto-approve"}}},
                           format="json").status_code == HTTPStatus.OK


def test_the_console_session_panel_sets_it(bob: Any) -> None:
    session = session_of(bob)
    client = Client()
    client.force_login(bob)
    response = client.post(f"/sessions/{session.pk}/modes/", {"from": "session", "run_policy": '{"approvals": {"timeout_s": 30}}'},
                           headers={"HX-Request": "true"})
    assert response.status_code == HTTPStatus.OK and "Saved." in response.content.decode()
    session.refresh_from_db()
    assert session.run_policy == {"approvals": {"timeout_s": 30}}
    response = client.post(f"/sessions/{session.pk}/modes/", {"from": "session", "run_policy": '{"approvals": {"timeout_s": -1}}'},
                           headers={"HX-Request": "true"})
    assert "loosens the administrator" in response.content.decode()
    response = client.post(f"/sessions/{session.pk}/modes/", {"from": "session", "run_policy": "{not json"}, headers={"HX-Request": "true"})
    assert "Run policy: Not valid JSON" in response.content.decode()
    session.refresh_from_db()
    assert session.run_policy == {"approvals": {"timeout_s": 30}}


def test_the_admin_edits_it_through_the_same_checks(bob: Any, make_user: Callable[..., Any]) -> None:
    session = session_of(bob)
    admin = Client()
    admin.force_login(make_user("root"))
    url = f"/admin/runs/agentsession/{session.pk}/change/"
    assert admin.post(url, {"run_policy": '{"approvals": {"timeout_s": 30}}'}).status_code == HTTPStatus.FOUND
    session.refresh_from_db()
    assert session.run_policy == {"approvals": {"timeout_s": 30}}
    response = admin.post(url, {"run_policy": '{"sandbox": "nope"}'})
    assert response.status_code == HTTPStatus.OK and "sandbox" in response.content.decode()
    session.refresh_from_db()
    assert session.run_policy == {"approvals": {"timeout_s": 30}}
