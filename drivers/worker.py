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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from channels.consumer import AsyncConsumer
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.worker import Worker
from django.conf import settings

from drivers import registry
from drivers.base import Decision, DriverError, RunAborted, RunResult, ToolRequest

logger = logging.getLogger(__name__)


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn)


class WorkerRunContext:
    """RunContext backed by the services: the gate records, decides and waits on rows."""

    def __init__(self, run: Any, supervisor: Supervisor) -> None:
        self.run_id: int = run.pk
        self.prompt: str = run.prompt
        self.workspace = Path(run.workspace)
        self.runtime_dir = settings.GATEHOUSE_RUNTIME_DIR / f"run-{run.pk}"
        self.runtime_dir.mkdir(parents=True, exist_ok=True)
        self.scenario = run.scenario
        self.runtime_mode: str = run.session.runtime_mode
        self.interaction_mode: str = run.session.interaction_mode
        self.run_policy: Mapping[str, Any] = run.run_policy
        self.settings: Mapping[str, Any] = driver_settings(run.driver)
        self.descriptor = registry.descriptor(run.driver)
        self._supervisor = supervisor
        self._cancel = asyncio.Event()
        self._wake = asyncio.Event()
        self.lease_lost = False
        self._channel = ""
        self._listener: asyncio.Task[None] | None = None
        # Steps recorded before this worker took the run, replayed in order on resume.
        self._replay: list[dict[str, Any]] = []
        self._replay_activities: list[tuple[str, str, dict[str, Any]]] = []
        self._gate_calls = 0

    # --- doorbell ---------------------------------------------------------------------------

    async def open(self) -> None:
        from project.broadcast import run_group

        layer = get_channel_layer()
        self._channel = await layer.new_channel()
        await layer.group_add(run_group(self.run_id), self._channel)
        self._listener = asyncio.create_task(self._listen(layer))
        self._replay = await _db(_recorded_steps)(self.run_id)
        self._replay_activities = await _db(_recorded_driver_activities)(self.run_id)

    async def close(self) -> None:
        from project.broadcast import run_group

        if self._listener:
            self._listener.cancel()
        layer = get_channel_layer()
        if self._channel:
            await layer.group_discard(run_group(self.run_id), self._channel)

    async def _listen(self, layer: Any) -> None:
        while True:
            message = await layer.receive(self._channel)
            if message.get("type") == "run.cancel":
                self._cancel.set()
            self._wake.set()

    def request_cancel(self) -> None:
        self._cancel.set()
        self._wake.set()

    # --- RunContext -------------------------------------------------------------------------

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    async def wait_cancelled(self) -> None:
        await self._cancel.wait()

    async def emit(self, kind: str, payload: Mapping[str, Any]) -> None:
        from runs.services import DRIVER_ACTIVITY_KINDS, activity_record

        if kind not in DRIVER_ACTIVITY_KINDS:
            kind = "notice"
        event = kind if kind != "turn" else f"turn.{payload.get('event', 'update')}"
        if self._replay_activities and kind != "notice":
            # A resumed run replays what it already said: record it once, not twice.
            if self._replay_activities[0] == (kind, event, dict(payload)):
                self._replay_activities.pop(0)
                return
            self._replay_activities = []
        await _db(activity_record)(run_id=self.run_id, kind=kind, event=event, payload=dict(payload))

    async def step_finished(self, step_id: int, *, output: str = "", exit_code: int | None = None, error: str = "") -> None:
        from runs.services import step_finish

        await _db(step_finish)(run_id=self.run_id, step_id=step_id, output=output, exit_code=exit_code, error=error)

    async def gate(self, request: ToolRequest) -> Decision:
        """Record and decide one request; wait on the approval row when a person must decide."""
        from approvals.services import gate_request

        replayed = self._replayed(request)
        if replayed is not None:
            return await self._resume_step(replayed)
        outcome = await _db(gate_request)(
            run_id=self.run_id,
            tool=request.tool,
            input=dict(request.input),
            cwd=request.cwd,
            kind=request.kind,
            subtype=request.subtype,
            presentation=dict(request.presentation),
            # The mode this run started under: a change applies from the next turn.
            runtime_mode=self.runtime_mode,
        )
        return await self._settle(outcome)

    # --- waiting ----------------------------------------------------------------------------

    async def _settle(self, outcome: Any) -> Decision:
        from approvals.services import approval_expire, gate_resolution

        while outcome.outcome == "wait":
            approval_id = outcome.approval_id
            while True:
                self._wake.clear()
                if self._cancel.is_set():
                    return Decision(outcome="abort", reason="cancelled", decided_by="system", step_id=outcome.step_id)
                resolved = await _db(gate_resolution)(approval_id=approval_id, retry_supported=self.descriptor.retry)
                if resolved is not None:
                    outcome = resolved
                    break
                timeout = settings.GATEHOUSE_WAIT_POLL_S
                deadline = await _db(_deadline_in)(approval_id)
                if deadline is not None and deadline <= 0:
                    await _db(approval_expire)(approval_id=approval_id)
                    continue
                if deadline is not None:
                    timeout = min(timeout, deadline)
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, 0.01))
                except TimeoutError:
                    pass
        return Decision(
            outcome=outcome.outcome,
            reason=outcome.reason,
            decided_by=outcome.decided_by,
            answers=outcome.answers,
            plan_mode=outcome.plan_mode,
            scope=outcome.scope,
            timed_out=outcome.timed_out,
            step_id=outcome.step_id,
        )

    def _replayed(self, request: ToolRequest) -> dict[str, Any] | None:
        index = self._gate_calls
        self._gate_calls += 1
        if index >= len(self._replay):
            return None
        recorded = self._replay[index]
        if recorded["tool"] != request.tool or recorded["input"] != dict(request.input):
            self._replay = []  # the agent took another path: decide afresh from here on
            return None
        return recorded

    async def _resume_step(self, recorded: dict[str, Any]) -> Decision:
        from approvals.services import GateOutcome

        status = recorded["status"]
        step_id = recorded["id"]
        if status == "finished":
            return Decision(outcome="allow", decided_by=recorded["decided_by"], step_id=step_id, already_done=True)
        if status == "denied":
            return Decision(outcome="deny", reason=recorded["reason"], decided_by=recorded["decided_by"], step_id=step_id)
        if status == "aborted":
            return Decision(outcome="abort", reason="policy_abort", decided_by=recorded["decided_by"], step_id=step_id)
        if status == "waiting" and recorded["approval_id"]:
            return await self._settle(GateOutcome(step_id=step_id, outcome="wait", approval_id=recorded["approval_id"]))
        # Allowed but never reported finished: the side effect may have happened.
        outcome = await _db(_interrupted_side_effect)(self.run_id, step_id)
        return await self._settle(outcome)


