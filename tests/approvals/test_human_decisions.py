"""Human decisions done right: fallbacks, retries, exactly-once, hashes, grants, questions,
plans, runtime modes — through the worker, the services and the API."""

from __future__ import annotations

import dataclasses
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval
from runs.models import Activity, Step
from tests.flow import decide, eventually, finished, lease_gone_stale, messages, pending_approval, start_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("standard_review_default")]

PUSH = {"steps": [{"tool": "bash", "input": {"command": "git push origin main"}}, {"message": "pushed"}]}
# An awk program that writes a file: code the policy cannot read, so it is asked (a plain
# `echo hi > out.txt` inside the workspace is a local edit, allowed by the default policy).
WRITE_OUT_COMMAND = """awk 'BEGIN { print "hi" > "out.txt" }'"""
WRITE_OUT = {"steps": [{"tool": "bash", "input": {"command": WRITE_OUT_COMMAND}}]}


def approvals_of(run_id: int) -> list[Approval]:
    return list(Approval.objects.filter(run_id=run_id).order_by("id"))


# --- Timeouts and their fallbacks -----------------------------------------------------------


async def test_timeout_with_abort_fails_the_run(api: Any, worker: Any, clock: Any) -> None:
    run = await start_run(api, PUSH, run_policy={"approvals": {"timeout_s": 300, "on_timeout": "abort"}})
    await pending_approval(api, run["id"])
    clock.advance(301)
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "approval_timeout")
    (approval,) = await sync_to_async(approvals_of)(run["id"])
    assert (approval.status, approval.decided_via) == ("expired", "timeout")


async def test_before_the_deadline_nothing_expires(api: Any, worker: Any, clock: Any) -> None:
    run = await start_run(api, PUSH, run_policy={"approvals": {"timeout_s": 300, "on_timeout": "abort"}})
    approval = await pending_approval(api, run["id"])
    clock.advance(299)
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
    assert (await finished(run["id"])).status == "completed"


async def test_timeout_with_continue_hands_the_agent_a_typed_refusal(api: Any, worker: Any, clock: Any) -> None:
    run = await start_run(api, PUSH, run_policy={"approvals": {"timeout_s": 300, "on_timeout": "continue"}})
    await pending_approval(api, run["id"])
    clock.advance(301)
    done = await finished(run["id"])
    assert done.status == "completed"
    said = await sync_to_async(messages)(run["id"])
    assert said[0] == "The request was refused: No reviewer answered within 300 s."
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert step.status == "denied"


async def test_timeout_with_retry_renews_the_request_then_aborts(api: Any, worker: Any, clock: Any) -> None:
    policy = {"approvals": {"timeout_s": 300, "on_timeout": "retry", "max_retries": 2}}
    run = await start_run(api, PUSH, run_policy=policy)
    for attempt in (1, 2, 3):
        await eventually(lambda attempt=attempt: Approval.objects.filter(run_id=run["id"], status="pending", attempt=attempt).exists())
        clock.advance(301)
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "approval_timeout")
    rows = await sync_to_async(approvals_of)(run["id"])
    assert [a.attempt for a in rows] == [1, 2, 3]
    assert len({a.hash for a in rows}) == 3


async def test_denial_with_retry_asks_again_and_the_second_answer_counts(api: Any, worker: Any) -> None:
    run = await start_run(api, WRITE_OUT, run_policy={"approvals": {"on_reject": "retry"}})
    first = await pending_approval(api, run["id"])
    assert (await decide(api, first, "deny", reason="not yet")).status_code == HTTPStatus.OK

    second = await eventually(
        lambda: Approval.objects.filter(run_id=run["id"], status="pending", attempt=2).values("id", "hash").first()
    )
    assert second["hash"] != first["hash"]
    # The first request's hash is no longer the live request.
    stale = await decide(api, {"id": second["id"], "hash": first["hash"]}, "approve")
    assert (stale.status_code, stale.json()["code"]) == (HTTPStatus.CONFLICT, "stale")
    assert (await decide(api, second, "approve")).status_code == HTTPStatus.OK
    done = await finished(run["id"])
    assert done.status == "completed"
    assert (Path(done.workspace) / "out.txt").exists()


