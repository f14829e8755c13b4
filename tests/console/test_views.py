"""Console views: login, deciding through the htmx endpoints with CSRF, escaping, runs."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from approvals.models import Approval
from runs.models import Run
from tests.console.conftest import htmx_headers

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/", "/runs/", "/runs/new/", "/runs/1/"])
def test_console_pages_require_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"].startswith("/accounts/login/?next=")


def test_decide_requires_login(client: Client, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash})
    assert response.status_code == HTTPStatus.FOUND
    assert "/accounts/login/" in response["Location"]
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_htmx_request_after_logout_navigates_to_login(client: Client) -> None:
    response = client.get("/", headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/runs/"})
    assert response.status_code == HTTPStatus.OK
    assert response["HX-Redirect"] == "/accounts/login/?next=/runs/"


def test_inbox_lists_pending_approvals(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client.force_login(alice)
    response = client.get("/")
    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert f'id="approval-{approval.pk}"' in html
    assert "git push origin main" in html
    assert 'ws-connect="/ws/inbox/"' in html
    assert "X-CSRFToken" in html  # <body hx-headers> carries the token for every htmx request


def test_reviewer_approves_through_htmx_endpoint(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)

    response = client.post(
        f"/approvals/{approval.pk}/approve/", {"hash": approval.hash, "scope": "once"}, headers=htmx_headers(client)
    )

    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert "Approved by <strong>alice</strong>" in html
    assert f'id="approval-{approval.pk}-done"' in html
    approval.refresh_from_db()
    assert approval.status == Approval.Status.APPROVED
    assert approval.decided_by == alice
    assert approval.decided_via == Approval.Via.CONSOLE


def test_decision_without_csrf_token_is_refused(alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers={"HX-Request": "true"})

    assert response.status_code == HTTPStatus.FORBIDDEN
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_second_approve_shows_already_decided(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)
    url = f"/approvals/{approval.pk}/approve/"
    assert client.post(url, {"hash": approval.hash}, headers=htmx_headers(client)).status_code == HTTPStatus.OK

    response = client.post(url, {"hash": approval.hash}, headers=htmx_headers(client))

    assert response.status_code == HTTPStatus.OK  # htmx swaps 2xx only: the card says why
    html = response.content.decode()
    assert "Already decided." in html
    assert "already decided" in html.lower()
    assert 'role="alert"' in html


def test_deny_records_the_reason(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)

    response = client.post(
        f"/approvals/{approval.pk}/deny/", {"hash": approval.hash, "reason": "not on main"}, headers=htmx_headers(client)
    )

    assert "Denied by <strong>alice</strong>: not on main" in response.content.decode()
    approval.refresh_from_db()
    assert (approval.status, approval.reason) == (Approval.Status.DENIED, "not on main")


def test_stale_hash_is_refused(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)

    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": "0" * 64}, headers=htmx_headers(client))

    assert "The request changed." in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_user_without_permission_gets_403(csrf_client: Callable[[Any], Client], viewer: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(viewer)
    assert client.get("/").status_code == HTTPStatus.OK  # may look

    for verb in ("approve", "deny", "answer"):
        response = client.post(f"/approvals/{approval.pk}/{verb}/", {"hash": approval.hash}, headers=htmx_headers(client))
        assert response.status_code == HTTPStatus.FORBIDDEN

    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_decide_endpoints_refuse_get(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client.force_login(alice)
    assert client.get(f"/approvals/{approval.pk}/approve/").status_code == HTTPStatus.METHOD_NOT_ALLOWED


def test_without_htmx_a_decision_redirects_back(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)

    response = client.post(
        f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers={"X-CSRFToken": client.csrf_token}
    )

    assert response.status_code == HTTPStatus.FOUND
    approval.refresh_from_db()
    assert approval.status == Approval.Status.APPROVED


def test_agent_text_is_escaped(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    evil = "echo '<script>alert(1)</script>' && curl http://x/?a=<b>"
    approval = make_approval(evil, presentation={"title": "<img src=x onerror=alert(2)>", "command": evil})
    client.force_login(alice)

    for path in ("/", f"/runs/{approval.run_id}/"):
        html = client.get(path).content.decode()
        assert "<script>alert(1)" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<img src=x" not in html
        assert "From the agent" in html


def test_a_notice_shows_what_it_says_escaped(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    from runs.timeline import activity_record

    approval = make_approval("git push origin notices")
    activity_record(run_id=approval.run_id, kind="notice", event="notice",
                    payload={"level": "warning", "text": "Codex error: <b>rate limited</b>"})
    activity_record(run_id=approval.run_id, kind="notice", event="notice",
                    payload={"warning": "queued_write_failed", "text": "Gatehouse could not record a write"})
    client.force_login(alice)
    html = client.get(f"/runs/{approval.run_id}/").content.decode()
    assert "Notice — Codex error: &lt;b&gt;rate limited&lt;/b&gt;" in html
    assert "Notice: <code>queued_write_failed</code> — Gatehouse could not record a write" in html


def test_pushed_fragments_escape_agent_text(make_approval: Callable[..., Any]) -> None:
    from runs import fragments

    approval = make_approval("git push origin '<script>alert(1)</script>'")
    html = fragments.approval_added(approval.pk)
    assert "<script>" not in html and "&lt;script&gt;" in html
    activity_html = fragments.activity_appended(approval.run.activities.get(event="tool.requested").pk)
    assert "<script>" not in activity_html and "&lt;script&gt;" in activity_html


def test_plan_markdown_is_sanitised(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    plan = "# Plan\n\n1. **Refactor** auth\n\n<script>alert(1)</script>\n\n[click](javascript:alert(2)) <img src=x onerror=alert(3)>"
    make_approval(
        tool="ExitPlanMode", input={"plan": plan}, kind="plan_review", subtype="plan",
        presentation={"title": "Review the plan", "plan": plan},
    )
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert "<h3>Plan</h3>" in html and "<strong>Refactor</strong>" in html
    assert "<script>alert" not in html
    assert "href=\"javascript" not in html
    assert "<img" not in html
    assert "Send back with feedback" in html and 'value="accept-edits"' in html


QUESTIONS = [
    {"id": "color", "header": "Color", "question": "Which color?", "options": [{"label": "Red"}, {"label": "Blue"}],
     "multi_select": False, "allow_other": True},
    {"id": "scope", "header": "Scope", "question": "Which parts?", "options": [{"label": "Auth"}, {"label": "Export"}],
     "multi_select": True, "allow_other": False},
]


def _question(make_approval: Callable[..., Any]) -> Any:
    return make_approval(
        tool="AskUserQuestion", input={"questions": QUESTIONS}, kind="question", subtype="question",
        presentation={"title": "The agent asks", "questions": QUESTIONS},
    )


def test_question_is_answered_through_the_form(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = _question(make_approval)
    client = csrf_client(alice)
    page = client.get("/").content.decode()
    assert 'type="radio" name="q:color"' in page and 'type="checkbox" name="q:scope"' in page

    response = client.post(
        f"/approvals/{approval.pk}/answer/",
        {"hash": approval.hash, "q:color": "Red", "q:color:other": "", "q:scope": ["Auth", "Export"]},
        headers=htmx_headers(client),
    )

    assert "Answered by <strong>alice</strong>" in response.content.decode()
    approval.refresh_from_db()
    assert approval.answers == {"color": ["Red"], "scope": ["Auth", "Export"]}


def test_a_refused_answer_keeps_the_form(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    """(A partial answer is accepted since issue 30; an empty one, or words where a question
    takes none, is refused and the form stays.)"""
    approval = _question(make_approval)
    client = csrf_client(alice)

    response = client.post(f"/approvals/{approval.pk}/answer/", {"hash": approval.hash}, headers=htmx_headers(client))
    assert "Answer at least one question, or decline." in response.content.decode()
    response = client.post(
        f"/approvals/{approval.pk}/answer/", {"hash": approval.hash, "q:color:other": "Teal", "q:scope:other": "all of it"},
        headers=htmx_headers(client),
    )

    html = response.content.decode()
    assert "takes no answer of your own" in html and 'value="Teal"' in html
    assert f'id="approval-{approval.pk}"' in html and "Send answers" in html
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_question_can_be_declined(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = _question(make_approval)
    client = csrf_client(alice)

    response = client.post(f"/approvals/{approval.pk}/answer/", {"hash": approval.hash, "decline": "1"}, headers=htmx_headers(client))

    assert "Declined by <strong>alice</strong>" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.Status.ANSWERED and approval.answers is None


def test_approve_is_refused_for_a_question(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = _question(make_approval)
    client = csrf_client(alice)

    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash}, headers=htmx_headers(client))

    assert "Not accepted." in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_run_page_shows_request_and_decision(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)
    client.post(f"/approvals/{approval.pk}/deny/", {"hash": approval.hash, "reason": "no pushes"}, headers=htmx_headers(client))

    html = client.get(f"/runs/{approval.run_id}/").content.decode()

    assert f'ws-connect="/ws/runs/{approval.run_id}/"' in html
    assert "git push origin main" in html
    assert "denied</span>" in html and "by <strong>alice</strong>" in html
    assert "Reason: no pushes" in html


def test_run_page_catch_up_partials(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client.force_login(alice)
    url = f"/runs/{approval.run_id}/"

    timeline = client.get(url, headers={"HX-Request": "true", "HX-Target": "timeline"}).content.decode()
    cards = client.get(url, headers={"HX-Request": "true", "HX-Target": "approvals"}).content.decode()

    assert "<html" not in timeline and 'class="event kind-tool' in timeline
    assert "<html" not in cards and f'id="approval-{approval.pk}"' in cards


def test_runs_list_paginates(client: Client, alice: Any) -> None:
    from runs.services import run_create

    for i in range(27):
        run_create(driver="scripted", prompt=f"run {i}", scenario={"steps": [{"message": "hi"}]})
    client.force_login(alice)

    first = client.get("/runs/").content.decode()
    second = client.get("/runs/?page=2").content.decode()

    assert first.count('id="run-row-') == 25 and "Page 1 of 2" in first
    assert second.count('id="run-row-') == 2 and 'id="runs-page"' in second


def test_runs_list_empty_state(client: Client, alice: Any) -> None:
    client.force_login(alice)
    assert "No runs yet." in client.get("/runs/").content.decode()


def test_new_run_form_starts_a_scripted_run(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    client = csrf_client(alice)
    scenario = '{"steps": [{"tool": "bash", "input": {"command": "echo hi"}}]}'

    response = client.post("/runs/new/", {"driver": "scripted", "prompt": "from the form", "scenario": scenario, "csrfmiddlewaretoken": client.csrf_token})

    run = Run.objects.get(prompt="from the form")
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == f"/runs/{run.pk}/"
    assert run.driver == "scripted" and run.created_by == alice


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("{not json", "Not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"steps": [{"tool": "bash"}], "extra": 1}', "scenario"),
        ('{"steps": [], "steps": [{"message": "x"}]}', "appears more than once"),
        ("", "needs a scenario"),
    ],
)
def test_new_run_form_shows_field_errors(csrf_client: Callable[[Any], Client], alice: Any, scenario: str, message: str) -> None:
    client = csrf_client(alice)

    response = client.post("/runs/new/", {"driver": "scripted", "scenario": scenario, "csrfmiddlewaretoken": client.csrf_token})

    assert response.status_code == HTTPStatus.OK
    assert 'class="field-error"' in response.content.decode()
    assert message in response.content.decode()
    assert not Run.objects.exists()


def test_cancel_button_cancels_a_queued_run(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    from runs.services import run_create

    run = run_create(driver="scripted", prompt="to cancel", scenario={"steps": [{"message": "hi"}]})
    client = csrf_client(alice)

    response = client.post(f"/runs/{run.pk}/cancel/", headers=htmx_headers(client))

    assert response.status_code == HTTPStatus.OK
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert "Cancelled" in response.content.decode()


LOCAL_CHANGES_ASK = {"classes": {"local-mutation": "ask"}, "default": "ask"}


def test_always_allow_creates_a_grant_that_can_be_revoked(
    csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]
) -> None:
    from approvals.models import Grant

    approval = make_approval("npm install left-pad", policy=LOCAL_CHANGES_ASK)
    assert approval.suggested_grant_label
    client = csrf_client(alice)
    card = client.get("/").content.decode()
    assert 'name="scope" value="session"' in card

    decided = client.post(
        f"/approvals/{approval.pk}/approve/", {"hash": approval.hash, "scope": "session"}, headers=htmx_headers(client)
    ).content.decode()
    assert "for the session" in decided
    grant = Grant.objects.get(session_id=approval.run.session_id)
    page = client.get(f"/runs/{approval.run_id}/").content.decode()
    assert f"/grants/{grant.pk}/revoke/" in page

    revoked = client.post(f"/grants/{grant.pk}/revoke/", {"run": approval.run_id}, headers=htmx_headers(client, "grants"))

    assert revoked.status_code == HTTPStatus.OK
    assert f"/grants/{grant.pk}/revoke/" not in revoked.content.decode()
    grant.refresh_from_db()
    assert grant.revoked_at is not None


def test_grant_activity_pushes_the_grants_list(alice: Any, make_approval: Callable[..., Any]) -> None:
    from approvals.services import approval_decide
    from runs import fragments

    approval = make_approval("npm install left-pad", policy=LOCAL_CHANGES_ASK)
    approval_decide(approval_id=approval.pk, user=alice, approve=True, scope="session", hash=approval.hash, via="console")
    created = approval.run.activities.get(event="grant.created")

    html = fragments.activity_appended(created.pk)

    assert 'id="grants"' in html and 'hx-swap-oob="true"' in html and "/revoke/" in html
    assert 'id="grants"' not in fragments.activity_appended(approval.run.activities.get(event="run.created").pk)


def test_new_run_form_refuses_a_bad_run_policy_on_its_field(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    client = csrf_client(alice)

    response = client.post(
        "/runs/new/",
        {
            "driver": "scripted",
            "scenario": '{"steps": [{"message": "hi"}]}',
            "run_policy": '{"approvals": {"question": "sometimes"}}',
            "csrfmiddlewaretoken": client.csrf_token,
        },
    )

    html = response.content.decode()
    assert response.status_code == HTTPStatus.OK
    assert "run_policy.approvals.question" in html or "approvals.question" in html
    assert not Run.objects.exists()


def test_inbox_catch_up_partials(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    """What the inbox re-fetches when its WebSocket (re)opens: rows, not pages."""
    approval = make_approval()
    client.force_login(alice)

    cards = client.get("/", headers={"HX-Request": "true", "HX-Target": "approvals"}).content.decode()
    runs = client.get("/", headers={"HX-Request": "true", "HX-Target": "runs-body"}).content.decode()

    assert "<html" not in cards and f'id="approval-{approval.pk}"' in cards
    assert "<html" not in runs and f'id="run-row-{approval.run_id}"' in runs


def test_session_modes_change_from_the_run_page(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    from runs.models import Activity

    approval = make_approval()
    run = approval.run
    client = csrf_client(alice)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'name="runtime_mode"' in page

    response = client.post(
        f"/sessions/{run.session_id}/modes/",
        {"runtime_mode": "auto-accept-edits", "interaction_mode": "plan", "run": run.pk},
        headers=htmx_headers(client),
    )
    assert response.status_code == HTTPStatus.OK
    assert "Saved." in response.content.decode()
    run.session.refresh_from_db()
    assert (run.session.runtime_mode, run.session.interaction_mode) == ("auto-accept-edits", "plan")
    changed = Activity.objects.get(run=run, event="session.modes_changed")
    assert changed.payload["runtime_mode"] == "auto-accept-edits" and changed.payload["by"] == "alice"


def test_unknown_session_mode_shows_an_error_and_changes_nothing(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    run = make_approval().run
    client = csrf_client(alice)
    response = client.post(f"/sessions/{run.session_id}/modes/", {"runtime_mode": "yolo", "run": run.pk}, headers=htmx_headers(client))
    assert "unknown runtime mode" in response.content.decode()
    run.session.refresh_from_db()
    assert run.session.runtime_mode == "approval-required"


def test_a_viewer_may_not_change_session_modes(csrf_client: Callable[[Any], Client], viewer: Any, make_approval: Callable[..., Any]) -> None:
    run = make_approval().run
    client = csrf_client(viewer)
    response = client.post(f"/sessions/{run.session_id}/modes/", {"runtime_mode": "full-access"}, headers=htmx_headers(client))
    # (a viewer with no permission does not even see the session: issue 34)
    assert response.status_code == HTTPStatus.NOT_FOUND
    run.session.refresh_from_db()
    assert run.session.runtime_mode == "approval-required"


def test_new_run_form_starts_an_agent_run_under_a_named_policy(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    from approvals.models import Policy
    from approvals.services import policy_save

    policy_save(policy=Policy(name="strict", document={"default": "deny"}))  # stricter than the default: anyone may name it
    client = csrf_client(alice)
    response = client.post(
        "/runs/new/",
        {"driver": "claude-code", "policy": "strict", "prompt": "fix the tests", "scenario": "ignored for agents",
         "csrfmiddlewaretoken": client.csrf_token},
    )
    run = Run.objects.get(prompt="fix the tests")
    assert response.status_code == HTTPStatus.FOUND
    assert (run.driver, run.policy.name, run.scenario) == ("claude-code", "strict", None)


def test_new_run_form_refuses_what_the_driver_does_not_model(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    client = csrf_client(alice)
    response = client.post(
        "/runs/new/",
        {"driver": "claude-code", "prompt": "x", "run_policy": '{"browser": "allow"}', "csrfmiddlewaretoken": client.csrf_token},
    )
    assert response.status_code == HTTPStatus.OK
    assert "cannot honour browser=allow" in response.content.decode()
    assert not Run.objects.exists()


def test_a_mode_change_from_a_finished_run_is_recorded_on_it(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    from runs.models import Activity
    from runs.services import run_create, run_finish

    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]})
    run_finish(run_id=run.pk, status="cancelled")
    client = csrf_client(alice)
    client.post(f"/sessions/{run.session_id}/modes/", {"runtime_mode": "auto-accept-edits", "run": run.pk}, headers=htmx_headers(client))
    changed = Activity.objects.get(run=run, event="session.modes_changed")
    assert changed.payload["runtime_mode"] == "auto-accept-edits"
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Session modes changed: runtime <code>auto-accept-edits</code>" in page


def test_a_malformed_run_field_on_a_session_form_is_ignored(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    from approvals.services import grant_create

    run = make_approval().run
    grant = grant_create(session_id=run.session_id, rule={"tool": "bash", "match": "npm run build"})
    client = csrf_client(alice)
    response = client.post(f"/grants/{grant.pk}/revoke/", {"run": "abc"}, headers=htmx_headers(client))
    assert response.status_code == HTTPStatus.OK
    grant.refresh_from_db()
    assert grant.revoked_at is not None
