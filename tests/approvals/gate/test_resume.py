"""Nothing runs twice, nothing is lost: resume, fencing and status, through the API and the
real worker (two Supervisors stand for two worker processes; one "dies" by having its
task cancelled, which leaves the run exactly as a killed process would)."""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval, Policy
from drivers.worker import Supervisor
from runs.models import Activity, Run, Step
from tests.flow import (
    decide,
    eventually,
    finished,
    lease_gone_stale,
    messages,
    pending_approval,
    start_run,
    taken_over,
)

pytestmark = [pytest.mark.django_db(transaction=True)]

APPEND = "echo x | tee -a log.txt"
# Everything is allowed but `touch`, which a person decides.
ASK_TOUCH = {"commands": {"ask": ["touch"]}, "default": "allow"}
QUESTION = {"questions": [{"id": "color", "header": "Color", "question": "Which color?",
                           "options": [{"label": "Red"}, {"label": "Blue"}], "multi_select": False, "allow_other": False}]}


@pytest.fixture
def ask_touch(db: Any) -> str:
    Policy.objects.create(name="ask-touch", document=ASK_TOUCH)
    return "ask-touch"


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": command}}


async def die(worker: Supervisor, run_id: int) -> None:
    """The worker process dies: no status change, the lease goes stale."""
    worker.tasks[run_id].cancel()
    await asyncio.gather(*worker.tasks.values(), return_exceptions=True)
    await sync_to_async(Run.objects.filter(pk=run_id).update)(owner="gone:0:dead", heartbeat_at=None)


async def take_over(run_id: int) -> Supervisor:
    second = Supervisor()
    assert await second.start_run(run_id)
    return second


def steps_of(run_id: int) -> list[tuple[int, str, str]]:
    return list(Step.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "tool", "status"))


def events_of(run_id: int) -> list[str]:
    return list(Activity.objects.filter(run_id=run_id).order_by("seq").values_list("event", flat=True))


async def test_a_finished_step_is_not_executed_again_after_a_takeover(api: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [bash(APPEND), bash("touch second.txt"), {"message": "done"}]}, policy=ask_touch)
    first = Supervisor()
    assert await first.start_run(run["id"])
    approval = await pending_approval(api, run["id"])
    log = Path(run["workspace"]) / "log.txt"
    assert log.read_text() == "x\n"
    await die(first, run["id"])

    second = await take_over(run["id"])
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert log.read_text() == "x\n"  # exactly once
    assert (Path(run["workspace"]) / "second.txt").exists()
    assert await sync_to_async(steps_of)(run["id"]) == [(1, "bash", "finished"), (2, "bash", "finished")]
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1
    assert await sync_to_async(messages)(run["id"]) == ["done"]
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)


async def test_an_answered_question_is_answered_again_from_the_record_not_asked(api: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [{"question": QUESTION}, bash("touch after.txt")]}, policy=ask_touch,
                          run_policy={"approvals": {"question": "ask"}})
    first = Supervisor()
    assert await first.start_run(run["id"])
    question = await pending_approval(api, run["id"])
    assert (await decide(api, question, "answer", answers={"color": ["Blue"]})).status_code == HTTPStatus.OK
    touch = await eventually(
        lambda: Approval.objects.filter(run_id=run["id"], status="pending", kind="permission").values("id", "hash").first()
    )
    await die(first, run["id"])

    second = await take_over(run["id"])
    assert (await decide(api, touch, "approve")).status_code == HTTPStatus.OK
    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    step = await sync_to_async(Step.objects.get)(run_id=run["id"], seq=1)
    assert (step.status, step.answers) == ("answered", {"color": ["Blue"]})
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"], kind="question").count)() == 1
    # The replayed driver got the answers again (it would have said "refused" otherwise).
    assert await sync_to_async(messages)(run["id"]) == ["Thanks, I got the answers: {'color': ['Blue']}"]
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)


async def test_an_approved_plan_is_not_reviewed_again(api: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [{"plan": "# Plan\n1. touch"}, bash("touch after.txt")]}, policy=ask_touch)
    first = Supervisor()
    assert await first.start_run(run["id"])
    plan = await pending_approval(api, run["id"])
    assert (await decide(api, plan, "approve", mode="accept-edits")).status_code == HTTPStatus.OK
    touch = await eventually(
        lambda: Approval.objects.filter(run_id=run["id"], status="pending", kind="permission").values("id", "hash").first()
    )
    await die(first, run["id"])

    second = await take_over(run["id"])
    await decide(api, touch, "approve")
    assert (await finished(run["id"])).status == "completed"
    step = await sync_to_async(Step.objects.get)(run_id=run["id"], seq=1)
    assert (step.kind, step.status, step.plan_mode) == ("plan_review", "answered", "accept-edits")
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"], kind="plan_review").count)() == 1
    assert await sync_to_async(messages)(run["id"]) == ["The plan was approved; continuing in accept-edits mode."]
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)