async def test_retry_on_a_driver_without_retry_warns_once_and_aborts(api: Any, worker: Any, monkeypatch: Any) -> None:
    from drivers import scripted

    monkeypatch.setattr(scripted, "DESCRIPTOR", dataclasses.replace(scripted.DESCRIPTOR, retry=False))
    run = await start_run(api, WRITE_OUT, run_policy={"approvals": {"on_reject": "retry"}})
    approval = await pending_approval(api, run["id"])
    await decide(api, approval, "deny", reason="no")
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "approval_denied")
    notices = await sync_to_async(
        lambda: [a.payload for a in Activity.objects.filter(run_id=run["id"], event="notice")]
    )()
    assert notices == [{"warning": "human_decision_retry_unsupported", "driver": "scripted"}]
    assert len(await sync_to_async(approvals_of)(run["id"])) == 1


async def test_a_decision_after_the_deadline_is_refused_as_expired(api: Any, worker: Any, clock: Any) -> None:
    run = await start_run(api, PUSH, run_policy={"approvals": {"timeout_s": 300, "on_timeout": "abort"}})
    approval = await pending_approval(api, run["id"])
    clock.advance(301)
    response = await decide(api, approval, "approve")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.GONE, "expired")
    assert (await finished(run["id"])).failure_reason == "approval_timeout"
    row = await sync_to_async(Approval.objects.get)(pk=approval["id"])
    assert (row.status, row.decided_via, row.decided_by_id) == ("expired", "timeout", None)


# --- Verbs, kinds and routing ----------------------------------------------------------------------


async def test_auto_approve_and_auto_deny_are_recorded_as_the_policy(api: Any, worker: Any) -> None:
    approved = await start_run(api, WRITE_OUT, run_policy={"approvals": {"permission": "auto-approve"}})
    denied = await start_run(api, WRITE_OUT, run_policy={"approvals": {"permission": "auto-deny", "on_reject": "continue"}})
    assert (await finished(approved["id"])).status == "completed"
    assert (await finished(denied["id"])).status == "completed"
    steps = await sync_to_async(lambda: {s.run_id: (s.status, s.decided_by) for s in Step.objects.all()})()
    assert steps[approved["id"]] == ("finished", "policy")
    assert steps[denied["id"]] == ("denied", "policy")
    assert not await sync_to_async(Approval.objects.exists)()


QUESTION = {
    "questions": [
        {"id": "color", "header": "Color", "question": "Which color?", "options": [{"label": "Red"}, {"label": "Blue"}],
         "multi_select": False, "allow_other": False},
        {"id": "scope", "header": "Scope", "question": "Which parts?", "options": [{"label": "Auth"}, {"label": "Export"}],
         "multi_select": True, "allow_other": False},
        {"id": "name", "header": "Name", "question": "What name?", "options": [], "multi_select": False, "allow_other": True},
    ]
}


async def test_question_is_answered_with_a_record_keyed_by_id(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"question": QUESTION}]}, run_policy={"approvals": {"question": "ask"}})
    approval = await pending_approval(api, run["id"])
    assert approval["kind"] == "question"

    wrong_verb = await decide(api, approval, "approve")
    assert (wrong_verb.status_code, wrong_verb.json()["code"]) == (HTTPStatus.BAD_REQUEST, "kind_mismatch")
    # (a partial answer is accepted since issue 30: tests/approvals/test_answers.py; an empty one is not)
    empty = await decide(api, approval, "answer", answers={})
    assert (empty.status_code, empty.json()["message"]) == (HTTPStatus.BAD_REQUEST, "Answer at least one question, or decline.")

    answers = {"color": ["Red"], "scope": ["Auth", "Export"], "name": "free text"}
    response = await decide(api, approval, "answer", answers=answers)
    assert response.status_code == HTTPStatus.OK, response.content
    assert (await finished(run["id"])).status == "completed"
    resolved = await sync_to_async(Activity.objects.get)(run_id=run["id"], event="user-input.resolved")
    assert resolved.payload["answers"] == answers
    assert resolved.kind == "user-input"


