"""What a driver emits, and a step's result, are queued and written with the next write:
in order, in that write's transaction, soon when nothing else writes, never after the lease
is gone, and never lost because another write failed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from drivers import runcontext
from drivers.base import ToolRequest
from drivers.runcontext import WorkerRunContext
from runs.leases import run_claim
from runs.models import Activity, Run, Step
from runs.services import run_mark_running
from runs.timeline import queued_then
from tests.flow import eventually, start_run, taken_over

pytestmark = [pytest.mark.django_db(transaction=True)]


async def owned_context(api: Any, owner: str = "w1") -> tuple[WorkerRunContext, dict[str, Any], list[str]]:
    run = await start_run(api, {"steps": [{"message": "x"}]})
    await sync_to_async(run_claim)(run_id=run["id"], owner=owner)
    await sync_to_async(run_mark_running)(run_id=run["id"], owner=owner)
    row = await sync_to_async(Run.objects.select_related("session").get)(pk=run["id"])
    lost: list[str] = []
    ctx = WorkerRunContext(row, owner=owner, settings_for_driver={}, on_lease_lost=lambda: lost.append("lost"))
    await ctx.open()
    return ctx, run, lost


def timeline(run_id: int) -> list[tuple[str, Any]]:
    rows = Activity.objects.filter(run_id=run_id, kind__in=["message", "tool"]).order_by("seq")
    return [(a.event, a.payload.get("text") or a.payload.get("step")) for a in rows]


async def test_emitted_lines_go_in_the_next_gate_transaction_in_order(api: Any, monkeypatch: Any) -> None:
    ctx, run, _ = await owned_context(api)
    try:
        await ctx.gate(ToolRequest(tool="bash", input={"command": "ls"}, cwd=run["workspace"]))
        await ctx.emit("message", {"text": "one"})
        await ctx.emit("message", {"text": "two"})
        assert await sync_to_async(timeline)(run["id"]) == [("tool.requested", 1)]  # nothing written yet

        trips: list[str] = []
        monkeypatch.setattr(runcontext, "_db", lambda fn: trips.append(fn.__name__) or sync_to_async(fn))
        await ctx.gate(ToolRequest(tool="bash", input={"command": "ls -a"}, cwd=run["workspace"]))
        # one trip, one transaction: the queue (two activities), then the request
        assert trips == ["queued_then"]
        assert await sync_to_async(timeline)(run["id"]) == [
            ("tool.requested", 1), ("message", "one"), ("message", "two"), ("tool.requested", 2),
        ]
    finally:
        await ctx.close()


async def test_a_steps_result_is_written_at_once_after_what_was_emitted_before_it(api: Any, monkeypatch: Any) -> None:
    ctx, run, _ = await owned_context(api)
    monkeypatch.setattr(runcontext, "QUEUE_FLUSH_S", 3600.0)  # only what is written at once is written here
    try:
        first = await ctx.gate(ToolRequest(tool="bash", input={"command": "ls"}, cwd=run["workspace"]))
        await ctx.emit("message", {"text": "one"})
        await ctx.step_finished(first.step_id, output="a.txt\n", exit_code=0)
        # Not left for the agent's next request: written in the background, in order.
        await eventually(lambda: timeline(run["id"]) == [("tool.requested", 1), ("message", "one"), ("tool.finished", 1)],
                         timeout=10)
        step = await sync_to_async(Step.objects.get)(pk=first.step_id)
        assert (step.status, step.output, step.exit_code) == ("finished", "a.txt\n", 0)
    finally:
        await ctx.close()


async def test_a_result_followed_at_once_by_a_request_goes_in_its_transaction(api: Any, monkeypatch: Any) -> None:
    """A driver whose next request follows its result at once (the scripted one): one
    transaction for both, as the gate takes the queue before the flusher runs."""
    ctx, run, _ = await owned_context(api)
    try:
        first = await ctx.gate(ToolRequest(tool="bash", input={"command": "ls"}, cwd=run["workspace"]))
        trips: list[str] = []
        monkeypatch.setattr(runcontext, "_db", lambda fn: trips.append(fn.__name__) or sync_to_async(fn))
        await ctx.step_finished(first.step_id, output="", exit_code=0)
        await ctx.gate(ToolRequest(tool="bash", input={"command": "ls -a"}, cwd=run["workspace"]))
        assert trips == ["queued_then"]
        assert await sync_to_async(timeline)(run["id"]) == [("tool.requested", 1), ("tool.finished", 1), ("tool.requested", 2)]
    finally:
        await ctx.close()


async def test_what_nothing_else_takes_along_is_written_soon(api: Any) -> None:
    ctx, run, _ = await owned_context(api)
    try:
        await ctx.emit("message", {"text": "alone"})
        await eventually(lambda: timeline(run["id"]) == [("message", "alone")], timeout=runcontext.QUEUE_FLUSH_S + 5)
    finally:
        await ctx.close()


class HeldWrites:
    """`runcontext._db` whose writes wait until released: a write can be caught on its way."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    def __call__(self, fn: Any) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            self.started.set()
            await self.release.wait()
            return await sync_to_async(fn)(*args, **kwargs)

        return call


