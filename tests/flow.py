"""Helpers for tests that drive runs through the API and the real worker."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from asgiref.sync import sync_to_async

from runs.models import Activity, Run


async def eventually(check: Callable[[], Any], *, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """Poll a sync check (run in a thread, it may use the ORM) until it returns truthy."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = await sync_to_async(check)()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s (last value: {last!r})")


async def start_run(api: Any, scenario: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {"driver": "scripted", "prompt": "test", "scenario": scenario, **extra}
    response = await sync_to_async(api.post)("/api/v1/runs/", body, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    return response.json()


async def pending_approval(api: Any, run_id: int, *, timeout: float = 20) -> dict[str, Any]:
    def check() -> Any:
        body = api.get(f"/api/v1/approvals/?status=pending&run={run_id}").json()
        return body["results"][0] if body["results"] else None

    return await eventually(check, timeout=timeout)


async def decide(api: Any, approval: dict[str, Any], verb: str, **body: Any) -> Any:
    body.setdefault("hash", approval["hash"])
    return await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/{verb}/", body, format="json")


async def finished(run_id: int, *, timeout: float = 20) -> Run:
    return await eventually(
        lambda: Run.objects.filter(pk=run_id, status__in=["completed", "failed", "cancelled"]).first(), timeout=timeout
    )


def events(run_id: int) -> list[str]:
    return list(Activity.objects.filter(run_id=run_id).order_by("seq").values_list("event", flat=True))


def messages(run_id: int) -> list[str]:
    return [a.payload["text"] for a in Activity.objects.filter(run_id=run_id, event="message").order_by("seq")]


async def taken_over(run_id: int, owner: str = "w2") -> Any:
    """Another worker takes the run over (the lease moves to `owner`, as after the first
    one died) and opens its run context, resuming from the record; close it when done."""
    from drivers.runcontext import WorkerRunContext

    await sync_to_async(Run.objects.filter(pk=run_id).update)(owner=owner)
    row = await sync_to_async(Run.objects.select_related("session").get)(pk=run_id)
    ctx = WorkerRunContext(row, owner=owner, settings_for_driver={}, on_lease_lost=lambda: None)
    await ctx.open()
    return ctx


async def lease_gone_stale(run_id: int) -> None:
    """The run's last heartbeat is older than the lease TTL, as when its worker died or
    stalled that long ago: written, instead of sleeping through the TTL."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    long_ago = timezone.now() - timedelta(seconds=float(settings.GATEHOUSE_LEASE_TTL_S) + 60)
    assert await sync_to_async(Run.objects.filter(pk=run_id).update)(heartbeat_at=long_ago) == 1


async def reconcile_rounds(supervisor: Any, rounds: int = 2, *, timeout: float = 30.0) -> None:
    """Until the worker's maintenance loop has finished `rounds` reconcile passes that began
    after this call: whatever a pass would claim, start or wake had its chance by then (in
    place of sleeping for "a few rounds", which proves nothing on a loaded machine)."""
    real = supervisor.reconcile
    done = 0
    finished_one = asyncio.Event()

    async def counted() -> None:
        nonlocal done
        try:
            await real()
        finally:
            done += 1
            finished_one.set()

    supervisor.reconcile = counted
    try:
        deadline = time.monotonic() + timeout
        while done < rounds:
            finished_one.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{done} of {rounds} reconcile passes within {timeout} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished_one.wait(), remaining)
    finally:
        supervisor.reconcile = real


_MISSING = object()


class Calls:
    """Each call of a module's function, recorded as it returns (from any thread): when,
    with what and what it returned. `watch` puts one in place; a test waits on these calls —
    a wait loop's round, a poll — instead of sleeping for "long enough"."""

    def __init__(self, module: Any, name: str) -> None:
        self.real = getattr(module, name)
        self.log: list[tuple[float, tuple[Any, ...], dict[str, Any], Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.real(*args, **kwargs)
        self.log.append((time.monotonic(), args, kwargs, result))
        return result

    def matching(self, *args: Any, **kwargs: Any) -> list[tuple[float, Any]]:
        """(when, result) of the calls made with these arguments (and perhaps others)."""
        return [
            (at, result) for at, positional, named, result in list(self.log)
            if positional[: len(args)] == args and all(named.get(k, _MISSING) == v for k, v in kwargs.items())
        ]  # fmt: skip


def watch(monkeypatch: Any, module: Any, name: str) -> Calls:
    """Record the calls of `module.name` (looked up by name where it is called) for this test."""
    calls = Calls(module, name)
    monkeypatch.setattr(module, name, calls)
    return calls