def _recorded_steps(run_id: int) -> list[dict[str, Any]]:
    from approvals.models import Approval
    from runs.models import Step

    rows = []
    for step in Step.objects.filter(run_id=run_id).order_by("seq"):
        # The step's latest approval, whatever its state: one decided while no worker
        # owned the run is applied on resume, not asked again.
        latest = Approval.objects.filter(step=step).order_by("-id").values_list("id", flat=True).first()
        rows.append(
            {
                "id": step.pk,
                "tool": step.tool,
                "input": step.request.get("input", {}),
                "status": step.status,
                "reason": step.reason,
                "decided_by": step.decided_by,
                "approval_id": latest,
            }
        )
    return rows


def _recorded_driver_activities(run_id: int) -> list[tuple[str, str, dict[str, Any]]]:
    from runs.models import Activity
    from runs.services import DRIVER_ACTIVITY_KINDS

    rows = Activity.objects.filter(run_id=run_id, kind__in=DRIVER_ACTIVITY_KINDS - {"notice"}).order_by("seq")
    return [(a.kind, a.event, a.payload) for a in rows]


def _interrupted_side_effect(run_id: int, step_id: int) -> Any:
    from approvals.services import interrupted_side_effect_request

    return interrupted_side_effect_request(run_id=run_id, step_id=step_id)


