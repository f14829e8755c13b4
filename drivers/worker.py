"""The driver worker: a Channels consumer on the `drivers` channel.

`run.start` (and a periodic reconcile, the doorbell's backstop) makes this process claim a
run's lease and execute its driver as an asyncio task. The same code runs inside the
embedded `serve` process and in `manage.py runworker drivers`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import uuid
from typing import Any

from channels.consumer import AsyncConsumer
from channels.db import database_sync_to_async
from channels.worker import Worker
from django.conf import settings
from django.db import connection, transaction

from approvals.gate import run_status_sync
from approvals.gate.resolution import allowed_at_once_outcome, allowed_at_once_statement
from drivers import processes, registry, runfloor, sandbox
from drivers.base import DriverError, GateAnswer, RunAborted, RunResult
from drivers.registry import driver_settings
from drivers.runcontext import WorkerRunContext
from infra import broadcast, pg_doorbell
from integrations.notifications.sender import notifications_loop
from integrations.webhooks.sender import outbox_loop
from repos.errors import RepositoryError
from repos.services import deliveries_due, deliveries_perform, workspace_make, workspace_record, workspace_to_make
from runs.events import Event
from runs.leases import LeaseLost, run_claim_and_read, run_release, runs_claimable, runs_heartbeat, runs_leased
from runs.models import Run
from runs.retention import cleanup
from runs.services import run_finish, run_forget_processes, run_hibernate, run_mark_running, run_woke
from runs.timeline import activity_record

logger = logging.getLogger(__name__)


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn)


def _claim_and_load(run_id: int, owner: str) -> Any:
    """Take the run's lease and read it with its session: the run as claimed, or None when
    another worker holds it (or it is not to be started)."""
    return run_claim_and_read(run_id=run_id, owner=owner)


class Supervisor:
    """Owns this process's runs: claims leases, runs drivers, renews heartbeats."""

    def __init__(self) -> None:
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.contexts: dict[int, WorkerRunContext] = {}
        self._starting: set[int] = set()
        self._hibernating: set[int] = set()
        self._cleaned_at: float | None = None
        self._background: asyncio.Task[None] | None = None
        # On PostgreSQL, while the maintenance loop runs: woken runs hand out on it.
        self.hand_out: pg_doorbell.HandOut[GateAnswer] | None = None

    def ensure_background(self) -> None:
        if self._background is None or self._background.done():
            self._background = asyncio.create_task(self._maintain())

    async def start_run(self, run_id: int) -> bool:
        # Reserve the slot before the first await: the doorbell and the reconcile loop may
        # both try to start the same run at once.
        if run_id in self._starting or (run_id in self.tasks and not self.tasks[run_id].done()):
            return False
        if self.busy_slots() >= settings.GATEHOUSE_WORKER_MAX_RUNS:
            return False  # full: the run stays queued for a slot here or another worker
        self._starting.add(run_id)
        try:
            # The claim and the read of the run it claimed, in one call to the database thread.
            run = await _db(_claim_and_load)(run_id, self.owner)
            if run is None:
                return False
            self.tasks[run_id] = asyncio.create_task(self._execute(run), name=f"run-{run_id}")
            return True
        finally:
            self._starting.discard(run_id)

    async def _daily_cleanup(self) -> None:
        """Once a day (and at start): delete what long-finished runs left (runs/retention.py)."""
        now = asyncio.get_running_loop().time()
        if self._cleaned_at is not None and now - self._cleaned_at < 24 * 3600:
            return
        self._cleaned_at = now
        try:
            done = await _db(cleanup)()
        except Exception:
            logger.exception("retention cleanup failed; retrying tomorrow")
            return
        if done.workspaces or done.homes:
            logger.info("retention: deleted %d workspaces and %d agent homes", len(done.workspaces), len(done.homes))

    async def _deliver(self) -> None:
        """Push what reviewers approved (repos: deliveries), outside any run's sandbox."""
        try:
            if await _db(deliveries_due)():
                await asyncio.to_thread(_deliveries_in_thread)
        except Exception:
            logger.exception("delivering approved pushes failed; retrying")

    def busy_slots(self) -> int:
        return len(self._starting) + sum(1 for task in self.tasks.values() if not task.done())

    async def reconcile(self) -> None:
        # A worker of this machine that is gone (the embedded server restarted) frees its
        # runs at once instead of after the lease TTL.
        for run_id, owner in await _db(runs_leased)():
            if owner != self.owner and _dead_local_owner(owner):
                await _db(run_release)(run_id=run_id, owner=owner)
        free = settings.GATEHOUSE_WORKER_MAX_RUNS - self.busy_slots()
        if free <= 0:
            return
        for run_id in await _db(runs_claimable)(limit=free * 2):
            if self.busy_slots() >= settings.GATEHOUSE_WORKER_MAX_RUNS:
                break
            await self.start_run(run_id)

    async def _maintain(self) -> None:
        """Reconcile free runs and renew this worker's leases, forever; on PostgreSQL, listen
        for decisions too (infra/pg_doorbell.py), as long as this loop runs."""
        interval = min(settings.GATEHOUSE_RECONCILE_S, settings.GATEHOUSE_LEASE_HEARTBEAT_S)
        doorbell = None
        if pg_doorbell.enabled():  # decisions ring here straight from PostgreSQL
            doorbell = asyncio.create_task(pg_doorbell.listen(self.ring, ring_all=self.ring_all), name="pg-doorbell")
            self.hand_out = pg_doorbell.HandOut(statement=allowed_at_once_statement, outcome=allowed_at_once_outcome)
        try:
            await self._maintain_forever(interval)
        finally:
            if doorbell is not None:
                doorbell.cancel()
                await asyncio.gather(doorbell, return_exceptions=True)
            hand_out, self.hand_out = self.hand_out, None
            if hand_out is not None:
                await hand_out.close()

    def ring(self, run_id: int) -> None:
        """A decision for `run_id` was committed: wake its run if it waits here."""
        context = self.contexts.get(run_id)
        if context is not None:
            context.ring()

    def ring_all(self) -> None:
        for context in list(self.contexts.values()):
            context.ring()

    async def _maintain_forever(self, interval: float) -> None:
        while True:
            try:
                await self._daily_cleanup()
                await self._deliver()
                for run_id, task in list(self.tasks.items()):
                    if task.done():
                        self.tasks.pop(run_id, None)
                running = list(self.tasks)
                if running:
                    # Every lease of this worker in one round trip, whatever the number of runs.
                    owned, cancels = await _db(runs_heartbeat)(run_ids=running, owner=self.owner)
                    for run_id in running:
                        context = self.contexts.get(run_id)
                        if context and run_id not in owned:
                            # Another worker took the run over (this one stalled past the
                            # TTL): stop here at once and leave the run to its new owner.
                            context.lease_lost = True
                            self.stop_run(run_id)
                        elif context and run_id in cancels:
                            context.request_cancel()
                await self.reconcile()
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

    def hibernate(self, run_id: int) -> None:
        """Put a run waiting on a person to sleep: its task stops (the driver stops its agent
        resumably) and `_execute` records the run as hibernated, holding nothing here."""
        self._hibernating.add(run_id)
        self.stop_run(run_id)

    def stop_run(self, run_id: int) -> None:
        """Stop a run's task at once (its lease is gone): drivers' cleanup still runs."""
        task = self.tasks.get(run_id)
        if task is not None and not task.done():
            task.cancel()

    async def _execute(self, run: Any) -> None:
        """Run one driver to its end; whatever happens, the run ends with a status — unless
        another worker took the run over, which then owns its status. `run`: as claimed."""
        run_id: int = run.pk
        context: WorkerRunContext | None = None
        result: RunResult
        try:
            if run.cancel_requested:
                await _db(run_finish)(run_id=run_id, status=Run.Status.CANCELLED, owner=self.owner)
                return
            if run.repository_id is not None:
                try:
                    await self._prepare_workspace(run)
                except RepositoryError as exc:
                    await _db(run_finish)(run_id=run_id, status=Run.Status.FAILED, failure_reason=exc.code, detail=exc.message,
                                          owner=self.owner)
                    return
            context = WorkerRunContext(
                run, owner=self.owner, settings_for_driver=driver_settings(run.driver),
                on_lease_lost=lambda: self.stop_run(run_id),
                on_hibernate=lambda: self.hibernate(run_id),
                hand_out=lambda: self.hand_out,
            )
            self.contexts[run_id] = context
            await context.open()
            if run.agent_processes:
                await self._stop_leftovers(run_id, run.agent_processes)
            driver = registry.create(run.driver)
            floor_check = await self._floor_before(context)
            # Every process the driver starts for this run is recorded on it.
            processes.current_run.set(context.process_started)
            if context.egress is not None:
                processes.floor_used.set(context.egress.floor_used)
            # The run is marked started when its driver first writes (its agent's spawn is
            # recorded at once), so the driver prepares and spawns its agent without waiting
            # for the mark and the mark is written while the agent starts (an agent CLI
            # takes tens to hundreds of ms); nothing of the driver's is written or gated
            # before the mark (drivers/runcontext.py). A failed mark stops the driver.
            driving: asyncio.Future[RunResult] | None = None
            context.mark_when_needed(
                lambda: _db(_mark_started)(run_id=run_id, resumed=context.resuming, owner=self.owner),  # type: ignore[union-attr]
                on_failure=lambda: driving.cancel() if driving is not None else None,
            )
            driving = asyncio.ensure_future(driver.run(context))
            try:
                try:
                    await asyncio.wait({driving})  # its end (a failed mark stops it)
                    await asyncio.shield(context.marking())  # how it went (written now if the driver never wrote)
                except BaseException:
                    driving.cancel()
                    with contextlib.suppress(BaseException):
                        await driving
                    raise
                result = await driving
            finally:
                await self._floor_after(context, floor_check)
                await context.flush()  # what the driver emitted last, before the run's end
        except RunAborted as exc:
            result = RunResult(status="failed", failure_reason=exc.reason)
        except DriverError as exc:
            result = RunResult(status="failed", failure_reason=exc.reason)
            await self._notice(run_id, {"error": exc.reason, "detail": str(exc)})
        except LeaseLost:
            logger.warning("run %s: lease lost to another worker; leaving it to the new owner", run_id)
            return
        except asyncio.CancelledError:
            if run_id in self._hibernating:
                self._hibernating.discard(run_id)
                # This cancellation was ours (it stopped the driver): clear it so that
                # recording the sleep is not cancelled too.
                task = asyncio.current_task()
                while task is not None and task.uncancel() > 0:
                    pass
                await self._put_to_sleep(run_id)
                return
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

    async def _prepare_workspace(self, run: Any) -> None:
        """A run on a repository: its workspace is made here, by the worker that runs it
        (repos.services: the mirror and the clone off the database thread)."""
        planned = await _db(workspace_to_make)(run_id=run.pk)
        if not planned.workspace:
            made = await asyncio.to_thread(workspace_make, repository=planned.repository, run_id=run.pk, ref=planned.ref)
            planned = await _db(workspace_record)(run=planned, made=made, owner=self.owner)
        run.workspace, run.branch, run.base_commit = planned.workspace, planned.branch, planned.base_commit

    async def _floor_before(self, context: WorkerRunContext) -> dict[str, Any] | None:
        """A run that needs a floor this machine cannot build fails here, never runs without
        one; else the workspace's control files as they are (for `_floor_after`)."""
        if context.floor is None:
            return None
        availability = await asyncio.to_thread(sandbox.availability)
        if not availability.available:
            raise DriverError("sandbox_unavailable", f"The sandbox floor cannot be built here: {availability.reason}")
        return await asyncio.to_thread(sandbox.snapshot, str(context.workspace))

    async def _floor_after(self, context: WorkerRunContext, before: dict[str, Any] | None) -> None:
        """Say which control files appeared or changed in the workspace during the run: the
        floor holds existing ones read-only but does not create missing ones (docs/sandbox.md)."""
        if before is None or context.lease_lost:
            return
        changed = await asyncio.to_thread(sandbox.changed_since, before, str(context.workspace))
        if changed:
            await context.emit("notice", {
                "level": "warning", "control_files": changed,
                "text": "Agent control files appeared or changed in the workspace during this run: "
                        f"{', '.join(changed)}. Review them before a tool of yours loads them (git hooks, agent settings).",
            })

    async def _put_to_sleep(self, run_id: int) -> None:
        try:
            await _db(run_hibernate)(run_id=run_id, owner=self.owner)
        except LeaseLost:
            logger.warning("run %s: lease lost while going to sleep; leaving it to the new owner", run_id)

    async def _stop_leftovers(self, run_id: int, records: list[dict[str, Any]]) -> None:
        """Before resuming, stop agent processes an earlier owner of the run left running."""
        stopped = await asyncio.to_thread(processes.stop_leftovers, records)
        await _db(run_forget_processes)(run_id=run_id, owner=self.owner)
        if stopped:
            await self._notice(run_id, {"level": "warning", "text": f"Stopped {len(stopped)} agent process group(s) left running "
                                        "by the previous worker of this run.", "pids": stopped})

    async def _notice(self, run_id: int, payload: dict[str, Any]) -> None:
        try:
            await _db(activity_record)(run_id=run_id, kind="notice", event=Event.NOTICE, payload=payload, owner=self.owner)
        except Exception:
            logger.exception("could not record a notice on run %s", run_id)


