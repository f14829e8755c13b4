"""The driver worker: a Channels consumer on the `drivers` channel.

`run.start` (and a periodic reconcile, the doorbell's backstop) makes this process claim a
run's lease and execute its driver as an asyncio task. The same code runs inside the
embedded `serve` process and in `manage.py runworker drivers`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from typing import Any

from channels.consumer import AsyncConsumer
from channels.db import database_sync_to_async
from channels.worker import Worker
from django.conf import settings

from drivers import processes, registry
from drivers.base import DriverError, RunAborted, RunResult
from drivers.runcontext import WorkerRunContext

logger = logging.getLogger(__name__)


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn)


def driver_settings(driver: str) -> dict[str, Any]:
    """The driver's typed options, from Django settings (drivers never read settings)."""
    common: dict[str, Any] = {
        "agents_dir": str(settings.GATEHOUSE_AGENTS_DIR),
        "command_timeout_s": settings.GATEHOUSE_COMMAND_TIMEOUT_S,
        "output_limit": settings.GATEHOUSE_OUTPUT_LIMIT,
        "env": dict(getattr(settings, "GATEHOUSE_AGENT_ENV", {}) or {}),
    }
    if driver == "claude-code":
        common.update(
            claude_bin=settings.GATEHOUSE_CLAUDE_BIN,
            model=settings.GATEHOUSE_CLAUDE_MODEL,
            allow_bypass_permissions=settings.GATEHOUSE_ALLOW_BYPASS_PERMISSIONS,
        )
    elif driver == "codex":
        common.update(
            codex_bin=settings.GATEHOUSE_CODEX_BIN,
            base_url=settings.GATEHOUSE_CODEX_BASE_URL,
            model=settings.GATEHOUSE_CODEX_MODEL,
            env_key=settings.GATEHOUSE_CODEX_ENV_KEY,
        )
    return common


def _load_run(run_id: int) -> Any:
    from runs.models import Run

    return Run.objects.select_related("session").get(pk=run_id)


