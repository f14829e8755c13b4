"""The inbox for daily use: filters, keyset pages, a count, no query per card, deadlines,
who asks, the per-command explanation, and batch decisions (issue 11)."""

from __future__ import annotations

import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from approvals.models import Approval, Grant
from tests.console.conftest import DECIDE, htmx_headers

pytestmark = pytest.mark.django_db

NO_DEADLINE = {"approvals": {"timeout_s": -1}}


def card_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<article id="approval-(\d+)"', html)]


def with_timeout(seconds: float, **approvals: Any) -> dict[str, Any]:
    return {"approvals": {"timeout_s": seconds, **approvals}}


# --- Filters ----------------------------------------------------------------------------------


def test_each_filter_narrows_the_inbox(client: Client, alice: Any, make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    bob = make_user("bob", superuser=False)
    push = make_approval("git push origin main", user=alice)  # remote-mutation
    delete = make_approval("rm -rf build", policy={"default": "ask", "classes": {"destructive": "ask"}}, user=bob)
    question = make_approval(
        tool="AskUserQuestion", kind="question", subtype="question",
        input={"questions": [{"id": "q", "question": "Which?", "options": [{"label": "A"}], "multi_select": False, "allow_other": False}]},
        presentation={"title": "The agent asks", "questions": [{"id": "q", "question": "Which?", "options": [{"label": "A"}], "multi_select": False, "allow_other": False}]},
    )
    claude = make_approval("git push origin dev", driver="claude-code")
    client.force_login(alice)

    def shown(query: str) -> set[int]:
        response = client.get(f"/?{query}")
        assert response.status_code == HTTPStatus.OK, response.content.decode()[:2000]
        return set(card_ids(response.content.decode()))

    everything = {push.pk, delete.pk, question.pk, claude.pk}
    assert shown("") == everything
    assert shown("kind=question") == {question.pk}
    assert shown("kind=permission") == {push.pk, delete.pk, claude.pk}
    assert shown("driver=claude-code") == {claude.pk}
    assert shown("class=destructive") == {delete.pk}
    assert shown("class=remote-mutation") == {push.pk, claude.pk}
    assert shown(f"run={push.run_id}") == {push.pk}
    assert shown(f"session={delete.run.session_id}") == {delete.pk}
    assert shown("started_by=bob") == {delete.pk}
    assert shown("mine=1") == {push.pk}
    assert shown("kind=permission&driver=scripted&started_by=alice") == {push.pk}
    page = client.get("/?class=destructive").content.decode()
    assert '<span id="pending-count" class="count" data-count="1">1</span> waiting that match' in page
    assert 'ws-connect="/ws/inbox/?class=destructive"' in page
    assert "Clear filters" in page


@pytest.mark.parametrize(
    ("query", "field"),
    [("kind=sometimes", "kind"), ("driver=nope", "driver"), ("class=harmless", "side_effect_class"), ("run=abc", "run"),
     ("session=-1", "session"), ("cursor=%%%", "cursor"), ("sort=random", "sort")],
)
def test_a_bad_filter_is_refused_naming_it(client: Client, alice: Any, make_approval: Callable[..., Any], query: str, field: str) -> None:
    approval = make_approval()
    client.force_login(alice)
    response = client.get(f"/?{query}")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    html = response.content.decode()
    assert f"<code>{field}</code>" in html and 'role="alert"' in html
    assert f'id="approval-{approval.pk}"' not in html  # nothing shown under a filter it could not apply


# --- Pages ------------------------------------------------------------------------------------


def test_first_page_soonest_deadline_first_then_next_page_by_cursor(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    late = [make_approval(f"git push origin b{i}", run_policy=with_timeout(600 + i)) for i in range(14)]
    never = [make_approval(f"git push origin n{i}", run_policy=NO_DEADLINE) for i in range(3)]
    soon = [make_approval(f"git push origin s{i}", run_policy=with_timeout(60 + i)) for i in range(12)]
    client.force_login(alice)

    first = client.get("/").content.decode()
    assert card_ids(first) == [a.pk for a in soon + late[:13]]
    assert "29</span> waiting" in first
    next_link = re.search(r'<a href="\?([^"]+)" rel="next">', first)
    assert next_link, first
    second = client.get("/?" + next_link.group(1).replace("&amp;", "&")).content.decode()
    assert card_ids(second) == [late[13].pk] + [a.pk for a in never]  # no deadline: last
    assert 'rel="next"' not in second and "First page" in second
    assert "page=later" in second  # a later page's socket only counts new requests

    oldest = card_ids(client.get("/?sort=oldest").content.decode())
    assert oldest == sorted(a.pk for a in late + never + soon)[:25]
    assert card_ids(client.get("/?sort=newest").content.decode()) == sorted((a.pk for a in late + never + soon), reverse=True)[:25]


def test_the_inbox_asks_the_same_number_of_queries_for_3_or_30_cards(
    client: Client, alice: Any, make_approval: Callable[..., Any], django_assert_max_num_queries: Any
) -> None:
    """No query per card: the page is a count, the page's rows (run, session, starter and
    step joined), the recent runs and the session/permission lookups of the request."""
    client.force_login(alice)
    for i in range(3):
        make_approval(f"git push origin few{i}", driver="claude-code" if i == 0 else "scripted")
    client.get("/")  # warm the session and permission caches like any later request
    with django_assert_max_num_queries(8) as few:
        assert client.get("/").status_code == HTTPStatus.OK
    for i in range(30):
        make_approval(f"git push origin many{i}", driver="claude-code" if i % 3 == 0 else "scripted")
    with django_assert_max_num_queries(len(few.captured_queries)) as many:
        html = client.get("/").content.decode()
    assert len(card_ids(html)) == 25
    assert len(many.captured_queries) == len(few.captured_queries)


def test_the_api_pending_list_reads_the_same_selector_with_a_bounded_number_of_queries(
    api: Any, make_approval: Callable[..., Any], django_assert_max_num_queries: Any
) -> None:
    approvals = [make_approval(f"git push origin api{i}") for i in range(12)]
    with django_assert_max_num_queries(4):
        body = api.get("/api/v1/approvals/?status=pending&limit=10").json()
    assert body["count"] == 12 and len(body["results"]) == 10
    assert [a["id"] for a in body["results"]] == [a.pk for a in approvals[:10]]  # oldest first, as before
    one = api.get(f"/api/v1/approvals/?status=pending&run={approvals[3].run_id}").json()
    assert [a["id"] for a in one["results"]] == [approvals[3].pk] and one["results"][0]["step"] == 1


# --- What a card says -------------------------------------------------------------------------


def test_a_card_counts_down_to_its_deadline_and_says_what_happens_then(
    client: Client, alice: Any, make_approval: Callable[..., Any], clock: Any
) -> None:
    make_approval(run_policy=with_timeout(300, on_timeout="continue"))
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert re.search(r'<p class="deadline" data-deadline="[^"]+">', html)
    assert 'Decide within <span class="countdown" role="timer">5:00</span>' in html
    assert "then the agent goes on without it (on timeout: continue)" in html
    assert "data-server-now=" in html

    clock.advance(250)
    html = client.get("/").content.decode()
    assert re.search(r'<p class="deadline urgent" data-deadline=', html)
    assert '<span class="countdown" role="timer">0:50</span>' in html


def test_a_card_without_a_deadline_shows_no_countdown(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    make_approval(run_policy=NO_DEADLINE)
    client.force_login(alice)
    assert 'class="countdown"' not in client.get("/").content.decode()


def test_who_asks_the_agent_the_prompt_and_the_session(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    from runs.models import AgentSession

    approval = make_approval(prompt="Fix the flaky login test\n\nIt fails on CI.", driver="codex")
    AgentSession.objects.filter(pk=approval.run.session_id).update(title="Login <b>fixes</b>")
    client.force_login(alice)
    html = client.get("/").content.decode()
    asker = re.search(r'<p class="asker">(.*?)</p>', html, re.S)
    assert asker, html
    text = asker.group(1)
    assert '<span class="agent-name">Codex</span>' in text
    assert "“Fix the flaky login test”" in text and "It fails on CI" not in text
    assert "session “Login &lt;b&gt;fixes&lt;/b&gt;”" in text
    assert f'href="/sessions/{approval.run.session_id}/"' in text


def test_a_claude_code_sub_agents_request_names_the_sub_agent(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    """The driver logs each tool call and result (with its tool_use_id); a request made
    while a Task (sub-agent) call is open is that sub-agent's."""
    from approvals.gate import gate_request
    from runs.timeline import activity_record

    before = make_approval("git push origin main", driver="claude-code")
    run = before.run
    task = {"phase": "call", "tool_use_id": "toolu_task1", "name": "Task", "tool": "Task",
            "input": {"subagent_type": "code-reviewer", "description": "Review the <diff>", "prompt": "..."}}
    activity_record(run_id=run.pk, kind="tool", event="tool", payload=task)
    inside = gate_request(run_id=run.pk, tool="bash", input={"command": "git push origin review"}, cwd=run.workspace, subtype="command",
                          presentation={"title": "Push the review branch"})
    activity_record(run_id=run.pk, kind="tool", event="tool", payload={"phase": "result", "tool_use_id": "toolu_task1", "name": "Task", "output": "ok"})
    after = gate_request(run_id=run.pk, tool="bash", input={"command": "git push origin after"}, cwd=run.workspace, subtype="command")
    client.force_login(alice)
    html = client.get("/").content.decode()

    def asker_of(approval_id: int) -> str:
        start = html.index(f'<article id="approval-{approval_id}"')
        return re.search(r'<p class="asker">(.*?)</p>', html[start:], re.S).group(1)  # type: ignore[union-attr]

    assert "sub-agent <strong class=\"agent-text\">code-reviewer (Review the &lt;diff&gt;)</strong>" in asker_of(inside.approval_id)
    assert "sub-agent" not in asker_of(before.pk)
    assert "sub-agent" not in asker_of(after.approval_id)
    assert "Claude Code" in asker_of(before.pk)


def test_a_script_is_explained_command_by_command_with_the_one_that_asks_highlighted(
    client: Client, alice: Any, make_approval: Callable[..., Any]
) -> None:
    approval = make_approval("ls && git push origin main && cat README.md")
    client.force_login(alice)
    html = client.get("/").content.decode()
    explain = html[html.index('<ol class="segments"'):html.index("</ol>", html.index('<ol class="segments"'))]
    rows = re.findall(r'<li class="segment( deciding)?">\s*<code class="segment-command">([^<]*)</code>', explain)
    assert [(bool(d), c) for d, c in rows] == [(False, "ls"), (True, "git push origin main"), (False, "cat README.md")]
    assert "this is why it asks" in explain and "remote-mutation" in explain and "read-only" in explain
    assert approval.step.rule in explain


def test_the_explanation_shows_a_working_directory_outside_the_root_and_degrades_without_fields(
    client: Client, alice: Any, make_approval: Callable[..., Any]
) -> None:
    from runs.models import Step

    approval = make_approval("cd /var/www && rm -rf *", policy={"default": "ask", "classes": {"read-only": "allow", "destructive": "ask"}})
    workspace = approval.run.workspace
    Step.objects.filter(pk=approval.step_id).update(segments=[
        {"command": "cd /var/www", "decision": "allow", "side_effect_class": "read-only", "cwd": workspace},
        {"command": "rm -rf *", "decision": approval.step.verdict, "rule": "classes.destructive", "cwd": "/var/www"},
        {"words": ["make", "clean"], "cwd": f"{workspace}/sub"},  # no decision, class or rule
        "not a segment",
    ])
    client.force_login(alice)
    html = client.get("/").content.decode()
    explain = html[html.index('<ol class="segments"'):]
    assert "in <code>/var/www</code> <strong>(outside the workspace)</strong>" in explain
    assert "in <code>sub</code>" in explain and "make clean" in explain
    assert explain.count('class="segment-cwd"') == 2  # the workspace root itself is not said


def test_a_single_command_in_the_workspace_needs_no_explanation_list(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    make_approval("git push origin main")
    client.force_login(alice)
    assert 'class="segments"' not in client.get("/").content.decode()


# --- Batch decisions --------------------------------------------------------------------------


def batch(client: Client, decision: str, approvals: list[Any], *, reason: str = "", hashes: dict[int, str] | None = None, **extra: Any) -> Any:
    items = [f"{a.pk}:{(hashes or {}).get(a.pk, a.hash)}" for a in approvals]
    return client.post(
        "/approvals/batch/", {"decision": decision, "item": items, "reason": reason, **extra}, headers=htmx_headers(client)
    )


def test_batch_approve_decides_each_once_with_its_own_hash_and_never_a_grant(
    csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]
) -> None:
    approvals = [make_approval(f"npm install pkg{i}", policy={"classes": {"local-mutation": "ask"}, "default": "ask"}) for i in range(3)]
    assert all(a.suggested_grant for a in approvals)
    stale = make_approval("git push origin stale")
    client = csrf_client(alice)

    response = batch(client, "approve", [*approvals, stale], hashes={stale.pk: "0" * 64}, scope="session")

    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert "Approved 3 requests, each once (no grant)." in html
    assert f'<a href="#approval-{stale.pk}">Request {stale.pk}</a>: The request changed' in html
    for a in approvals:
        a.refresh_from_db()
        assert (a.status, a.scope, a.decided_by, a.decided_via) == ("approved", "once", alice, "console")
        assert f'hx-swap-oob="outerHTML:#approval-{a.pk}"' in html
    stale.refresh_from_db()
    assert stale.status == Approval.Status.PENDING
    assert not Grant.objects.exists()


def test_batch_deny_gives_each_agent_the_reason(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approvals = [make_approval(f"git push origin d{i}") for i in range(2)]
    client = csrf_client(alice)
    html = batch(client, "deny", approvals, reason="not before the release").content.decode()
    assert "Denied 2 requests, each once." in html
    for a in approvals:
        a.refresh_from_db()
        assert (a.status, a.reason) == ("denied", "not before the release")


def test_with_four_eyes_a_batch_never_decides_the_reviewers_own_runs(
    settings: Any, csrf_client: Callable[[Any], Client], alice: Any, make_user: Callable[..., Any], make_approval: Callable[..., Any]
) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    bob = make_user("bob", superuser=False)
    own = make_approval("git push origin mine", user=alice)
    other = make_approval("git push origin theirs", user=bob)
    client = csrf_client(alice)
    page = client.get("/").content.decode()
    assert re.search(rf'value="{own.pk}:{own.hash}" disabled>', page)  # its checkbox is greyed out too

    html = batch(client, "approve", [own, other]).content.decode()

    own.refresh_from_db()
    other.refresh_from_db()
    assert own.status == Approval.Status.PENDING and other.status == Approval.Status.APPROVED
    assert f"Request {own.pk}</a>: You started run #{own.run_id}" in html


def test_batch_refusals_and_permissions(csrf_client: Callable[[Any], Client], alice: Any, viewer: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval()
    client = csrf_client(alice)
    assert "Select at least one request" in batch(client, "approve", []).content.decode()
    assert "Choose Approve each or Deny each." in batch(client, "maybe", [approval]).content.decode()
    no_hash = client.post("/approvals/batch/", {"decision": "approve", "item": [f"{approval.pk}"]}, headers=htmx_headers(client))
    assert "No hash" in no_hash.content.decode()
    assert batch(csrf_client(viewer), "approve", [approval]).status_code == HTTPStatus.FORBIDDEN
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING

    plain = client.post("/approvals/batch/", {"decision": "approve", "item": [f"{approval.pk}:{approval.hash}"]},
                        headers={"X-CSRFToken": client.csrf_token, "Referer": "http://testserver/?kind=permission"})  # type: ignore[attr-defined]
    assert plain.status_code == HTTPStatus.FOUND and plain["Location"] == "http://testserver/?kind=permission"
    approval.refresh_from_db()
    assert approval.status == Approval.Status.APPROVED


def test_the_inbox_offers_batch_selection_only_for_permissions(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    permission = make_approval()
    plan = make_approval(tool="ExitPlanMode", input={"plan": "# P"}, kind="plan_review", subtype="plan", presentation={"title": "Plan", "plan": "# P"})
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert f'value="{permission.pk}:{permission.hash}"' in html and f'value="{plan.pk}:' not in html
    assert 'id="batch-form"' in html and DECIDE


# --- Live updates with filters ---------------------------------------------------------------


def test_catch_up_of_a_filtered_page_keeps_its_filter(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    push = make_approval("git push origin main")
    make_approval("git push origin dev", driver="codex")
    client.force_login(alice)
    page = client.get("/?driver=scripted").content.decode()
    assert 'hx-get="/?driver=scripted"' in page
    cards = client.get("/?driver=scripted", headers={"HX-Request": "true", "HX-Target": "approvals"}).content.decode()
    assert "<html" not in cards and card_ids(cards) == [push.pk]


def test_the_policy_s_working_directory_after_a_cd_is_shown(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    """The hidden `cd /var/www && ` before a command: the policy core records where each
    command runs, and the card says it (here outside the workspace)."""
    approval = make_approval("cd /var/www && git push origin main")
    client.force_login(alice)
    html = client.get("/").content.decode()
    explain = html[html.index('<ol class="segments"'):]
    explain = explain[: explain.index("</ol>")]
    assert [s.get("cwd") for s in approval.step.segments][1], approval.step.segments
    assert "in <code>/var/www</code> <strong>(outside the workspace)</strong>" in explain


@pytest.mark.parametrize(("verb", "shown"), [("approve", "current"), ("deny", "current"), ("approve", "older")])
def test_a_late_decision_records_the_expiry_itself_with_no_worker_running(
    api: Any, make_approval: Callable[..., Any], clock: Any, verb: str, shown: str
) -> None:
    from approvals.models import Approval
    from runs.models import Activity

    approval = make_approval("git push origin late", run_policy={"approvals": {"timeout_s": 60}})
    clock.advance(61)
    hash = approval.hash if shown == "current" else "0" * 64  # late with an older page: still "expired"
    response = api.post(f"/api/v1/approvals/{approval.pk}/{verb}/", {"hash": hash}, format="json")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.GONE, "expired")
    row = Approval.objects.get(pk=approval.pk)
    assert (row.status, row.decided_via, row.decided_by_id) == ("expired", "timeout", None)
    resolved = Activity.objects.filter(run_id=approval.run_id, event="approval.resolved").values_list("payload", flat=True)
    assert [p["decision"] for p in resolved] == ["expired"]  # the refused decision left nothing of its own


def test_a_decision_through_the_api_is_a_bounded_number_of_statements(
    api: Any, make_approval: Callable[..., Any], django_assert_max_num_queries: Any
) -> None:
    """bench/decision_latency.py's approve: one transaction that reads the approval with its
    run (locked) and step in one statement, writes the decision and its activity, and sets
    the run's status (whether the run sleeps is read with the approval; no expiry read before
    it: a deadline found passed rolls the transaction back and records the expiry)."""
    from runs.models import Run

    approval = make_approval("git push origin decided")
    Run.objects.filter(pk=approval.run_id).update(status=Run.Status.WAITING)  # as a worker leaves it
    with django_assert_max_num_queries(8):
        response = api.post(f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["status"] == "approved"
    assert Run.objects.get(pk=approval.run_id).status == Run.Status.RUNNING  # nothing else pending