async def test_declined_question_gives_the_agent_no_answer(api: Any, worker: Any) -> None:
    run = await start_run(
        api, {"steps": [{"question": QUESTION}]}, run_policy={"approvals": {"question": "ask", "on_reject": "continue"}}
    )
    approval = await pending_approval(api, run["id"])
    assert (await decide(api, approval, "answer", decline=True)).status_code == HTTPStatus.OK
    assert (await finished(run["id"])).status == "completed"
    said = await sync_to_async(messages)(run["id"])
    assert said == ["The request was refused: No human answer: the reviewer declined the question."]


async def test_question_under_auto_deny_is_declined_without_asking(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"question": QUESTION}]}, run_policy={"approvals": {"question": "auto-deny"}})
    assert (await finished(run["id"])).status == "completed"
    said = await sync_to_async(messages)(run["id"])
    assert said == ["The request was refused: No human answer: questions are declined by the run policy."]
    assert not await sync_to_async(Approval.objects.exists)()


async def test_plan_approved_with_accept_edits(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"plan": "# Plan\n1. Write the file"}]})
    approval = await pending_approval(api, run["id"])
    assert approval["kind"] == "plan_review" and approval["presentation"]["plan"].startswith("# Plan")
    assert (await decide(api, approval, "approve", mode="accept-edits")).status_code == HTTPStatus.OK
    assert (await finished(run["id"])).status == "completed"
    assert await sync_to_async(messages)(run["id"]) == ["The plan was approved; continuing in accept-edits mode."]


async def test_plan_sent_back_with_feedback(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"plan": "# Plan"}]}, run_policy={"approvals": {"on_reject": "continue"}})
    approval = await pending_approval(api, run["id"])
    await decide(api, approval, "deny", reason="Add tests first.")
    assert (await finished(run["id"])).status == "completed"
    assert await sync_to_async(messages)(run["id"]) == ["The request was refused: Add tests first."]


# --- Exactly once -----------------------------------------------------------------------------------


def test_twenty_concurrent_decisions_have_exactly_one_winner(reviewer: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections

    from approvals.errors import ApprovalError
    from approvals.gate import gate_request
    from approvals.services import approval_decide
    from runs.services import run_create

    run = run_create(driver="scripted", scenario=WRITE_OUT, user=reviewer)
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": WRITE_OUT_COMMAND}, cwd=run.workspace)
    approval = Approval.objects.get(pk=outcome.approval_id)

    def attempt(index: int) -> str:
        try:
            approval_decide(
                approval_id=approval.pk, user=reviewer, approve=index % 2 == 0, reason=f"r{index}", hash=approval.hash
            )
            return "won"
        except ApprovalError as exc:
            return exc.code
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(attempt, range(20)))
    assert results.count("won") == 1
    assert results.count("already_resolved") == 19
    assert Activity.objects.filter(run=run, event="approval.resolved").count() == 1


# --- Grants -------------------------------------------------------------------------------------------


