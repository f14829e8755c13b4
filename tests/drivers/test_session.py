"""`drivers.session.stop_tasks`: a task's own ending is swallowed, the caller's is not."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from drivers.session import stop_tasks


def _slow_to_stop(release: asyncio.Event, ended: list[str]) -> asyncio.Task[None]:
    """A task that, told to stop, ends only once `release` is set (with its cancellation)."""

    async def body() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await release.wait()
            ended.append("stopped")
            raise

    return asyncio.create_task(body())


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_caller_cancelled_while_stop_tasks_waits_is_cancelled() -> None:
    release, ended = asyncio.Event(), list[str]()
    task = _slow_to_stop(release, ended)
    await _settle()
    caller = asyncio.create_task(stop_tasks(task))
    await _settle()
    assert not caller.done()  # waiting for the task to end

    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, timeout=2)
    assert caller.cancelled()
    # The stopped task was told to stop, and ends on its own.
    assert not task.done()
    release.set()
    await asyncio.wait_for(asyncio.wait([task]), timeout=2)
    assert task.cancelled() and ended == ["stopped"]


async def test_a_caller_already_cancelled_still_waits_for_its_tasks() -> None:
    """A session's shutdown runs in the `finally` of a cancelled run: it stops every task."""
    release, ended = asyncio.Event(), list[str]()
    first, second = _slow_to_stop(release, ended), _slow_to_stop(release, ended)
    stopped: list[bool] = []

    async def run() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await stop_tasks(first, second)
            stopped.append(first.done() and second.done())

    runner = asyncio.create_task(run())
    await _settle()
    runner.cancel()
    await _settle()
    assert not runner.done()  # still waiting for the tasks, not cut short by its own cancelling
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(runner, timeout=2)
    assert stopped == [True] and ended == ["stopped", "stopped"]


async def test_a_task_s_own_exception_and_cancellation_are_swallowed() -> None:
    errors: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))

    async def fails_when_stopped() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise ValueError("broken on the way out") from None

    async def already_failed() -> None:
        raise RuntimeError("failed before it was stopped")

    async def stops() -> None:
        await asyncio.Event().wait()

    failing, failed, stopping = (
        asyncio.create_task(fails_when_stopped()),
        asyncio.create_task(already_failed()),
        asyncio.create_task(stops()),
    )
    await _settle()
    await asyncio.wait_for(stop_tasks(failing, None, failed, stopping), timeout=2)

    assert failing.done() and not failing.cancelled()  # ended by its ValueError
    assert failed.done() and not failed.cancelled()  # by its RuntimeError
    assert stopping.cancelled()
    del failing, failed, stopping
    gc.collect()
    await _settle()
    assert errors == []  # no "Task exception was never retrieved"
    loop.set_exception_handler(None)


async def test_no_task_is_nothing_to_wait_for() -> None:
    await asyncio.wait_for(stop_tasks(None, None), timeout=1)
    await asyncio.wait_for(stop_tasks(), timeout=1)