async def test_a_decision_made_meanwhile_applies_only_to_the_same_request(api: Any, ask_touch: str) -> None:
    """The agent comes back asking something else: the old approval is closed, the new
    request is asked afresh — the reviewer's "yes" is not carried over to it."""
    run = await start_run(api, {"steps": [bash("touch one.txt")]}, policy=ask_touch)
    first = Supervisor()
    assert await first.start_run(run["id"])
    approval = await pending_approval(api, run["id"])
    await die(first, run["id"])
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(scenario={"steps": [bash("touch other.txt")]})

    second = await take_over(run["id"])
    fresh = await eventually(
        lambda: Approval.objects.filter(run_id=run["id"], status="pending").values("id", "hash", "request").first()
    )
    assert fresh["request"]["input"] == {"command": "touch other.txt"}
    assert not (Path(run["workspace"]) / "one.txt").exists()
    assert not (Path(run["workspace"]) / "other.txt").exists()
    await decide(api, fresh, "approve")
    assert (await finished(run["id"])).status == "completed"
    assert await sync_to_async(steps_of)(run["id"]) == [(1, "bash", "aborted"), (2, "bash", "finished")]
    assert "steps.superseded" in await sync_to_async(events_of)(run["id"])
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)


async def test_a_step_executing_when_the_worker_died_is_asked_again(api: Any, settings: Any) -> None:
    run = await start_run(api, {"steps": [bash("sleep 30; touch late.txt")]}, run_policy={"approvals": {"on_reject": "continue"}})
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(policy_document={"default": "allow"})
    first = Supervisor()
    assert await first.start_run(run["id"])
    await eventually(lambda: Step.objects.filter(run_id=run["id"], status="executing").exists())
    await die(first, run["id"])

    second = await take_over(run["id"])
    interrupted = await pending_approval(api, run["id"])
    assert interrupted["kind"] == "interrupted_side_effect"
    assert (await sync_to_async(Run.objects.get)(pk=run["id"])).status == "waiting"
    await decide(api, interrupted, "deny", reason="it may have run already")
    done = await finished(run["id"])
    assert done.status == "completed"
    assert await sync_to_async(steps_of)(run["id"]) == [(1, "bash", "denied")]
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)


async def test_a_worker_whose_lease_was_taken_over_records_nothing_more(api: Any, settings: Any) -> None:
    """Worker A is paused (its command runs on, no heartbeat) past the TTL; worker B takes the
    run over. When A wakes up its report of the step is refused and A stops that run."""
    settings.GATEHOUSE_LEASE_TTL_S = 0.5
    run = await start_run(api, {"steps": [bash("sleep 2; touch a.txt"), {"message": "after"}]},
                          run_policy={"approvals": {"on_reject": "abort"}})
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(policy_document={"default": "allow"})
    stalled = Supervisor()  # its maintenance loop (heartbeats) never runs: it is "paused"
    assert await stalled.start_run(run["id"])
    await eventually(lambda: Step.objects.filter(run_id=run["id"], status="executing").exists())
    await lease_gone_stale(run["id"])  # A's last heartbeat is past the TTL

    new_owner = Supervisor()
    await new_owner.reconcile()
    assert run["id"] in new_owner.tasks
    interrupted = await pending_approval(api, run["id"])
    before = await sync_to_async(events_of)(run["id"])

    await asyncio.wait_for(asyncio.gather(*stalled.tasks.values(), return_exceptions=True), timeout=10)
    # B stopped the command A had left running before resuming, and A, waking up to its
    # command's end, could record nothing about it.
    assert not (Path(run["workspace"]) / "a.txt").exists()
    assert await sync_to_async(events_of)(run["id"]) == before
    row = await sync_to_async(Run.objects.get)(pk=run["id"])
    assert (row.owner, row.status) == (new_owner.owner, "waiting")
    assert (await sync_to_async(Step.objects.get)(run_id=run["id"], seq=1)).status == "waiting"
    await decide(api, interrupted, "deny")
    assert (await finished(run["id"])).status == "failed"
    await asyncio.gather(*new_owner.tasks.values(), return_exceptions=True)


def test_a_write_from_a_worker_that_lost_the_lease_is_refused_whole(reviewer: Any) -> None:
    from approvals.gate import gate_request, step_finish
    from runs.leases import LeaseLost, run_claim
    from runs.services import run_create
    from runs.timeline import activity_record

    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    assert run_claim(run_id=run.pk, owner="worker-a")
    Run.objects.filter(pk=run.pk).update(owner="worker-b")  # B took it over
    before = (Step.objects.count(), Activity.objects.filter(run=run).count(), Approval.objects.count())
    with pytest.raises(LeaseLost):
        gate_request(run_id=run.pk, tool="bash", input={"command": "git push"}, cwd=run.workspace, owner="worker-a")
    with pytest.raises(LeaseLost):
        activity_record(run_id=run.pk, kind="notice", event="notice", payload={}, owner="worker-a")
    with pytest.raises(LeaseLost):
        step_finish(run_id=run.pk, step_id=1, owner="worker-a")
    assert (Step.objects.count(), Activity.objects.filter(run=run).count(), Approval.objects.count()) == before
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": "git push"}, cwd=run.workspace, owner="worker-b")
    assert outcome.outcome == "wait"