async def test_always_allow_stores_a_grant_that_allows_later_requests(api: Any, worker: Any) -> None:
    build = {"steps": [{"tool": "bash", "input": {"command": "npm run build"}}]}
    first = await start_run(api, build, run_policy={"approvals": {"on_reject": "continue"}})
    approval = await pending_approval(api, first["id"])
    assert approval["suggested_grant"] == {"tool": "bash", "match": "npm run build"}
    response = await decide(api, approval, "approve", scope="session")
    assert response.status_code == HTTPStatus.OK
    await finished(first["id"])

    grants = (await sync_to_async(api.get)(f"/api/v1/sessions/{first['session']}/grants/")).json()
    assert [g["rule"] for g in grants] == [{"tool": "bash", "match": "npm run build"}]

    second = await start_run(api, build, session=first["session"])
    assert (await finished(second["id"])).status == "completed"
    step = await sync_to_async(Step.objects.get)(run_id=second["id"])
    assert (step.status, step.decided_by, step.grant_id) == ("finished", "grant", grants[0]["id"])

    # Revoked: the next identical request asks again.
    assert (await sync_to_async(api.delete)(f"/api/v1/grants/{grants[0]['id']}/")).status_code == HTTPStatus.OK
    third = await start_run(api, build, session=first["session"])
    await pending_approval(api, third["id"])


async def test_a_grant_never_turns_a_deny_into_an_allow(api: Any, worker: Any) -> None:
    from approvals.services import grant_create

    run = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": "rm -rf build"}}]})
    await sync_to_async(grant_create)(session_id=run["session"], rule={"tool": "bash", "match": "rm"})
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("completed", "")
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert (step.verdict, step.status, step.grant_id) == ("deny", "denied", None)


# --- Runtime modes --------------------------------------------------------------------------------------


async def test_runtime_modes_shape_what_an_ask_becomes(api: Any, worker: Any) -> None:
    strict = {"edits": {"default": "ask"}, "classes": {"read-only": "allow", "local-mutation": "ask",
              "remote-mutation": "ask", "destructive": "deny"}, "default": "ask"}
    from approvals.models import Policy
    from approvals.services import policy_save

    await sync_to_async(policy_save)(policy=Policy(name="strict", document=strict))
    scenario = {"steps": [
        {"tool": "write", "input": {"file_path": "a.txt", "content": "a"}},
        {"tool": "bash", "input": {"command": "rm -rf tmp"}},
    ]}
    run = await start_run(api, scenario, policy="strict", run_policy={"approvals": {"on_reject": "continue"}})
    await pending_approval(api, run["id"])  # approval-required keeps the ask
    await sync_to_async(api.post)(f"/api/v1/runs/{run['id']}/cancel/")
    await finished(run["id"])

    response = await sync_to_async(api.patch)(
        f"/api/v1/sessions/{run['session']}/", {"runtime_mode": "auto-accept-edits"}, format="json"
    )
    assert response.status_code == HTTPStatus.OK
    second = await start_run(api, scenario, policy="strict", session=run["session"])
    assert (await finished(second["id"])).status == "completed"
    steps = await sync_to_async(lambda: [(s.status, s.decided_by) for s in Step.objects.filter(run_id=second["id"])])()
    assert steps == [("finished", "mode"), ("denied", "policy")]  # the deny holds in every mode


async def test_unknown_runtime_mode_is_refused(api: Any) -> None:
    run = await start_run(api, {"steps": [{"message": "hi"}]})
    response = await sync_to_async(api.patch)(f"/api/v1/sessions/{run['session']}/", {"runtime_mode": "yolo"}, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json()["field"] == "runtime_mode"


# --- Limits ------------------------------------------------------------------------------------------------


async def test_crossing_a_limit_aborts_the_run_with_policy_abort(api: Any, worker: Any) -> None:
    from approvals.models import Policy
    from approvals.services import policy_save

    await sync_to_async(policy_save)(policy=Policy(name="tight", document={"limits": {"max_tool_calls": 1}, "default": "allow"}))
    scenario = {"steps": [{"tool": "bash", "input": {"command": "true"}}, {"tool": "bash", "input": {"command": "true"}}]}
    run = await start_run(api, scenario, policy="tight")
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "policy_abort")


# --- Cancel and crashes ----------------------------------------------------------------------------------


async def test_cancel_while_waiting_expires_the_approval_and_cancels_the_run(api: Any, worker: Any) -> None:
    run = await start_run(api, WRITE_OUT)
    approval = await pending_approval(api, run["id"])
    response = await sync_to_async(api.post)(f"/api/v1/runs/{run['id']}/cancel/")
    assert response.status_code == HTTPStatus.OK
    assert (await finished(run["id"])).status == "cancelled"
    late = await decide(api, approval, "approve")
    assert (late.status_code, late.json()["code"]) == (HTTPStatus.GONE, "expired")


