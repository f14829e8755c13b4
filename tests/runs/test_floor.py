"""The run policy's `sandbox` at run creation (issue 28): who may start a run without the
floor, and that a run needing one is refused, never started without it, where this server
cannot build it. The console says both (a badge, a banner), and so does `manage.py check`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http import HTTPStatus
from typing import Any

import pytest
from django.core import checks
from django.urls import reverse
from rest_framework.test import APIClient

from drivers.sandbox import Availability, probe
from runs.models import Run

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}
UNRESTRICTED = {"sandbox": "unrestricted"}


@pytest.fixture
def client_for(make_user: Callable[..., Any]) -> Callable[..., APIClient]:
    def make(username: str, perms: tuple[str, ...]) -> APIClient:
        client = APIClient()
        client.force_authenticate(make_user(username, superuser=False, perms=perms))
        return client

    return make


@pytest.fixture
def no_floor_here() -> Iterator[None]:
    """This machine cannot build the floor (the cached probe's answer)."""
    saved = probe._cached
    probe._cached = Availability(False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    yield
    probe._cached = saved


def start(client: APIClient, **body: Any) -> Any:
    return client.post("/api/v1/runs/", {"driver": "scripted", "scenario": SCENARIO, **body}, format="json")


def test_a_run_without_the_floor_needs_the_unsandboxed_permission(client_for: Callable[..., APIClient]) -> None:
    overrider = client_for("olga", ("runs.add_run", "runs.override_policy"))
    response = start(overrider, run_policy=UNRESTRICTED)
    assert response.status_code == HTTPStatus.FORBIDDEN, response.content
    body = response.json()
    assert (body["code"], body["field"]) == ("sandbox_unrestricted_forbidden", "sandbox")
    assert "runs.run_unsandboxed" in body["message"]
    assert not Run.objects.exists()


def test_the_unsandboxed_permission_does_not_lift_the_ceiling(client_for: Callable[..., APIClient]) -> None:
    unsandboxed = client_for("una", ("runs.add_run", "runs.run_unsandboxed"))
    response = start(unsandboxed, run_policy=UNRESTRICTED)
    assert response.status_code == HTTPStatus.FORBIDDEN, response.content
    assert response.json()["code"] == "policy_override_forbidden"


def test_with_both_permissions_a_run_starts_without_the_floor(client_for: Callable[..., APIClient]) -> None:
    admin = client_for("ada", ("runs.add_run", "runs.override_policy", "runs.run_unsandboxed"))
    response = start(admin, run_policy=UNRESTRICTED)
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert Run.objects.get().unsandboxed


@pytest.mark.usefixtures("no_floor_here")
def test_a_run_that_needs_the_floor_is_refused_where_it_cannot_be_built(api: APIClient) -> None:
    response = start(api)
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    body = response.json()
    assert (body["code"], body["field"]) == ("sandbox_unavailable", "sandbox")
    assert "bubblewrap" in body["reason"] and "GATEHOUSE_SANDBOX=off" in body["message"]
    assert not Run.objects.exists()
    assert start(api, run_policy={"sandbox": "read-only"}).status_code == HTTPStatus.BAD_REQUEST


@pytest.mark.usefixtures("no_floor_here")
def test_an_unrestricted_run_or_the_administrators_opt_out_needs_no_floor(api: APIClient, settings: Any) -> None:
    assert start(api, run_policy=UNRESTRICTED).status_code == HTTPStatus.CREATED
    settings.GATEHOUSE_SANDBOX = "off"
    assert start(api).status_code == HTTPStatus.CREATED


@pytest.mark.usefixtures("no_floor_here")
def test_the_hook_gateways_runs_need_no_floor_here() -> None:
    """Their agent runs on the developer's machine: nothing of theirs runs here."""
    from runs.services import run_create

    assert run_create(driver="claude-code-hook", workspace="/home/dev/app").pk


@pytest.mark.usefixtures("no_floor_here")
def test_manage_check_warns_where_the_floor_cannot_be_built() -> None:
    found = [m for m in checks.run_checks() if m.id == "gatehouse.W001"]
    assert len(found) == 1 and "UNAVAILABLE" in found[0].msg and "bubblewrap" in found[0].msg


def test_manage_check_is_quiet_where_the_floor_is_on_or_off(settings: Any) -> None:
    assert not [m for m in checks.run_checks() if m.id == "gatehouse.W001"]
    settings.GATEHOUSE_SANDBOX = "off"
    assert not [m for m in checks.run_checks() if m.id == "gatehouse.W001"]


@pytest.mark.usefixtures("no_floor_here")
def test_the_console_shows_a_banner_where_the_floor_cannot_be_built(client: Any, reviewer: Any) -> None:
    client.force_login(reviewer)
    page = client.get(reverse("inbox")).content.decode()
    assert "Sandbox floor: UNAVAILABLE" in page and "bubblewrap" in page


def test_an_unrestricted_run_carries_a_badge_on_its_page_and_cards(client: Any, reviewer: Any) -> None:
    from runs.services import run_create

    client.force_login(reviewer)
    floored = run_create(driver="scripted", scenario=SCENARIO, user=reviewer)
    bare = run_create(driver="scripted", scenario=SCENARIO, run_policy=UNRESTRICTED, user=reviewer)
    assert "no sandbox" in client.get(reverse("run-detail", args=[bare.pk])).content.decode()
    assert "no sandbox" not in client.get(reverse("run-detail", args=[floored.pk])).content.decode()
    assert client.get(reverse("run-list")).content.decode().count("no sandbox") == 1