def _mark_started(*, run_id: int, resumed: bool, owner: str) -> None:
    """running (or resumed, or woken), then waiting if a person is still asked."""
    with transaction.atomic():
        run_woke(run_id=run_id, owner=owner)
        run_mark_running(run_id=run_id, resumed=resumed, owner=owner)
        run_status_sync(run_id=run_id)


def _deliveries_in_thread() -> None:
    """Pushes take seconds: in their own thread, with its own database connection."""
    try:
        deliveries_perform()
    finally:
        connection.close()  # this thread's own connection


def _cancel_requested(run_id: int) -> bool:
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
    queued while no worker listened (or whose worker died) are picked up.

    With `stop_on_signals` (the `runworker` process), SIGTERM/SIGINT stop every run of this
    process resumably and free its leases before it exits, as `serve` does."""

    stop_on_signals = False

    async def listener(self, channel: str) -> None:
        """channels' listener, but a channel layer that goes away (Redis down) does not end
        the worker: it waits and listens again. Meanwhile the reconcile loop still starts
        queued runs and waiting runs still read their rows (the database is the mailbox)."""
        backoff = 0.5
        while True:
            try:
                message = await self.channel_layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                broadcast._failed()
                logger.debug("drivers channel unreachable; retrying in %.1f s", backoff, exc_info=True)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.5
            broadcast._recovered()
            if not message.get("type", None):
                logger.warning("ignoring a message without a type on %s", channel)
                continue
            scope = {"type": "channel", "channel": channel}
            instance_queue = self.get_or_create_application_instance(channel, scope)
            await instance_queue.put(message)

    async def handle(self) -> None:
        state, floor_line = await asyncio.to_thread(runfloor.status)  # the probe, once per process
        (logger.warning if state == "unavailable" else logger.info)(floor_line)
        supervisor().ensure_background()
        # The webhook outbox is sent from here too (issue 12): outside any request, in the
        # process that runs in both deployment shapes; it stops with the worker.

        outbox = asyncio.create_task(outbox_loop(), name="webhook-outbox")
        notifications = asyncio.create_task(notifications_loop(), name="notifications")  # e-mail and chat (issue 32.4)
        try:
            await self._listen()
        finally:
            outbox.cancel()
            notifications.cancel()

    async def _listen(self) -> None:
        if not self.stop_on_signals:
            await super().handle()
            return

        loop = asyncio.get_running_loop()
        stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stopping.set)
        listening = asyncio.ensure_future(super().handle())
        waiting = asyncio.ensure_future(stopping.wait())
        await asyncio.wait({listening, waiting}, return_when=asyncio.FIRST_COMPLETED)
        await supervisor().shutdown()
        for task in (listening, waiting):
            task.cancel()
        await asyncio.gather(listening, waiting, return_exceptions=True)