def _deadline_in(approval_id: int) -> float | None:
    from approvals.models import Approval
    from project import clock

    deadline = Approval.objects.filter(pk=approval_id).values_list("deadline", flat=True).first()
    if deadline is None:
        return None
    return (deadline - clock.now()).total_seconds()


def driver_settings(driver: str) -> dict[str, Any]:
    """The driver's typed options, from Django settings (drivers never read settings)."""
    common: dict[str, Any] = {
        "agents_dir": str(settings.GATEHOUSE_AGENTS_DIR),
        "command_timeout_s": settings.GATEHOUSE_COMMAND_TIMEOUT_S,
        "output_limit": settings.GATEHOUSE_OUTPUT_LIMIT,
        # The agent's environment is an allow-list (drivers/agent_env.py): these add to it.
        "env_names": list(settings.GATEHOUSE_AGENT_ENV),
        "env_values": dict(settings.GATEHOUSE_AGENT_ENV_VALUES),
    }
    if driver == "claude-code":
        common.update(
            claude_bin=settings.GATEHOUSE_CLAUDE_BIN,
            model=settings.GATEHOUSE_CLAUDE_MODEL,
            allow_bypass_permissions=settings.GATEHOUSE_ALLOW_BYPASS_PERMISSIONS,
            mcp_servers=dict(settings.GATEHOUSE_CLAUDE_MCP_SERVERS),
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
        from runs.services import run_claim

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
        from runs.services import run_release, runs_claimable, runs_leased

        # A worker of this machine that is gone (the embedded server restarted) frees its
        # runs at once instead of after the lease TTL.
        for run_id, owner in await _db(runs_leased)():
            if owner != self.owner and _dead_local_owner(owner):
                await _db(run_release)(run_id=run_id, owner=owner)
        for run_id in await _db(runs_claimable)():
            await self.start_run(run_id)

    async def _maintain(self) -> None:
        """Reconcile free runs and renew this worker's leases, forever."""
        from runs.services import run_heartbeat

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
                        # stop here and leave the run's status to its new owner.
                        context.lease_lost = True
                        context.request_cancel()
                    elif context and cancel:
                        context.request_cancel()
            except Exception:
                logger.exception("worker maintenance failed; retrying")
            await asyncio.sleep(interval)

    async def _execute(self, run_id: int) -> None:
        """Run one driver to its end; whatever happens, the run ends with a status."""
        from runs.models import Run
        from runs.services import run_finish, run_mark_running, run_release

        context: WorkerRunContext | None = None
        result: RunResult
        try:
            run = await _db(_load_run)(run_id)
            if run.cancel_requested:
                await _db(run_finish)(run_id=run_id, status=Run.Status.CANCELLED)
                return
            context = WorkerRunContext(run, self)
            self.contexts[run_id] = context
            await context.open()
            await _db(run_mark_running)(run_id=run_id, resumed=run.started_at is not None)
            driver = registry.create(run.driver)
            result = await driver.run(context)
        except RunAborted as exc:
            result = RunResult(status="failed", failure_reason=exc.reason)
        except DriverError as exc:
            result = RunResult(status="failed", failure_reason=exc.reason)
            await self._notice(run_id, {"error": exc.reason, "detail": str(exc)})
        except asyncio.CancelledError:
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
        await _db(run_finish)(
            run_id=run_id,
            status=result.status,
            failure_reason=result.failure_reason or ("driver_failed" if result.status == "failed" else ""),
            text=result.text,
            usage=result.usage,
        )

    async def _notice(self, run_id: int, payload: dict[str, Any]) -> None:
        from runs.services import activity_record

        try:
            await _db(activity_record)(run_id=run_id, kind="notice", event="notice", payload=payload)
        except Exception:
            logger.exception("could not record a notice on run %s", run_id)


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
        await super().handle()
