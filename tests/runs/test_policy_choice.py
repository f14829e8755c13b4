"""Naming a rule policy is a loosening like any other (issue 34): a run may name a policy only
if it is at least as strict as the default policy, if the administrator made it available
to the user (or a group of theirs), or with `runs.override_policy` — on every path: the
API, the console's New run and Continue, and the hook gateway."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client
from rest_framework.test import APIClient

from approvals.models import Policy
from runs.models import AgentSession, Run

SCENARIO = {"steps": [{"tool": "bash", "input": {"command": "rm -rf build"}}, {"message": "done"}]}
FULL = "Full access (audited)"


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def start(user: Any, policy: str, **body: Any) -> Any:
    return api(user).post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO, "policy": policy, **body}, format="json")


@pytest.fixture
def starter(make_user: Callable[..., Any]) -> Any:
    return make_user("bob", superuser=False, perms=("runs.add_run",))


@pytest.mark.django_db
def test_a_starter_cannot_name_the_loosest_preset(starter: Any) -> None:
    response = start(starter, FULL)
    assert response.status_code == HTTPStatus.FORBIDDEN, response.content
    body = response.json()
    assert (body["code"], body["field"], body["policy"]) == ("policy_override_forbidden", "policy", FULL)
    assert FULL in body["message"] and "runs.override_policy" in body["message"]
    assert any("destructive" in why for why in body["loosenings"])  # what it would have let through
    assert not Run.objects.exists() and not AgentSession.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["Standard review", "Read-only review", "Accept edits"])
def test_a_policy_at_least_as_strict_as_the_default_needs_nothing(starter: Any, name: str) -> None:
    assert start(starter, name).status_code == HTTPStatus.CREATED


@pytest.mark.django_db
def test_a_custom_policy_is_judged_by_its_rules_and_its_run_policy(starter: Any) -> None:
    from approvals.selectors import policy_for_run
    from approvals.services import policy_save

    default = policy_for_run("")[1]
    policy_save(policy=Policy(name="no pushes", document={**default, "commands": {"deny": ["git push"]}}))
    assert start(starter, "no pushes").status_code == HTTPStatus.CREATED
    # an ask rule can lower a class deny (rm -rf is destructive: denied by the default)
    policy_save(policy=Policy(name="ask rm", document={**default, "commands": {"ask": ["rm"]}}))
    assert start(starter, "ask rm").status_code == HTTPStatus.FORBIDDEN
    # rules as strict, but a run policy that approves on its own
    policy_save(policy=Policy(name="auto", document=default, run_policy={"approvals": {"permission": "auto-approve"}}))
    body = start(starter, "auto").json()
    assert body["code"] == "policy_override_forbidden" and any("approvals.permission" in why for why in body["loosenings"])


@pytest.mark.django_db
def test_an_administrator_makes_a_looser_policy_available_to_a_user_or_a_group(starter: Any, make_user: Callable[..., Any]) -> None:
    from django.contrib.auth.models import Group

    full = Policy.objects.get(name=FULL)
    full.available_to_users.add(starter)
    assert start(starter, FULL).status_code == HTTPStatus.CREATED

    carol = make_user("carol", superuser=False, perms=("runs.add_run",))
    assert start(carol, FULL).status_code == HTTPStatus.FORBIDDEN
    release = Group.objects.create(name="release")
    full.available_to_groups.add(release)
    carol.groups.add(release)
    assert start(carol, FULL).status_code == HTTPStatus.CREATED


@pytest.mark.django_db
def test_who_may_override_names_any_policy(make_user: Callable[..., Any]) -> None:
    olga = make_user("olga", superuser=False, perms=("runs.add_run", "runs.override_policy"))
    assert start(olga, FULL).status_code == HTTPStatus.CREATED


@pytest.mark.django_db
def test_a_follow_up_turn_is_checked_for_whoever_continues(make_user: Callable[..., Any]) -> None:
    """A run started under a looser policy by someone allowed to; its starter continues the
    session after losing that right: refused, the next turn would run under it."""
    from runs.errors import RunError
    from runs.services import run_follow_up

    bob = make_user("bob", superuser=False, perms=("runs.add_run",))
    Policy.objects.get(name=FULL).available_to_users.add(bob)
    first = start(bob, FULL).json()
    Policy.objects.get(name=FULL).available_to_users.remove(bob)
    with pytest.raises(RunError) as refused:
        run_follow_up(session=AgentSession.objects.get(pk=first["session"]), prompt="again", scenario=SCENARIO, user=bob)
    assert refused.value.code == "policy_override_forbidden"


@pytest.mark.django_db
def test_the_console_form_refuses_it_with_the_reason(starter: Any) -> None:
    client = Client()
    client.force_login(starter)
    page = client.get("/runs/new/").content.decode()
    assert f"{FULL} (looser than the default: needs the permission to override policies)" in page
    response = client.post("/runs/new/", {"driver": "scripted", "policy": FULL, "scenario": '{"steps": [{"message": "x"}]}'})
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert "is looser than the administrator&#x27;s default policy" in response.content.decode()
    assert not Run.objects.exists()


@pytest.mark.django_db(transaction=True)
async def test_the_hook_gateway_refuses_it_too(make_user: Callable[..., Any]) -> None:
    from integrations.tokens import token_create

    from ..integrations.test_hook_gateway import URL, hook_input

    bob = await sync_to_async(make_user)("bob", superuser=False, perms=("runs.add_run",))
    token = (await sync_to_async(token_create)(user=bob, scopes=["hooks"]))[1]
    response = await AsyncClient().post(f"{URL}?policy={FULL}", hook_input(tool_input={"command": "rm -rf /tmp/x"}),
                                        content_type="application/json", headers={"Authorization": f"Token {token}"})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.FORBIDDEN, "policy_override_forbidden")
    assert not await sync_to_async(Run.objects.exists)()
    allowed = await AsyncClient().post(f"{URL}?policy=Read-only review", hook_input(), content_type="application/json",
                                       headers={"Authorization": f"Token {token}"})
    assert allowed.status_code == HTTPStatus.OK
