"""A worker marks a run started when its driver first writes, not before starting the driver:
the driver prepares and spawns its agent at once (an agent CLI takes tens to hundreds of
milliseconds to start; the mark is a database write, and beside the driver's preparation
it only took turns with it on the GIL). The mark is still written before anything of the
driver's, so the run's record reads in order and nothing is gated before it; a driver that
never writes has its run marked when it ends; a mark that fails stops the driver before
its agent acts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from drivers import registry
from drivers import worker as worker_module
from runs.leases import LeaseLost
from runs.models import Activity, Run, Step
from tests.flow import events, eventually, finished, start_run

pytestmark = [pytest.mark.django_db(transaction=True)]

SCENARIO = {"steps": [{"message": "hello"}, {"tool": "bash", "input": {"command": "touch made.txt"}}, {"message": "done"}]}


@pytest.fixture
def observed(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The driver says when it starts; the run's mark records whether the driver had started
    (waiting up to 5 s for it) and then does `state["mark"]` (default: the real one)."""
    state: dict[str, Any] = {"driver_started": threading.Event(), "driver_started_during_mark": None}
    create, mark = registry.create, worker_module._mark_started

    class Observed:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def run(self, ctx: Any) -> Any:
            state["driver_started"].set()
            return await self.inner.run(ctx)

    def marking(**kwargs: Any) -> None:
        state["driver_started_during_mark"] = state["driver_started"].wait(5)
        state.get("mark", mark)(**kwargs)

    monkeypatch.setattr(registry, "create", lambda name: Observed(create(name)))
    monkeypatch.setattr(worker_module, "_mark_started", marking)
    return state


async def test_the_driver_starts_while_the_run_is_marked_started_and_writes_after_the_mark(
    api: Any, worker: Any, observed: dict[str, Any], tmp_path: Path
) -> None:
    run = await start_run(api, SCENARIO, workspace=str(tmp_path))
    row = await finished(run["id"])
    assert row.status == "completed", (row.failure_reason, row.failure_detail)
    assert observed["driver_started_during_mark"] is True  # the driver did not wait for the mark
    log = await sync_to_async(events)(run["id"])
    # Everything the driver wrote (its message, the gated step) comes after the mark.
    assert log.index("run.started") < log.index("message") < log.index("tool.requested")
    assert (tmp_path / "made.txt").exists()


async def test_a_mark_that_finds_the_lease_gone_stops_the_driver_and_writes_nothing_of_it(
    api: Any, worker: Any, observed: dict[str, Any], tmp_path: Path
) -> None:
    def lease_gone(*, run_id: int, resumed: bool, owner: str) -> None:
        Run.objects.filter(pk=run_id).update(owner="another-worker")
        raise LeaseLost(run_id, owner)

    observed["mark"] = lease_gone
    run = await start_run(api, SCENARIO, workspace=str(tmp_path))
    await eventually(lambda: observed["driver_started_during_mark"] is not None)
    await eventually(lambda: run["id"] not in worker.tasks or worker.tasks[run["id"]].done())
    row = await sync_to_async(Run.objects.get)(pk=run["id"])
    assert row.owner == "another-worker" and row.status == "queued"  # left to its owner, untouched
    assert await sync_to_async(lambda: list(Activity.objects.filter(run_id=run["id"]).values_list("event", flat=True)))() == [
        "run.created"
    ]
    assert not await sync_to_async(Step.objects.filter(run_id=run["id"]).exists)()
    assert not (tmp_path / "made.txt").exists()


async def test_a_mark_that_fails_fails_the_run_and_its_driver_never_acts(
    api: Any, worker: Any, observed: dict[str, Any], tmp_path: Path
) -> None:
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("the database went away")

    observed["mark"] = broken
    run = await start_run(api, SCENARIO, workspace=str(tmp_path))
    row = await finished(run["id"])
    assert row.status == "failed" and row.failure_reason == "driver_crashed"
    assert observed["driver_started_during_mark"] is True
    assert not await sync_to_async(Step.objects.filter(run_id=run["id"]).exists)()
    assert not (tmp_path / "made.txt").exists()


async def test_a_driver_that_never_writes_still_has_its_run_marked_before_its_end(
    api: Any, worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from drivers.base import RunResult

    class Silent:
        async def run(self, ctx: Any) -> RunResult:
            return RunResult(status="completed", text="nothing to do")

    monkeypatch.setattr(registry, "create", lambda name: Silent())
    run = await start_run(api, SCENARIO)
    row = await finished(run["id"])
    assert row.status == "completed" and row.started_at is not None
    assert await sync_to_async(events)(run["id"]) == ["run.created", "run.started", "run.completed"]
