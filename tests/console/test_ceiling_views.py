"""Who may loosen a policy, in the console (issue 9): the New run form and the session
modes go through the same services as the API; four eyes greys out a starter's cards."""

from __future__ import annotations

import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from approvals.models import Approval
from runs.models import Run
from tests.console.conftest import DECIDE, htmx_headers

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("standard_review_default")]

SCENARIO = '{"steps": [{"message": "hi"}]}'
PERMS = (DECIDE, "runs.add_run", "runs.change_run", "runs.change_agentsession", "approvals.change_grant")


@pytest.fixture
def olga(make_user: Callable[..., Any]) -> Any:
    """Like alice, and may override the policy."""
    return make_user("olga", superuser=False, perms=(*PERMS, "runs.override_policy"))


def post_new_run(client: Client, **fields: Any) -> Any:
    data = {"driver": "scripted", "scenario": SCENARIO, "csrfmiddlewaretoken": client.csrf_token, **fields}  # type: ignore[attr-defined]
    return client.post("/runs/new/", data)


def waiting_run(starter: Any, command: str = "npm run build", title: str = "Build it") -> Approval:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=starter)
    outcome = gate_request(
        run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace, subtype="command",
        presentation={"title": title, "command": command},
    )
    assert outcome.outcome == "wait"
    return Approval.objects.select_related("run").get(pk=outcome.approval_id)


# --- New run -------------------------------------------------------------------------------------


def test_new_run_form_refuses_a_loosening_run_policy_on_its_field(csrf_client: Callable[[Any], Client], alice: Any, olga: Any) -> None:
    loose = '{"approvals": {"permission": "auto-approve"}}'
    response = post_new_run(csrf_client(alice), run_policy=loose)
    assert response.status_code == HTTPStatus.FORBIDDEN
    page = response.content.decode()
    error = re.search(r'id="id_run_policy".*?<p class="field-error" role="alert">(.*?)</p>', page, re.S)
    assert error and "approvals.permission" in error.group(1) and "runs.override_policy" in error.group(1), page
    assert not Run.objects.exists()

    assert post_new_run(csrf_client(olga), run_policy=loose).status_code == HTTPStatus.FOUND
    assert post_new_run(csrf_client(alice), run_policy='{"approvals": {"timeout_s": 5}}').status_code == HTTPStatus.FOUND


def test_new_run_in_this_session_joins_only_the_starters_own_session(
    csrf_client: Callable[[Any], Client], alice: Any, olga: Any, make_user: Callable[..., Any]
) -> None:
    client = csrf_client(alice)
    assert post_new_run(client).status_code == HTTPStatus.FOUND
    first = Run.objects.get()
    page = client.get(f"/runs/{first.pk}/").content.decode()
    assert f'href="/runs/new/?session={first.session_id}"' in page

    form = client.get(f"/runs/new/?session={first.session_id}").content.decode()
    assert re.search(rf'<select name="session"[^>]*>.*<option value="{first.session_id}" selected>', form, re.S), form
    assert f"in session {first.session_id}" in form
    assert post_new_run(client, session=first.session_id).status_code == HTTPStatus.FOUND
    assert Run.objects.filter(session_id=first.session_id).count() == 2

    carol = csrf_client(make_user("carol", superuser=False, perms=PERMS))
    assert f"/runs/new/?session={first.session_id}" not in carol.get(f"/runs/{first.pk}/").content.decode()
    response = post_new_run(carol, session=first.session_id)
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert "created by someone else" in response.content.decode()
    assert Run.objects.filter(session_id=first.session_id).count() == 2

    assert post_new_run(csrf_client(olga), session=first.session_id).status_code == HTTPStatus.FOUND
    response = post_new_run(client, session=999999)
    assert response.status_code == HTTPStatus.OK and "No session 999999." in response.content.decode()


# --- Session modes -------------------------------------------------------------------------------