def test_two_parallel_approvals_one_decided_the_run_still_waits(reviewer: Any, api: Any) -> None:
    from approvals.gate import gate_request
    from runs.services import run_create, run_mark_running

    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    run_mark_running(run_id=run.pk)
    first = gate_request(run_id=run.pk, tool="bash", input={"command": "git push origin a"}, cwd=run.workspace)
    second = gate_request(run_id=run.pk, tool="bash", input={"command": "git push origin b"}, cwd=run.workspace)
    assert (first.outcome, second.outcome) == ("wait", "wait")
    assert Run.objects.get(pk=run.pk).status == "waiting"
    one = Approval.objects.get(pk=first.approval_id)
    assert api.post(f"/api/v1/approvals/{one.pk}/approve/", {"hash": one.hash}, format="json").status_code == HTTPStatus.OK
    assert Run.objects.get(pk=run.pk).status == "waiting"  # the other one still waits
    other = Approval.objects.get(pk=second.approval_id)
    assert api.post(f"/api/v1/approvals/{other.pk}/deny/", {"hash": other.hash}, format="json").status_code == HTTPStatus.OK
    assert Run.objects.get(pk=run.pk).status == "running"


async def test_a_resumed_run_with_a_pending_approval_is_waiting(api: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [bash("touch one.txt")]}, policy=ask_touch)
    first = Supervisor()
    assert await first.start_run(run["id"])
    approval = await pending_approval(api, run["id"])
    await die(first, run["id"])
    second = await take_over(run["id"])
    await eventually(lambda: "run.resumed" in events_of(run["id"]))
    assert (await sync_to_async(Run.objects.get)(pk=run["id"])).status == "waiting"
    await decide(api, approval, "approve")
    assert (await finished(run["id"])).status == "completed"
    await asyncio.gather(*second.tasks.values(), return_exceptions=True)


async def test_max_retries_zero_means_a_denial_is_not_asked_again(api: Any, worker: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [bash("touch one.txt")]}, policy=ask_touch,
                          run_policy={"approvals": {"on_reject": "retry", "max_retries": 0}})
    approval = await pending_approval(api, run["id"])
    await decide(api, approval, "deny", reason="no")
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "approval_denied")
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1


async def test_a_zero_timeout_is_refused_when_starting_a_run(api: Any) -> None:
    response = await sync_to_async(api.post)(
        "/api/v1/runs/", {"driver": "scripted", "scenario": {"steps": [{"message": "x"}]},
                          "run_policy": {"approvals": {"timeout_s": 0}}}, format="json"
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert (response.json()["code"], response.json()["field"]) == ("invalid_policy", "approvals.timeout_s")


async def test_after_the_agent_resumed_its_conversation_a_repeat_of_a_finished_step_is_a_new_step(
    api: Any, ask_touch: str
) -> None:
    """An agent that remembers its history may append to a file twice on purpose: once its
    conversation is resumed, only the open step is matched against the record."""
    from approvals.gate import gate_request, step_finish
    from drivers.base import ToolRequest
    from runs.leases import run_claim
    from runs.services import run_mark_running

    run = await start_run(api, {"steps": [{"message": "x"}]}, policy=ask_touch)
    await sync_to_async(run_claim)(run_id=run["id"], owner="w1")
    await sync_to_async(run_mark_running)(run_id=run["id"], owner="w1")
    first = await sync_to_async(gate_request)(run_id=run["id"], tool="bash", input={"command": APPEND}, cwd=run["workspace"], owner="w1")
    await sync_to_async(step_finish)(run_id=run["id"], step_id=first.step_id, output="x\n", exit_code=0, owner="w1")
    waiting = await sync_to_async(gate_request)(run_id=run["id"], tool="bash", input={"command": "touch b"}, cwd=run["workspace"], owner="w1")
    assert waiting.outcome == "wait"
    ctx = await taken_over(run["id"])  # w2 takes over
    try:
        assert ctx.resuming
        await ctx.resumed_conversation()
        decision = await ctx.gate(ToolRequest(tool="bash", input={"command": APPEND}, cwd=run["workspace"]))
    finally:
        await ctx.close()
    assert (decision.outcome, decision.already_done) == ("allow", False)
    assert await sync_to_async(steps_of)(run["id"]) == [(1, "bash", "finished"), (2, "bash", "aborted"), (3, "bash", "executing")]


async def test_a_replayed_request_with_a_reworded_description_is_the_same_request(api: Any, ask_touch: str) -> None:
    from approvals.gate import match_key

    assert match_key(tool="bash", input={"command": "ls", "description": "List"}) == match_key(
        tool="bash", input={"command": "ls", "description": "Show the files"}
    )
    assert match_key(tool="bash", input={"command": "ls"}) != match_key(tool="bash", input={"command": "ls -a"})
    assert match_key(tool="bash", input={"command": "ls"}, kind="permission") != match_key(tool="bash", input={"command": "ls"}, kind="question")