async def test_a_second_worker_takes_over_and_applies_the_decision_made_meanwhile(
    api: Any, reviewer: Any, settings: Any
) -> None:
    """Worker A dies while the run waits; the reviewer decides meanwhile; worker B reclaims
    the lease, replays the run and applies the decision without asking again."""
    import asyncio

    from drivers.worker import Supervisor
    from runs.models import Run

    settings.GATEHOUSE_LEASE_TTL_S = 0.5
    run = await start_run(api, {"steps": [{"message": "before"}, *WRITE_OUT["steps"], {"message": "after"}]})
    first = Supervisor()
    assert await first.start_run(run["id"])
    approval = await pending_approval(api, run["id"])
    first.tasks[run["id"]].cancel()  # the worker process dies: no status change, the lease goes stale
    await asyncio.gather(*first.tasks.values(), return_exceptions=True)
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK

    second = Supervisor()
    await lease_gone_stale(run["id"])
    await second.reconcile()
    done = await finished(run["id"])
    assert done.status == "completed"
    assert (Path(done.workspace) / "out.txt").exists()
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1
    assert await sync_to_async(messages)(run["id"]) == ["before", "after"]
    log = await sync_to_async(lambda: list(Activity.objects.filter(run_id=run["id"]).values_list("event", flat=True)))()
    assert "run.resumed" in log
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)
    assert await sync_to_async(lambda: Run.objects.get(pk=run["id"]).owner)() == ""


async def test_an_interrupted_side_effect_is_asked_again_and_rechecked(api: Any, reviewer: Any, settings: Any) -> None:
    """A step allowed but never reported finished (the worker died mid-command) becomes an
    `interrupted_side_effect` approval; approved, it runs again only if the policy still allows."""
    import asyncio

    from approvals.gate import gate_request
    from drivers.worker import Supervisor
    from runs.models import Run
    from runs.services import run_mark_running

    settings.GATEHOUSE_LEASE_TTL_S = 0.5
    touch = {"steps": [{"tool": "bash", "input": {"command": "touch made.txt"}}]}
    run = await start_run(api, touch)
    # The state a dead worker leaves: the step allowed (touch is a local mutation), never finished.
    outcome = await sync_to_async(gate_request)(
        run_id=run["id"], tool="bash", input={"command": "touch made.txt"}, cwd=run["workspace"], subtype="command"
    )
    assert outcome.outcome == "allow"
    await sync_to_async(run_mark_running)(run_id=run["id"])
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(owner="dead-worker")

    await lease_gone_stale(run["id"])
    sup = Supervisor()
    await sup.reconcile()
    approval = await pending_approval(api, run["id"])
    assert approval["kind"] == "interrupted_side_effect"
    assert approval["capability"]["tool"] == "bash" and approval["capability"]["args"] == {"command": "touch made.txt"}
    assert not (Path(run["workspace"]) / "made.txt").exists()
    await decide(api, approval, "approve")
    done = await finished(run["id"])
    assert done.status == "completed"
    assert (Path(run["workspace"]) / "made.txt").exists()
    await asyncio.gather(*sup.tasks.values(), return_exceptions=True)