def test_modes_that_approve_on_their_own_are_offered_only_to_overriders(
    csrf_client: Callable[[Any], Client], alice: Any, olga: Any
) -> None:
    approval = waiting_run(alice)
    run = approval.run
    client = csrf_client(alice)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert re.search(r'<option value="full-access" disabled>Full access \(needs the permission', page)
    assert re.search(r'<option value="auto" disabled>', page)
    assert re.search(r'<option value="auto-accept-edits">', page)

    response = client.post(
        f"/sessions/{run.session_id}/modes/", {"runtime_mode": "full-access", "run": run.pk}, headers=htmx_headers(client)
    )
    assert "runs.override_policy" in response.content.decode() and "Saved." not in response.content.decode()
    run.session.refresh_from_db()
    assert run.session.runtime_mode == "approval-required"

    overrider = csrf_client(olga)
    assert '<option value="full-access">' in overrider.get(f"/runs/{run.pk}/").content.decode()
    response = overrider.post(
        f"/sessions/{run.session_id}/modes/", {"runtime_mode": "full-access", "run": run.pk}, headers=htmx_headers(overrider)
    )
    assert "Saved." in response.content.decode()
    run.session.refresh_from_db()
    assert run.session.runtime_mode == "full-access"


# --- Four eyes -----------------------------------------------------------------------------------


def _controls(page: str, approval: Approval) -> list[str]:
    card = page[page.index(f'id="approval-{approval.pk}"'):]
    card = card[: card.index("</article>")]
    return re.findall(r'<fieldset class="controls"[^>]*>', card)


def test_with_four_eyes_the_starters_card_is_greyed_out_with_the_reason(
    settings: Any, csrf_client: Callable[[Any], Client], alice: Any, olga: Any
) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    approval = waiting_run(alice)
    client = csrf_client(alice)
    for path in ("/", f"/runs/{approval.run_id}/"):
        page = client.get(path).content.decode()
        assert _controls(page, approval) and all(" disabled" in f for f in _controls(page, approval)), page
        assert f'<p class="own-run-note" id="approval-{approval.pk}-own">You started this run' in page

    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers=htmx_headers(client))
    assert response.status_code == HTTPStatus.OK
    assert "Someone else must decide." in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING

    # Another reviewer sees it enabled, and decides it.
    other = csrf_client(olga)
    page = other.get("/").content.decode()
    assert _controls(page, approval) and not any(" disabled" in f for f in _controls(page, approval))
    assert f'id="approval-{approval.pk}-own" hidden' in page
    response = other.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers=htmx_headers(other))
    assert "Approved by <strong>olga</strong>" in response.content.decode()


def test_with_four_eyes_a_pushed_card_names_its_starter_for_the_page_to_grey_out(settings: Any, alice: Any) -> None:
    from runs import fragments

    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    approval = waiting_run(alice)
    html = fragments.approval_added(approval.pk)
    assert f'data-starter="{alice.pk}"' in html
    assert f'id="approval-{approval.pk}-own" hidden' in html and " disabled" not in html


def test_by_default_the_starter_decides_as_before(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    approval = waiting_run(alice)
    client = csrf_client(alice)
    page = client.get("/").content.decode()
    assert "data-starter" not in page and "own-run-note" not in page
    assert not any(" disabled" in f for f in _controls(page, approval))
    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers=htmx_headers(client))
    assert "Approved by <strong>alice</strong>" in response.content.decode()


def test_the_card_title_is_labelled_as_the_agents_and_takes_focus_not_clicks(client: Client, alice: Any) -> None:
    approval = waiting_run(alice, title="Totally safe: approve me <b>now</b>")
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert (
        f'<p class="source-label title-source" id="approval-{approval.pk}-title-source">Title from the agent</p>' in page
    )
    assert re.search(
        rf'<h3 id="approval-{approval.pk}-title" class="card-title agent-text" tabindex="-1" '
        rf'aria-describedby="approval-{approval.pk}-title-source">Totally safe: approve me &lt;b&gt;now&lt;/b&gt;</h3>',
        page,
    )
