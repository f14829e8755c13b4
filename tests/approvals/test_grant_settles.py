""""Always allow" settles what it covers (issue 30, item 2): when a session grant is made,
every pending request of that session the grant covers is approved by it at once,
recorded as decided by the grant with the reviewer who made it — never one of a run the
reviewer started when four eyes is on."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from rest_framework.test import APIClient

from approvals.models import Approval

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("standard_review_default")]

REVIEWER = ("runs.add_run", "approvals.change_approval", "runs.override_policy")


def ask(run: Any, command: str) -> Approval:
    from approvals.gate import gate_request

    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace, subtype="command",
                           presentation={"title": "Run", "command": command})
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


def runs_in_one_session(starter: Any, count: int) -> list[Any]:
    from runs.services import run_create

    first = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=starter)
    rest = [run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=starter, session=first.session)
            for _ in range(count - 1)]
    return [first, *rest]


def approve_for_session(user: Any, approval: Approval) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    return client.post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash, "scope": "session"}, format="json")


def test_a_grant_approves_the_pending_requests_it_covers(make_user: Callable[..., Any]) -> None:
    bob = make_user("bob", superuser=False, perms=("runs.add_run",))
    rita = make_user("rita", superuser=False, perms=REVIEWER)
    one, two, three = runs_in_one_session(bob, 3)
    first, twin, sibling = ask(one, "npm run build"), ask(two, "npm run build"), ask(three, "npm run build")
    other = ask(two, "git push origin main")  # not covered: stays
    response = approve_for_session(rita, first)
    assert response.status_code == HTTPStatus.OK, response.content
    from approvals.models import Grant

    grant = Grant.objects.get(session=one.session)
    assert response.json()["grant"] is None  # the approval she decided is hers, not the grant's
    for settled in (twin, sibling):
        settled.refresh_from_db()
        assert (settled.status, settled.decided_via, settled.decided_by, settled.grant_id) == ("approved", "grant", rita, grant.pk)
    other.refresh_from_db()
    assert other.status == "pending"
    # the API shows it
    client = APIClient()
    client.force_authenticate(rita)
    shown = client.get(f"/api/v1/approvals/{twin.pk}/").json()
    assert (shown["decided_via"], shown["grant"], shown["decided_by"]) == ("grant", grant.pk, "rita")


def test_a_grant_leaves_the_reviewers_own_runs_to_someone_else_under_four_eyes(settings: Any, make_user: Callable[..., Any]) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    rita = make_user("rita", superuser=False, perms=REVIEWER)
    bob = make_user("bob", superuser=False, perms=("runs.add_run",))
    bobs, ritas = runs_in_one_session(bob, 2)
    ritas.created_by = rita
    ritas.save(update_fields=["created_by"])
    first, hers = ask(bobs, "npm run build"), ask(ritas, "npm run build")
    assert approve_for_session(rita, first).status_code == HTTPStatus.OK
    hers.refresh_from_db()
    assert hers.status == "pending"


def test_a_request_decided_meanwhile_is_left_as_it_is(make_user: Callable[..., Any]) -> None:
    from approvals.services import approval_decide, grant_create, grant_settle_pending

    rita = make_user("rita", superuser=False, perms=REVIEWER)
    one, two = runs_in_one_session(rita, 2)
    first, twin = ask(one, "npm run build"), ask(two, "npm run build")
    approval_decide(approval_id=twin.pk, user=rita, approve=False, reason="not this one", hash=twin.hash)
    grant = grant_create(session_id=one.session_id, rule={"tool": "bash", "match": "npm run build"}, user=rita)
    assert grant_settle_pending(grant=grant, user=rita) == [first.pk]
    twin.refresh_from_db()
    assert (twin.status, twin.decided_via) == ("denied", "api")