class Supervisor:
    """Owns this process's runs: claims leases, runs drivers, renews heartbeats."""

    def __init__(self) -> None:
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.contexts: dict[int, WorkerRunContext] = {}
        self._starting: set[int] = set()
        self._background: asyncio.Task[None] | None = None

    def ensure_background(self) -> None:
        if self._background is None or self._background.done():
            self._background = asyncio.create_task(self._maintain())

    async def start_run(self, run_id: int) -> bool:
        from runs.leases import run_claim

        # Reserve the slot before the first await: the doorbell and the reconcile loop may
        # both try to start the same run at once.
        if run_id in self._starting or (run_id in self.tasks and not self.tasks[run_id].done()):
            return False
        self._starting.add(run_id)
        try:
            if not await _db(run_claim)(run_id=run_id, owner=self.owner):
                return False
            self.tasks[run_id] = asyncio.create_task(self._execute(run_id), name=f"run-{run_id}")
            return True
        finally:
            self._starting.discard(run_id)

    async def reconcile(self) -> None:
        from runs.leases import run_release, runs_claimable, runs_leased

        # A worker of this machine that is gone (the embedded server restarted) frees its
        # runs at once instead of after the lease TTL.
        for run_id, owner in await _db(runs_leased)():
            if owner != self.owner and _dead_local_owner(owner):
                await _db(run_release)(run_id=run_id, owner=owner)
        for run_id in await _db(runs_claimable)():
            await self.start_run(run_id)

    async def _maintain(self) -> None:
        """Reconcile free runs and renew this worker's leases, forever."""
        from runs.leases import run_heartbeat

        interval = min(settings.GATEHOUSE_RECONCILE_S, settings.GATEHOUSE_LEASE_HEARTBEAT_S)
        while True:
            try:
                await self.reconcile()
                for run_id, task in list(self.tasks.items()):
                    if task.done():
                        self.tasks.pop(run_id, None)
                        continue
                    owned, cancel = await _db(run_heartbeat)(run_id=run_id, owner=self.owner)
                    context = self.contexts.get(run_id)
                    if context and not owned:
                        # Another worker took the run over (this one stalled past the TTL):
                        # stop here at once and leave the run to its new owner.
                        context.lease_lost = True
                        self.stop_run(run_id)
                    elif context and cancel:
                        context.request_cancel()
            except Exception:
                logger.exception("worker maintenance failed; retrying")
            await asyncio.sleep(interval)

    async def shutdown(self, timeout: float = 15.0) -> None:
        """Stop every run of this process (the server is stopping): each driver stops its
        agent so that it can be resumed, and each lease is released for the next worker."""
        if self._background is not None:
            self._background.cancel()
        tasks = [task for task in self.tasks.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    def stop_run(self, run_id: int) -> None:
        """Stop a run's task at once (its lease is gone): drivers' cleanup still runs."""
        task = self.tasks.get(run_id)
        if task is not None and not task.done():
            task.cancel()

    async def _execute(self, run_id: int) -> None:
        """Run one driver to its end; whatever happens, the run ends with a status — unless
        another worker took the run over, which then owns its status."""
        from runs.leases import LeaseLost, run_release
        from runs.models import Run
        from runs.services import run_finish

        context: WorkerRunContext | None = None
        result: RunResult
        try:
            run = await _db(_load_run)(run_id)
            if run.cancel_requested:
                await _db(run_finish)(run_id=run_id, status=Run.Status.CANCELLED, owner=self.owner)
                return
            context = WorkerRunContext(
                run, owner=self.owner, settings_for_driver=driver_settings(run.driver),
                on_lease_lost=lambda: self.stop_run(run_id),
            )
            self.contexts[run_id] = context
            await context.open()
            if run.agent_processes:
                await self._stop_leftovers(run_id, run.agent_processes)
            await _db(_mark_started)(run_id=run_id, resumed=context.resuming, owner=self.owner)
            driver = registry.create(run.driver)
            # Every process the driver starts for this run is recorded on it.
            processes.current_run.set(context.process_started)
            result = await driver.run(context)
        except RunAborted as exc:
            result = RunResult(status="failed", failure_reason=exc.reason)
        except DriverError as exc:
            result = RunResult(status="failed", failure_reason=exc.reason)
            await self._notice(run_id, {"error": exc.reason, "detail": str(exc)})
        except LeaseLost:
            logger.warning("run %s: lease lost to another worker; leaving it to the new owner", run_id)
            return
        except asyncio.CancelledError:
            # Shutting down (or the lease is gone): free the run for the next worker at once.
            # The release is fenced by owner, so a lost lease stays with its new owner.
            await _db(run_release)(run_id=run_id, owner=self.owner)
            raise
        except Exception as exc:  # a driver bug fails its run, never the worker
            logger.exception("driver crashed on run %s", run_id)
            result = RunResult(status="failed", failure_reason="driver_crashed")
            await self._notice(run_id, {"error": "driver_crashed", "detail": f"{type(exc).__name__}: {exc}"})
        finally:
            self.contexts.pop(run_id, None)
            if context is not None:
                await context.close()
        if context is not None and context.lease_lost:
            logger.warning("run %s: lease lost to another worker; leaving it to the new owner", run_id)
            return
        # A run that did not complete because someone cancelled it ends `cancelled`, however
        # the driver noticed (the cancel flag, an abort saying so, or the row).
        if result.status == "failed" and (
            (context is not None and context.cancelled())
            or result.failure_reason == "cancelled"
            or await _db(_cancel_requested)(run_id)
        ):
            result = RunResult(status="cancelled", text=result.text, usage=result.usage)
        try:
            await _db(run_finish)(
                run_id=run_id,
                status=result.status,
                failure_reason=result.failure_reason or ("driver_failed" if result.status == "failed" else ""),
                text=result.text,
                usage=result.usage,
                owner=self.owner,
            )
        except LeaseLost:
            logger.warning("run %s: lease lost before it could finish here; leaving it to the new owner", run_id)

    async def _stop_leftovers(self, run_id: int, records: list[dict[str, Any]]) -> None:
        """Before resuming, stop agent processes an earlier owner of the run left running."""
        from runs.services import run_forget_processes

        stopped = await asyncio.to_thread(processes.stop_leftovers, records)
        await _db(run_forget_processes)(run_id=run_id, owner=self.owner)
        if stopped:
            await self._notice(run_id, {"level": "warning", "text": f"Stopped {len(stopped)} agent process group(s) left running "
                                        "by the previous worker of this run.", "pids": stopped})

    async def _notice(self, run_id: int, payload: dict[str, Any]) -> None:
        from runs.services import activity_record

        try:
            await _db(activity_record)(run_id=run_id, kind="notice", event="notice", payload=payload, owner=self.owner)
        except Exception:
            logger.exception("could not record a notice on run %s", run_id)


def _mark_started(*, run_id: int, resumed: bool, owner: str) -> None:
    """running (or resumed), then waiting if a person is still asked (a resumed run)."""
    from django.db import transaction

    from approvals.gate import run_status_sync
    from runs.services import run_mark_running

    with transaction.atomic():
        run_mark_running(run_id=run_id, resumed=resumed, owner=owner)
        run_status_sync(run_id=run_id)


def _cancel_requested(run_id: int) -> bool:
    from runs.models import Run

    return Run.objects.filter(pk=run_id, cancel_requested=True).exists()


def _dead_local_owner(owner: str) -> bool:
    """True when `owner` ("host:pid:nonce") names a process of this host that has exited."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


_supervisor: Supervisor | None = None


def supervisor() -> Supervisor:
    global _supervisor
    if _supervisor is None:
        _supervisor = Supervisor()
    return _supervisor


class DriverWorkerConsumer(AsyncConsumer):
    """Thin: hand each `run.start` to this process's supervisor."""

    async def run_start(self, message: dict[str, Any]) -> None:
        sup = supervisor()
        sup.ensure_background()
        try:
            await sup.start_run(int(message["run_id"]))
        except (KeyError, TypeError, ValueError):
            logger.warning("ignoring malformed run.start message: %r", message)


class DriverWorker(Worker):
    """channels' Worker that also starts the supervisor's reconcile loop at once, so runs
    queued while no worker listened (or whose worker died) are picked up."""

    async def handle(self) -> None:
        supervisor().ensure_background()
        # The webhook outbox is sent from here too (issue 12): outside any request, in the
        # process that runs in both deployment shapes; it stops with the worker.
        from integrations.webhooks.sender import outbox_loop

        outbox = asyncio.create_task(outbox_loop(), name="webhook-outbox")
        try:
            await super().handle()
        finally:
            outbox.cancel()
