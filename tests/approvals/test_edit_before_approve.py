"""Edit before approve (issue 32.3): a reviewer changes a command's or a file write's input
and approves the edited version, which the policy evaluates again; only where the run's
driver can hand the edit to its agent; the record keeps both."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from rest_framework.test import APIClient

from approvals.models import Approval
from runs.models import Activity, Step

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("standard_review_default")]

REVIEWER = ("runs.add_run", "approvals.change_approval")
# Asked under "Standard review" (code the policy cannot read writes a file).
ASKED = """awk 'BEGIN { print "hi" > "out.txt" }'"""
OUTSIDE = "/opt/gatehouse-notes.txt"  # a write outside the workspace is asked


def waiting(starter: Any, *, driver: str = "scripted", tool: str = "bash", input: dict[str, Any] | None = None,
            run_policy: dict[str, Any] | None = None) -> Approval:
    from approvals.gate import gate_request
    from runs.services import run_create

    extra = {"scenario": {"steps": [{"message": "hi"}]}} if driver == "scripted" else {"prompt": "do it"}
    run = run_create(driver=driver, user=starter, run_policy=run_policy or {}, **extra)
    tool_input = input if input is not None else {"command": ASKED}
    outcome = gate_request(run_id=run.pk, tool=tool, input=tool_input, cwd=run.workspace,
                           subtype="command" if tool == "bash" else "file-change", presentation={"title": "Do it"})
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


@pytest.fixture
def people(make_user: Callable[..., Any]) -> tuple[Any, Any, Any]:
    return tuple(make_user(name, superuser=False, perms=REVIEWER) for name in ("bob", "rita", "sam"))  # type: ignore[return-value]


def approve(user: Any, approval: Approval, **body: Any) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    return client.post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash, **body}, format="json")


def test_an_edited_command_is_approved_and_the_record_keeps_both(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob)
    response = approve(rita, approval, edited_input={"command": "echo edited > edited.txt"})
    assert response.status_code == HTTPStatus.OK, response.content
    body = response.json()
    assert body["status"] == "approved"
    assert body["input"] == {"command": ASKED}
    assert body["edited_input"] == {"command": "echo edited > edited.txt"}
    step = Step.objects.get(pk=approval.step_id)
    assert step.request["input"] == {"command": "echo edited > edited.txt"}  # what runs
    assert step.original_request["input"] == {"command": ASKED}  # what the agent asked
    resolved = Activity.objects.get(run_id=approval.run_id, event="approval.resolved").payload
    assert resolved["edited"] is True
    assert (resolved["input"], resolved["edited_input"]) == ({"command": ASKED}, {"command": "echo edited > edited.txt"})


def test_an_edit_the_policy_would_ask_about_is_the_reviewers_to_approve(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob)
    edited = """awk 'BEGIN { print "bye" > "other.txt" }'"""
    response = approve(rita, approval, edited_input={"command": edited})
    assert response.status_code == HTTPStatus.OK, response.content
    assert Activity.objects.get(run_id=approval.run_id, event="approval.resolved").payload["edited_verdict"] == "ask"


@pytest.mark.parametrize(("command", "rule"), [("rm -rf /", "classes.protected"), ("git push --force origin main", "classes.destructive")])
def test_an_edit_the_policy_would_deny_is_refused_naming_the_rule(people: Any, command: str, rule: str) -> None:
    bob, rita, _ = people
    approval = waiting(bob)
    response = approve(rita, approval, edited_input={"command": command})
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    body = response.json()
    assert (body["code"], body["rule"]) == ("edit_denied", rule), body
    approval.refresh_from_db()
    assert (approval.status, approval.edited_input) == ("pending", None)
    assert Step.objects.get(pk=approval.step_id).original_request is None


def test_an_edit_into_a_protected_path_is_refused(people: Any) -> None:
    from django.conf import settings

    bob, rita, _ = people
    approval = waiting(bob, tool="write", input={"file_path": OUTSIDE, "content": "hello"})
    target = str(settings.VAR_DIR / "db.sqlite3")
    response = approve(rita, approval, edited_input={"file_path": target})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.BAD_REQUEST, "edit_denied"), response.content


def test_a_driver_that_cannot_carry_an_edit_answers_edit_unsupported(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, driver="codex")
    detail = APIClient()
    detail.force_authenticate(rita)
    assert detail.get(f"/api/v1/approvals/{approval.pk}/").json()["edits_offered"] is False
    response = approve(rita, approval, edited_input={"command": "echo hi"})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "edit_unsupported"), response.content
    approval.refresh_from_db()
    assert approval.status == "pending"


@pytest.mark.parametrize(("tool", "input", "edited", "field"), [
    ("bash", None, {"description": "x"}, "edited_input.description"),
    ("bash", None, {"command": 3}, "edited_input.command"),
    ("bash", None, {"command": "   "}, "edited_input.command"),
    ("bash", None, {}, "edited_input"),
    ("bash", None, {"tool": "write"}, "edited_input.tool"),
    ("write", {"file_path": OUTSIDE, "content": "x"}, {"old_string": "x"}, "edited_input.old_string"),
    ("edit", {"file_path": OUTSIDE, "old_string": "a", "new_string": "b"}, {"content": "x"}, "edited_input.content"),
])
def test_an_edit_of_a_key_that_is_not_the_tools_input_is_refused(
    people: Any, tool: str, input: dict[str, Any] | None, edited: dict[str, Any], field: str
) -> None:
    bob, rita, _ = people
    approval = waiting(bob, tool=tool, input=input)
    response = approve(rita, approval, edited_input=edited)
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    assert (response.json()["code"], response.json()["field"]) == ("invalid_edit", field), response.json()


def test_an_edited_approval_is_never_always_allow(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob)
    response = approve(rita, approval, scope="session", edited_input={"command": "echo hi"})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "grant_not_allowed"), response.content


def test_an_edit_still_needs_the_hash_the_reviewer_saw(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob)
    client = APIClient()
    client.force_authenticate(rita)
    url = f"/api/v1/approvals/{approval.pk}/approve/"
    response = client.post(url, {"edited_input": {"command": "echo hi"}}, format="json")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.BAD_REQUEST, "hash_required")
    response = client.post(url, {"hash": "0" * 64, "edited_input": {"command": "echo hi"}}, format="json")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "stale")


def test_an_edit_still_needs_the_typed_word(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, input={"command": "git push origin feature"},
                       run_policy={"approvals": {"confirm": {"remote-mutation": "typed"}}})
    edited = {"command": "git push origin feature --dry-run"}
    response = approve(rita, approval, edited_input=edited)
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.BAD_REQUEST, "confirmation_required")
    response = approve(rita, approval, edited_input=edited, confirmation="feature")
    assert response.status_code == HTTPStatus.OK, response.content


def test_an_edit_is_not_offered_where_two_reviewers_must_approve(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, input={"command": "git push origin feature"},
                       run_policy={"approvals": {"confirm": {"remote-mutation": "second-reviewer"}}})
    response = approve(rita, approval, edited_input={"command": "git push origin other"})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.CONFLICT, "edit_not_allowed"), response.content


def test_an_edit_that_needs_more_friction_than_the_card_asks_is_refused(people: Any) -> None:
    bob, rita, _ = people
    approval = waiting(bob, run_policy={"approvals": {"confirm": {"remote-mutation": "typed"}}})
    assert approval.confirmation == ""
    response = approve(rita, approval, edited_input={"command": "git push origin main"})
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    assert (response.json()["code"], response.json()["rule"]) == ("edit_denied", "approvals.confirm")


def test_the_starter_cannot_approve_an_edit_of_their_own_run_under_four_eyes(people: Any, settings: Any) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob, _, _ = people
    approval = waiting(bob)
    response = approve(bob, approval, edited_input={"command": "echo hi"})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.FORBIDDEN, "own_run")


def test_after_a_restart_the_agents_own_request_finds_the_edited_step_and_gets_the_edit_again(people: Any) -> None:
    from approvals.gate import answer_from_record, match_key, recorded_steps
    from approvals.gate.lifecycle import step_move

    bob, rita, _ = people
    approval = waiting(bob)
    assert approve(rita, approval, edited_input={"command": "echo edited"}).status_code == HTTPStatus.OK
    (recorded,) = recorded_steps(run_id=approval.run_id)
    assert recorded.key == match_key(tool="bash", input={"command": ASKED})  # the agent asks its own again
    step_move(approval.step_id, Step.Status.ALLOWED)  # decided, not yet handed out when the worker died
    outcome = answer_from_record(Step.objects.get(pk=approval.step_id))
    assert (outcome.outcome, outcome.updated_input) == ("allow", {"command": "echo edited"})