async def test_an_approved_interruption_pauses_again_when_the_policy_now_asks(api: Any, reviewer: Any, settings: Any) -> None:
    import asyncio

    from approvals.gate import gate_request
    from drivers.worker import Supervisor
    from runs.models import Run
    from runs.services import run_mark_running

    settings.GATEHOUSE_LEASE_TTL_S = 0.5
    touch = {"steps": [{"tool": "bash", "input": {"command": "touch made.txt"}}]}
    run = await start_run(api, touch)
    await sync_to_async(gate_request)(
        run_id=run["id"], tool="bash", input={"command": "touch made.txt"}, cwd=run["workspace"], subtype="command"
    )
    await sync_to_async(run_mark_running)(run_id=run["id"])
    # The policy the run is re-checked under now asks for every command.
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(owner="dead-worker", policy_document={"default": "ask"})

    await lease_gone_stale(run["id"])
    sup = Supervisor()
    await sup.reconcile()
    interrupted = await pending_approval(api, run["id"])
    await decide(api, interrupted, "approve")
    renewed = await eventually(
        lambda: Approval.objects.filter(run_id=run["id"], status="pending", kind="permission").values("id", "hash").first()
    )
    assert not (Path(run["workspace"]) / "made.txt").exists()
    await decide(api, renewed, "approve")
    assert (await finished(run["id"])).status == "completed"
    assert (Path(run["workspace"]) / "made.txt").exists()
    await asyncio.gather(*sup.tasks.values(), return_exceptions=True)


async def test_a_restarted_embedded_server_takes_over_at_once_from_its_dead_predecessor(api: Any, settings: Any) -> None:
    """The lease TTL is long here; a dead local owner (its pid is gone) frees the run anyway."""
    import asyncio
    import socket
    import subprocess

    from drivers.worker import Supervisor
    from runs.models import Run

    settings.GATEHOUSE_LEASE_TTL_S = 3600
    gone = subprocess.Popen(["true"])
    gone.wait()
    run = await start_run(api, {"steps": [{"message": "hi"}]})
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(owner=f"{socket.gethostname()}:{gone.pid}:dead")
    alive = await sync_to_async(Run.objects.create)(
        session_id=run["session"], driver="scripted", scenario={"steps": [{"message": "x"}]}, workspace=run["workspace"],
        owner=f"{socket.gethostname()}:{__import__('os').getpid()}:alive",
    )
    from django.utils import timezone

    await sync_to_async(Run.objects.filter(pk=alive.pk).update)(heartbeat_at=timezone.now())
    sup = Supervisor()
    await sup.reconcile()
    assert (await finished(run["id"])).status == "completed"
    assert alive.pk not in sup.tasks  # a live owner keeps its lease
    await asyncio.gather(*sup.tasks.values(), return_exceptions=True)


async def test_a_worker_that_lost_its_lease_stops_and_leaves_the_run_to_the_new_owner(api: Any, settings: Any) -> None:
    import asyncio

    from drivers.worker import Supervisor
    from runs.models import Run

    run = await start_run(api, WRITE_OUT)
    stale = Supervisor()
    assert await stale.start_run(run["id"])
    await pending_approval(api, run["id"])
    # Another worker took the lease while this one stalled.
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(owner="elsewhere:1:new")
    stale.ensure_background()
    await asyncio.wait_for(asyncio.gather(*stale.tasks.values(), return_exceptions=True), timeout=10)
    row = await sync_to_async(Run.objects.get)(pk=run["id"])
    assert (row.status, row.owner) == ("waiting", "elsewhere:1:new")
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"], status="pending").count)() == 1
    stale._background.cancel()  # type: ignore[union-attr]


def test_a_question_is_never_auto_approved_even_if_the_stored_policy_says_so(reviewer: Any) -> None:
    """parse_run_policy refuses question auto-approve; the gate holds the line too, so a
    hand-edited row cannot make the agent read an invented answer."""
    from approvals.gate import gate_request
    from runs.models import Run
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"question": QUESTION}]}, user=reviewer)
    policy = dict(run.run_policy)
    policy["approvals"] = {**policy["approvals"], "question": "auto-approve"}
    Run.objects.filter(pk=run.pk).update(run_policy=policy)
    outcome = gate_request(run_id=run.pk, tool="AskUserQuestion", input=QUESTION, cwd=run.workspace, kind="question", subtype="question")
    assert (outcome.outcome, outcome.answers) == ("deny", None)
    assert outcome.reason.startswith("No human answer")