async def test_what_is_queued_while_a_write_is_on_its_way_is_written_soon_after(api: Any, monkeypatch: Any) -> None:
    ctx, run, _ = await owned_context(api)
    held = HeldWrites()
    monkeypatch.setattr(runcontext, "_db", held)
    try:
        await ctx.emit("message", {"text": "one"})
        await asyncio.wait_for(held.started.wait(), timeout=runcontext.QUEUE_FLUSH_S + 5)  # the flusher's write
        await ctx.emit("message", {"text": "two"})  # queued behind it
        held.release.set()
        # Written by the flusher, not left for the next gate or the run's end.
        await eventually(lambda: timeline(run["id"]) == [("message", "one"), ("message", "two")], timeout=10)
    finally:
        await ctx.close()


async def test_an_agent_process_is_recorded_without_the_driver_waiting_for_the_write(api: Any, monkeypatch: Any) -> None:
    ctx, run, _ = await owned_context(api)
    held = HeldWrites()
    monkeypatch.setattr(runcontext, "_db", held)
    monkeypatch.setattr(runcontext, "QUEUE_FLUSH_S", 3600.0)  # what waits for the queue's delay is not written here
    try:
        record = {"host": "h", "pid": 4242, "start": "1"}
        await asyncio.wait_for(ctx.process_started(record), timeout=5)  # returns with the write held
        # ...which is under way at once, not after the queue's delay.
        await asyncio.wait_for(held.started.wait(), timeout=10)
        assert await sync_to_async(lambda: Run.objects.get(pk=run["id"]).agent_processes)() == []
        held.release.set()
        await eventually(lambda: Run.objects.get(pk=run["id"]).agent_processes == [record], timeout=10)
    finally:
        held.release.set()
        await ctx.close()


async def test_close_writes_what_is_still_queued(api: Any) -> None:
    ctx, run, _ = await owned_context(api)
    await ctx.emit("message", {"text": "last words"})
    await ctx.close()  # before the flush timer
    assert await sync_to_async(timeline)(run["id"]) == [("message", "last words")]


async def test_a_queue_is_not_written_once_another_worker_owns_the_run(api: Any) -> None:
    ctx, run, lost = await owned_context(api)
    await ctx.emit("message", {"text": "too late"})
    await sync_to_async(Run.objects.filter(pk=run["id"]).update)(owner="w2")
    with pytest.raises(asyncio.CancelledError):
        await ctx.gate(ToolRequest(tool="bash", input={"command": "ls"}, cwd=run["workspace"]))
    await ctx.close()
    assert lost == ["lost"]
    assert await sync_to_async(timeline)(run["id"]) == []
    assert not await sync_to_async(Step.objects.filter(run_id=run["id"]).exists)()


def test_a_failing_write_keeps_the_queue_and_is_raised_after_commit(reviewer: Any) -> None:
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)

    def broken(*, owner: str | None) -> None:
        Activity.objects.create(run_id=run.pk, seq=10_000, kind="notice", event="notice", payload={})
        raise ValueError("the write failed")

    with pytest.raises(ValueError, match="the write failed"):
        queued_then(run_id=run.pk, queued=[("activity", "message", "message", {"text": "kept"})], owner=None,
                    call=broken, kwargs={})
    # the queued line is stored; the failed write's own row was undone with its savepoint
    assert list(Activity.objects.filter(run_id=run.pk).exclude(kind="run").values_list("event", "payload")) == [
        ("message", {"text": "kept"})]


def test_a_queued_write_that_fails_is_said_on_the_timeline_and_the_rest_is_kept(reviewer: Any) -> None:
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)

    def step_result(*, owner: str | None) -> None:
        raise RuntimeError("step 7: cannot move to finished from aborted")

    queued_then(run_id=run.pk, owner=None, call=lambda *, owner: None, kwargs={}, queued=[
        ("activity", "message", "message", {"text": "before"}),
        ("call", step_result, {}),
        ("activity", "message", "message", {"text": "after"}),
    ])
    rows = list(Activity.objects.filter(run_id=run.pk).exclude(kind="run").order_by("seq").values_list("event", "payload"))
    assert [event for event, _ in rows] == ["message", "notice", "message"]
    notice = rows[1][1]
    assert (notice["warning"], notice["write"]) == ("queued_write_failed", "step_result")
    assert "RuntimeError: step 7: cannot move to finished from aborted" in notice["text"]


async def test_a_worker_dying_with_a_result_still_queued_never_reruns_the_step(api: Any) -> None:
    """The crash between two steps: the command ran, its result was queued, the worker died
    before writing it. The record says `executing` (it may have run), so the next owner asks
    a person about it as an interrupted side effect instead of running it again."""
    from approvals.models import Approval

    ctx, run, _ = await owned_context(api)
    ran = await ctx.gate(ToolRequest(tool="bash", input={"command": "touch a"}, cwd=run["workspace"]))
    assert ran.outcome == "allow"
    await ctx.step_finished(ran.step_id, output="", exit_code=0)
    assert ctx._flusher is not None
    ctx._flusher.cancel()  # the process dies: nothing queued is written, close() never runs
    assert (await sync_to_async(Step.objects.get)(pk=ran.step_id)).status == "executing"

    taken = await taken_over(run["id"])  # w2 takes over
    try:
        assert taken.resuming
        replay = asyncio.ensure_future(taken.gate(ToolRequest(tool="bash", input={"command": "touch a"}, cwd=run["workspace"])))
        asked = await eventually(lambda: Approval.objects.filter(run_id=run["id"], status="pending").first())
        assert asked.kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT
        assert not replay.done()  # waits for a person; nothing was answered "allow" on its own
        replay.cancel()
    finally:
        await taken.close()
