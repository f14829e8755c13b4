"""Friction scaled to risk (issue 32.2): the run policy's `approvals.confirm` makes a
class's approvals take a typed word or a second reviewer, on the API and the console; such
cards are never decided in a batch or allowed for the session."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from approvals.models import Approval, Signoff

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("standard_review_default")]

REVIEWER = ("runs.add_run", "approvals.change_approval")


def waiting(starter: Any, confirm: dict[str, str], command: str = "git push origin feature") -> Approval:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=starter,
                     run_policy={"approvals": {"confirm": confirm}})
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace,
                           subtype="command", presentation={"title": "Push", "command": command})
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


@pytest.fixture
def people(make_user: Callable[..., Any]) -> tuple[Any, Any, Any]:
    return tuple(make_user(name, superuser=False, perms=REVIEWER) for name in ("bob", "rita", "sam"))  # type: ignore[return-value]


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def approve(user: Any, approval: Approval, **body: Any) -> Any:
    return api(user).post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash, **body}, format="json")


# --- typed ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "word"), [
    ("git push origin feature", "feature"),
    ("git push origin HEAD:release", "release"),
    ("git push origin", "origin"),
])
def test_a_typed_confirmation_asks_for_the_branch_of_a_push(people: Any, command: str, word: str) -> None:
    approval = waiting(people[0], {"remote-mutation": "typed"}, command)
    assert (approval.confirmation, approval.confirmation_word) == ("typed", word)
    assert approval.suggested_grant is None  # no "always allow" for it


def test_approving_without_the_word_or_with_a_wrong_one_is_refused_naming_the_word(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, {"remote-mutation": "typed"})
    for body in ({}, {"confirmation": "main"}, {"confirmation": ""}):
        response = approve(rita, approval, **body)
        assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
        assert response.json()["code"] == "confirmation_required" and response.json()["expected"] == "feature"
        assert "'feature'" in response.json()["message"]
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING
    response = approve(rita, approval, confirmation="feature")
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["status"] == "approved"


def test_a_typed_confirmation_on_a_file_change_asks_for_the_file_name(people: Any) -> None:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, user=people[0],
                     run_policy={"approvals": {"confirm": {"outside-workspace": "typed"}}})
    outcome = gate_request(run_id=run.pk, tool="write", input={"file_path": "/tmp/elsewhere/notes.txt", "content": "x"},
                           cwd=run.workspace, subtype="edit", presentation={"title": "Write"})
    approval = Approval.objects.get(pk=outcome.approval_id)
    assert (approval.confirmation, approval.confirmation_word) == ("typed", "notes.txt")


def test_a_denial_needs_no_word(people: Any) -> None:
    approval = waiting(people[0], {"remote-mutation": "typed"})
    response = api(people[1]).post(f"/api/v1/approvals/{approval.pk}/deny/", {"hash": approval.hash, "reason": "no"}, format="json")
    assert response.status_code == HTTPStatus.OK and response.json()["status"] == "denied"


# --- second reviewer -------------------------------------------------------------------------


def test_a_second_reviewer_request_takes_two_different_people(people: Any) -> None:
    bob, rita, sam = people
    approval = waiting(bob, {"remote-mutation": "second-reviewer"})
    first = approve(rita, approval)
    assert first.status_code == HTTPStatus.ACCEPTED, first.content
    assert {k: first.json()[k] for k in ("status", "approvals_given", "approvals_required")} == {
        "status": "pending", "approvals_given": 1, "approvals_required": 2}
    assert approval.run.activities.filter(event="approval.signed_off").count() == 1
    again = approve(rita, approval)
    assert (again.status_code, again.json()["code"]) == (HTTPStatus.CONFLICT, "second_reviewer_required")
    second = approve(sam, approval)
    assert second.status_code == HTTPStatus.OK, second.content
    assert (second.json()["status"], second.json()["decided_by"], second.json()["approvals_given"]) == ("approved", "sam", 2)
    assert sorted(Signoff.objects.filter(approval=approval).values_list("user__username", flat=True)) == ["rita", "sam"]


def test_under_four_eyes_the_starter_is_not_a_reviewer_of_it(settings: Any, people: Any) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob, rita, _ = people
    approval = waiting(bob, {"remote-mutation": "second-reviewer"})
    assert approve(rita, approval).status_code == HTTPStatus.ACCEPTED
    response = approve(bob, approval)
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "second_reviewer_required")
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


@pytest.mark.parametrize("who", [1, 2])
def test_a_deny_by_either_settles_it(people: Any, who: int) -> None:
    bob, rita, sam = people
    approval = waiting(bob, {"remote-mutation": "second-reviewer"})
    assert approve(rita, approval).status_code == HTTPStatus.ACCEPTED
    denier = (rita, sam)[who - 1]
    response = api(denier).post(f"/api/v1/approvals/{approval.pk}/deny/", {"hash": approval.hash, "reason": "no"}, format="json")
    assert response.status_code == HTTPStatus.OK and response.json()["status"] == "denied"


def test_the_approved_request_is_handed_to_the_run(people: Any) -> None:
    from approvals.gate import gate_resolution

    bob, rita, sam = people
    approval = waiting(bob, {"remote-mutation": "second-reviewer"})
    approve(rita, approval)
    assert gate_resolution(approval_id=approval.pk, retry_supported=True) is None  # one of two: the run still waits
    approve(sam, approval)
    outcome = gate_resolution(approval_id=approval.pk, retry_supported=True)
    assert outcome is not None and outcome.outcome == "allow"


# --- no shortcuts ----------------------------------------------------------------------------


@pytest.mark.parametrize("confirm", ["typed", "second-reviewer"])
def test_such_a_card_is_never_allowed_for_the_session(people: Any, confirm: str) -> None:
    approval = waiting(people[0], {"remote-mutation": confirm})
    response = approve(people[1], approval, scope="session", confirmation=approval.confirmation_word)
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "grant_not_allowed")
    assert not approval.run.session.grants.exists()


@pytest.mark.parametrize("confirm", ["typed", "second-reviewer"])
def test_such_a_card_is_never_decided_in_a_batch(people: Any, confirm: str) -> None:
    from approvals.services import approval_decide_each

    approval = waiting(people[0], {"remote-mutation": confirm})
    (outcome,) = approval_decide_each(items=[(approval.pk, approval.hash)], user=people[1], approve=True)
    assert outcome.error is not None and outcome.error.code == "batch_not_allowed"
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING and not Signoff.objects.exists()


# --- the console card ------------------------------------------------------------------------


def test_the_card_asks_for_the_word_and_a_wrong_one_decides_nothing(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, {"remote-mutation": "typed"})
    browser = Client()
    browser.force_login(rita)
    page = browser.get("/").content.decode()
    assert "Type <code>feature</code> to approve" in page and 'name="confirmation"' in page
    assert f'value="{approval.pk}:{approval.hash}"' not in page  # no batch checkbox
    card = browser.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash, "confirmation": "main"},
                        headers={"HX-Request": "true"}).content.decode()
    assert "the word does not match" in card and "Type &#x27;feature&#x27; to approve" in card
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING
    card = browser.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash, "confirmation": "feature"},
                        headers={"HX-Request": "true"}).content.decode()
    assert "Approved by" in card


def test_the_card_says_one_of_two(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, {"remote-mutation": "second-reviewer"})
    browser = Client()
    browser.force_login(rita)
    card = browser.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers={"HX-Request": "true"}).content.decode()
    assert "<strong>1 of 2</strong> approved (rita)" in card


def test_the_timeline_says_who_gave_the_first_of_two(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, {"remote-mutation": "second-reviewer"})
    approve(rita, approval)
    browser = Client()
    browser.force_login(bob)
    page = browser.get(f"/runs/{approval.run_id}/").content.decode()
    assert "approved, 1 of 2</span> by <strong>rita</strong>" in page
