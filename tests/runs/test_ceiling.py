"""Who may loosen a policy (issue 9): the administrator's run policy is a ceiling.

A user with only `runs.add_run` may start runs that tighten it; loosening it, joining
another person's session, and the runtime modes that approve on their own need
`runs.override_policy`. Refusals are 403 naming the field, and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from rest_framework.test import APIClient

from runs.models import AgentSession, Run

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}
STARTER = ("runs.add_run",)
OVERRIDER = ("runs.add_run", "runs.override_policy")


@pytest.fixture
def client_for(make_user: Callable[..., Any]) -> Callable[..., APIClient]:
    def make(username: str = "bob", perms: tuple[str, ...] = STARTER) -> APIClient:
        client = APIClient()
        client.user = make_user(username, superuser=False, perms=perms)  # type: ignore[attr-defined]
        client.force_authenticate(client.user)  # type: ignore[attr-defined]
        return client

    return make


@pytest.fixture
def bob(client_for: Callable[..., APIClient]) -> APIClient:
    """May start runs, may not loosen anything."""
    return client_for("bob")


@pytest.fixture
def olga(client_for: Callable[..., APIClient]) -> APIClient:
    """May start runs and loosen the policy (a run without the sandbox floor also needs
    `runs.run_unsandboxed`: tests/runs/test_floor.py)."""
    return client_for("olga", OVERRIDER + ("runs.run_unsandboxed",))


def _policy(name: str, run_policy: dict[str, Any] | None) -> str:
    """A policy whose rules are the default policy's (so naming it loosens nothing by its
    rules: issue 34) and whose run policy is the ceiling under test."""
    from approvals.models import Policy
    from approvals.selectors import policy_for_run
    from approvals.services import policy_save

    policy_save(policy=Policy(name=name, document=policy_for_run("")[1], run_policy=run_policy))
    return name


def start(client: APIClient, driver: str = "scripted", **body: Any) -> Any:
    payload = {"driver": driver, **({"scenario": SCENARIO} if driver == "scripted" else {"prompt": "p"}), **body}
    return client.post("/api/v1/runs/", payload, format="json")


def assert_forbidden(response: Any, field: str, code: str = "policy_override_forbidden") -> dict[str, Any]:
    assert response.status_code == HTTPStatus.FORBIDDEN, response.content
    body = response.json()
    assert (body["code"], body["field"]) == (code, field), body
    assert field in body["message"].lower() and "runs.override_policy" in body["message"], body
    return body


# (driver, the rule policy's run policy (the ceiling; None = built-in defaults), requested, the field refused)
LOOSENINGS = [
    ("scripted", None, {"approvals": {"permission": "auto-approve"}}, "approvals.permission"),
    ("scripted", None, {"approvals": {"plan_review": "auto-approve"}}, "approvals.plan_review"),
    ("scripted", {"approvals": {"permission": "auto-deny"}}, {"approvals": {"permission": "ask"}}, "approvals.permission"),
    ("scripted", {"approvals": {"timeout_s": 30}}, {"approvals": {"timeout_s": 3600}}, "approvals.timeout_s"),
    ("scripted", None, {"approvals": {"timeout_s": 7200}}, "approvals.timeout_s"),
    ("scripted", None, {"approvals": {"timeout_s": -1}}, "approvals.timeout_s"),
    ("scripted", {"approvals": {"on_reject": "abort"}}, {"approvals": {"on_reject": "continue"}}, "approvals.on_reject"),
    ("scripted", {"approvals": {"on_timeout": "abort"}}, {"approvals": {"on_timeout": "retry"}}, "approvals.on_timeout"),
    ("scripted", {"approvals": {"on_reject": "retry", "max_retries": 1}},
     {"approvals": {"on_reject": "retry", "max_retries": 5}}, "approvals.max_retries"),
    ("scripted", None, {"sandbox": "unrestricted"}, "sandbox"),
    ("codex", {"sandbox": "read-only"}, {"sandbox": "workspace-write"}, "sandbox"),
    ("codex", None, {"web_search": "allow"}, "web_search"),
    ("codex", {"web_search": "deny"}, {"web_search": "allow"}, "web_search"),
    ("claude-code", None, {"browser": "deny", "web_search": "allow"}, "web_search"),
]


@pytest.mark.parametrize(("driver", "ceiling", "requested", "field"), LOOSENINGS)
def test_a_loosening_run_policy_needs_the_override_permission(
    bob: APIClient, olga: APIClient, driver: str, ceiling: Any, requested: dict[str, Any], field: str
) -> None:
    policy = _policy("ceiling", ceiling)
    assert_forbidden(start(bob, driver, run_policy=requested, policy=policy), field)
    assert not Run.objects.exists() and not AgentSession.objects.exists()

    response = start(olga, driver, run_policy=requested, policy=policy)
    assert response.status_code == HTTPStatus.CREATED, response.content


def test_every_loosened_field_is_listed(bob: APIClient) -> None:
    policy = _policy("aborts", {"approvals": {"on_reject": "abort"}})
    requested = {"approvals": {"permission": "auto-approve", "timeout_s": -1, "on_reject": "continue"}}
    body = assert_forbidden(start(bob, run_policy=requested, policy=policy), "approvals.permission")
    assert body["fields"] == ["approvals.permission", "approvals.timeout_s", "approvals.on_reject"]


def test_an_omitted_field_is_the_built_in_default_not_the_ceiling(bob: APIClient) -> None:
    """The nearer policy replaces the farther whole: leaving timeout_s out means the built-in 3600 s."""
    policy = _policy("quick", {"approvals": {"timeout_s": 10}})
    body = assert_forbidden(start(bob, run_policy={"approvals": {"question": "ask"}}, policy=policy), "approvals.timeout_s")
    assert "not given" in body["message"] and "3600 s" in body["message"] and "10 s" in body["message"]

    response = start(bob, run_policy={"approvals": {"question": "ask", "timeout_s": 10}}, policy=policy)
    assert response.status_code == HTTPStatus.CREATED, response.content


@pytest.mark.parametrize(
    ("driver", "requested"),
    [
        ("scripted", {}),
        ("scripted", {"approvals": {"permission": "auto-deny", "plan_review": "auto-deny", "timeout_s": 5}}),
        ("scripted", {"approvals": {"question": "ask", "on_timeout": "abort", "on_reject": "abort", "max_retries": 0}}),
        ("codex", {"sandbox": "read-only", "web_search": "deny"}),
        ("claude-code", {"web_search": "deny", "browser": "deny"}),
    ],
)
def test_tightening_needs_no_permission(bob: APIClient, driver: str, requested: dict[str, Any]) -> None:
    response = start(bob, driver, run_policy=requested)
    assert response.status_code == HTTPStatus.CREATED, response.content


def _make_available(name: str, client: APIClient) -> None:
    """An administrator makes a policy looser than the default available to a user (issue 34)."""
    from approvals.models import Policy

    Policy.objects.get(name=name).available_to_users.add(client.user)  # type: ignore[attr-defined]


def test_no_run_policy_runs_under_the_ceiling_itself(bob: APIClient) -> None:
    policy = _policy("loose", {"approvals": {"permission": "auto-approve", "timeout_s": -1}})
    # A looser ceiling is a looser policy: naming it needs it made available (issue 34).
    assert_forbidden(start(bob, policy=policy), "policy")
    _make_available(policy, bob)
    response = start(bob, policy=policy)
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert response.json()["run_policy"]["approvals"]["permission"] == "auto-approve"


def test_a_looser_ceiling_lets_a_run_ask_for_what_it_allows(bob: APIClient) -> None:
    policy = _policy("loose", {"sandbox": "unrestricted", "approvals": {"permission": "auto-approve", "timeout_s": 600}})
    _make_available(policy, bob)
    response = start(bob, run_policy={"approvals": {"permission": "auto-approve", "timeout_s": 600}}, policy=policy)
    assert response.status_code == HTTPStatus.CREATED, response.content


def test_the_server_default_run_policy_is_the_ceiling_when_the_policy_has_none(bob: APIClient, settings: Any) -> None:
    settings.GATEHOUSE_DEFAULT_RUN_POLICY = {"approvals": {"timeout_s": 600}}
    assert start(bob, run_policy={"approvals": {"timeout_s": 600}}).status_code == HTTPStatus.CREATED
    assert_forbidden(start(bob, run_policy={"approvals": {"timeout_s": 601}}), "approvals.timeout_s")


def test_a_loosening_session_run_policy_is_refused_too(bob: APIClient) -> None:
    from runs.services import session_create

    session = session_create(user=bob.user, run_policy={"approvals": {"permission": "auto-approve"}})  # type: ignore[attr-defined]
    body = assert_forbidden(start(bob, session=session.pk), "approvals.permission")
    assert body["message"].startswith("The session's run policy")
    # A run policy of its own replaces the session's whole, and is what is checked.
    assert start(bob, session=session.pk, run_policy={"approvals": {"permission": "ask"}}).status_code == HTTPStatus.CREATED


# --- sessions ------------------------------------------------------------------------------------


def test_a_run_may_join_only_a_session_its_starter_created(bob: APIClient, olga: APIClient, client_for: Any) -> None:
    from runs.services import session_create

    first = start(bob)
    assert first.status_code == HTTPStatus.CREATED
    own = first.json()["session"]
    assert start(bob, session=own).status_code == HTTPStatus.CREATED

    # Another starter does not even see the session (issue 34): as if it did not exist.
    carol = client_for("carol")
    response = start(carol, session=own)
    assert response.status_code == HTTPStatus.BAD_REQUEST and response.json()["message"] == f"session: No session {own}."
    # Who sees every run (runs.view_run) but may not override: refused, naming why.
    vera = client_for("vera", ("runs.add_run", "runs.view_run"))
    assert_forbidden(start(vera, session=own), "session", code="foreign_session")
    nobodys = session_create(title="made by a command")
    assert start(bob, session=nobodys.pk).status_code == HTTPStatus.BAD_REQUEST
    assert_forbidden(start(vera, session=nobodys.pk), "session", code="foreign_session")
    assert Run.objects.filter(session_id=own).count() == 2 and not Run.objects.filter(session=nobodys).exists()

    assert start(olga, session=own).status_code == HTTPStatus.CREATED
    assert start(olga, session=nobodys.pk).status_code == HTTPStatus.CREATED


@pytest.mark.parametrize("mode", ["auto", "full-access"])
def test_a_run_cannot_start_in_a_session_that_approves_on_its_own(bob: APIClient, olga: APIClient, mode: str) -> None:
    from runs.services import session_set_modes

    session_id = start(bob).json()["session"]
    session_set_modes(session=AgentSession.objects.get(pk=session_id), runtime_mode=mode)  # an administrator's tool
    assert_forbidden(start(bob, session=session_id), "runtime_mode")
    assert Run.objects.filter(session_id=session_id).count() == 1
    # olga may join it (she may override the policy, and so may join any session).
    assert start(olga, session=session_id).status_code == HTTPStatus.CREATED


@pytest.fixture
def modes_clients(client_for: Callable[..., APIClient]) -> tuple[APIClient, APIClient]:
    change = ("runs.add_run", "runs.change_agentsession")
    return client_for("bob", change), client_for("olga", (*change, "runs.override_policy"))


@pytest.mark.parametrize("mode", ["auto", "full-access"])
def test_switching_a_session_to_a_mode_that_approves_needs_the_permission(
    modes_clients: tuple[APIClient, APIClient], mode: str
) -> None:
    bob, olga = modes_clients
    session_id = start(bob).json()["session"]
    response = bob.patch(f"/api/v1/sessions/{session_id}/", {"runtime_mode": mode}, format="json")
    assert_forbidden(response, "runtime_mode")
    assert AgentSession.objects.get(pk=session_id).runtime_mode == "approval-required"

    response = olga.patch(f"/api/v1/sessions/{session_id}/", {"runtime_mode": mode}, format="json")
    assert response.status_code == HTTPStatus.OK and response.json()["runtime_mode"] == mode
    # Leaving it (tightening) needs nothing; a no-op repeat of the current mode changes nothing.
    assert bob.patch(f"/api/v1/sessions/{session_id}/", {"runtime_mode": mode}, format="json").status_code == HTTPStatus.OK
    response = bob.patch(f"/api/v1/sessions/{session_id}/", {"runtime_mode": "approval-required"}, format="json")
    assert response.status_code == HTTPStatus.OK and response.json()["runtime_mode"] == "approval-required"


@pytest.mark.parametrize("mode", ["approval-required", "auto-accept-edits"])
def test_the_other_modes_need_no_override(modes_clients: tuple[APIClient, APIClient], mode: str) -> None:
    bob, _ = modes_clients
    session_id = start(bob).json()["session"]
    response = bob.patch(f"/api/v1/sessions/{session_id}/", {"runtime_mode": mode, "interaction_mode": "plan"}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
