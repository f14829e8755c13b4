"""The RunContext a driver runs with, backed by the services (the worker's side of drivers/base.py).

Every write goes through `_fenced`: it names this worker's lease and, when another worker
took the run over, the write is refused (`LeaseLost`) and the run stops here at once —
the driver's task is cancelled, nothing more is recorded, the new owner carries on.
What a driver emits for the timeline is queued and written with the next write (a gate)
in its transaction, or within QUEUE_FLUSH_S (50 ms) when nothing else writes: the record
keeps its order, and an agent's next tool call waits for one transaction, not one per line
the agent printed before it (`runs.timeline.queued_then`). A step's result and an agent
process's record are queued too, but written at once, in the background.
A resuming run's requests are matched against the record first (the resume contract,
`approvals.gate.resume`), whatever the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from approvals import policy as core
from approvals.gate import (
    RecordedStep,
    external_ask,
    external_point_of,
    external_question,
    gate_replay,
    gate_request,
    gate_resolution,
    match_key,
    recorded_steps,
    step_finish,
    steps_supersede,
)
from approvals.models import Approval
from approvals.policy.request import NETWORK_TOOL
from approvals.services import approval_expire
from drivers import registry, runfloor
from drivers.base import GateAnswer, ToolRequest
from drivers.runegress import INSIDE_PORT, RunEgress
from infra import clock
from infra.broadcast import run_group
from runs.events import Event
from runs.leases import LeaseLost
from runs.models import Activity, Run, Step
from runs.selectors import runtime_mode_for
from runs.services import run_record_process, run_save_agent_state
from runs.timeline import DRIVER_ACTIVITY_KINDS, queued_then

logger = logging.getLogger(__name__)


# A notice names at most this many of the files the floor hides.
_HIDDEN_SHOWN = 10
# A queued write waits at most this long for the next write to take it along.
QUEUE_FLUSH_S = 0.05


def _db(fn: Any) -> Any:
    return database_sync_to_async(fn)


_UNREAD = object()


def _policy_of(run_id: int) -> tuple[Any, str]:
    return Run.objects.values_list("policy_document", "policy_version").get(pk=run_id)


# A driver's turn by its phase (its protocol's words); its other kinds are their own event.
_TURN_EVENTS = {"start": Event.TURN_STARTED, "end": Event.TURN_COMPLETED}
# What Codex and the scripted driver said of a turn before every driver said `phase`.
_OLD_TURN_PHASES = {"started": "start", "completed": "end"}
_KIND_EVENTS = {"message": Event.MESSAGE, "tool": Event.TOOL, "usage": Event.USAGE, "notice": Event.NOTICE}
# (bound once: an enum member's lookup by name costs ~70 ns on 3.11, on every line a driver emits)
_NOTICE, _TURN_STARTED, _TURN_UPDATE = Event.NOTICE, Event.TURN_STARTED, Event.TURN_UPDATE


class WorkerRunContext:
    """RunContext backed by the services: the gate records, decides and waits on rows."""

    def __init__(
        self,
        run: Any,
        *,
        owner: str,
        settings_for_driver: Mapping[str, Any],
        on_lease_lost: Callable[[], None],
        on_hibernate: Callable[[], None] | None = None,
        hand_out: Callable[[], Any] | None = None,
    ) -> None:
        self.run_id: int = run.pk
        # The worker's own hand-out connection, if it has one now (infra/pg_doorbell.py).
        self._hand_out = hand_out or (lambda: None)
        self.prompt: str = run.prompt
        self.workspace = Path(run.workspace)
        # Agent homes belong to the session: a follow-up run continues the same conversation.
        self.runtime_dir = runtime_dir_of(run)
        self.runtime_dir.mkdir(parents=True, exist_ok=True)
        self.scenario = run.scenario
        self.options: Mapping[str, Any] = dict(run.options or {})
        # (under four eyes, a mode the run's starter set approves nothing: runs.selectors)
        self.runtime_mode: str = runtime_mode_for(run)
        self.interaction_mode: str = run.session.interaction_mode
        self.run_policy: Mapping[str, Any] = run.run_policy
        self.settings: Mapping[str, Any] = settings_for_driver
        # The OS sandbox floor of every process this run starts (None: unrestricted, or off).
        self.floor = runfloor.run_floor(workspace=self.workspace, runtime_dir=self.runtime_dir, run_policy=run.run_policy)
        self.egress: RunEgress | None = None  # started with the run (`open`) when it has a floor
        self.descriptor = registry.descriptor(run.driver)
        # A run some worker (or an earlier process) already started is being resumed.
        self.resuming: bool = run.started_at is not None
        self.agent_state: Mapping[str, Any] = dict(run.agent_state or {})
        # A new run of a session continues the conversation its earlier runs had with the agent.
        self.conversation: Mapping[str, Any] = (
            {} if self.resuming else dict((run.session.agent_state or {}).get(run.driver) or {})
        )
        self.owner = owner
        self.lease_lost = False
        self._on_lease_lost = on_lease_lost
        self._on_hibernate = on_hibernate
        # A run waiting on a person longer than this sleeps (its driver can resume it).
        self._hibernate_after = float(settings.GATEHOUSE_HIBERNATE_AFTER_S or 0)
        if not getattr(self.descriptor, "resumes", False) or on_hibernate is None:
            self._hibernate_after = 0.0
        self._cancel = asyncio.Event()
        self._wake = asyncio.Event()
        self._channel = ""
        self._listener: asyncio.Task[None] | None = None
        # The recorded steps still to match (the resume contract) and how to match them.
        self._replay: list[RecordedStep] = []
        self._match_any_open = False
        self._replay_activities: list[tuple[str, str, dict[str, Any]]] = []
        # Queued writes (activities, steps' results) not written yet, and the one writer at
        # a time of this run.
        self._pending: list[tuple[Any, ...]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._flush_now = asyncio.Event()  # set: the flusher writes at once, not after QUEUE_FLUSH_S
        self._writing = asyncio.Lock()
        # The run's mark as started (`mark_when_needed`): written before anything of the
        # driver's, when the driver first writes; `marking()` tells the worker how it went.
        self._mark: Callable[[], Awaitable[Any]] | None = None
        self._marking: asyncio.Future[Any] | None = None
        self._dropped = False  # the mark failed: nothing of the driver's is written
        self._external_point: Any = _UNREAD  # the policy's external decision point, once read
        self._on_mark_failure: Callable[[], Any] | None = None

    @property
    def resume_state(self) -> Mapping[str, Any]:
        return (self.agent_state if self.resuming else self.conversation) or {}

    # --- doorbell ---------------------------------------------------------------------------

    async def open(self) -> None:
        layer = get_channel_layer()
        self._channel = await layer.new_channel()
        self._listener = asyncio.create_task(self._listen(layer, run_group(self.run_id)))
        if self.floor is not None:
            # the floor's only way out: this run's egress proxy (drivers/runegress.py)
            document, version = await _db(_policy_of)(self.run_id)
            compiled = core.compile_policy(document, version=version)
            await self._hide_denied_reads(compiled)
            self.egress = RunEgress(self, compiled)
            self.floor = self.floor.with_proxy(await self.egress.start(), inside_port=INSIDE_PORT)
        if self.resuming:
            self._replay = await _db(recorded_steps)(run_id=self.run_id)
            self._replay_activities = await _db(_recorded_driver_activities)(self.run_id)

    async def _hide_denied_reads(self, compiled: core.CompiledPolicy) -> None:
        """The workspace's files the policy never lets the agent read (a `reads` deny) are
        empty inside the floor, so code the policy cannot read does not read them either
        (approvals/policy/floor_reads.py); the timeline says which."""
        assert self.floor is not None
        hidden, cut = await asyncio.to_thread(core.denied_reads, compiled, str(self.workspace))
        if not hidden and not cut:
            return
        self.floor = self.floor.replace(hidden_files=(*self.floor.hidden_files, *hidden))
        shown = [str(Path(path).relative_to(self.workspace)) if Path(path).is_relative_to(self.workspace) else path
                 for path in hidden[:_HIDDEN_SHOWN]]
        more = f" and {len(hidden) - _HIDDEN_SHOWN} more" if len(hidden) > _HIDDEN_SHOWN else ""
        text = (f"Inside the sandbox floor, {len(hidden)} file(s) of the workspace that the policy never lets the agent "
                f"read are empty: {', '.join(shown)}{more}." if hidden else "")
        if cut:
            text += (" The workspace has more than 20,000 files: those past them were not checked against the policy's "
                     "reads rules, and are not hidden.")
        await self.emit("notice", {"text": text.strip(), "level": "info"})

    async def close(self) -> None:
        if self.egress is not None:
            await self.egress.stop()  # its connections end with the run
        async with self._writing:
            pass  # a write in flight (the flusher's) ends first
        await self.flush()
        if self._flusher is not None:
            self._flusher.cancel()  # asleep with nothing left to write
        if self._listener:
            self._listener.cancel()
        layer = get_channel_layer()
        if self._channel:
            try:
                await layer.group_discard(run_group(self.run_id), self._channel)
            except Exception:  # the layer is down: its group expires by itself
                logger.debug("run %s: could not leave the doorbell group", self.run_id, exc_info=True)

    async def _listen(self, layer: Any, group: str) -> None:
        """The run's doorbell. Without it (the channel layer is down) nothing is lost: the
        waits poll their rows; when the layer is back the doorbell is joined again."""
        joined = False
        backoff = 0.5
        while True:
            try:
                if not joined:
                    await layer.group_add(group, self._channel)
                    joined = True
                message = await layer.receive(self._channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                joined = False
                logger.debug("run %s: doorbell unreachable; polling rows meanwhile", self.run_id, exc_info=True)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.5
            if message.get("type") == "run.cancel":
                self._cancel.set()
            self._wake.set()

    def ring(self) -> None:
        """A decision for this run was committed (infra/pg_doorbell.py): read the row now."""
        self._wake.set()

    def request_cancel(self) -> None:
        self._cancel.set()
        self._wake.set()

    # --- fenced writes ------------------------------------------------------------------------

    def mark_when_needed(self, mark: Callable[[], Awaitable[Any]], *, on_failure: Callable[[], Any] | None = None) -> None:
        """Mark the run started (`mark`, a database write) before the first write of its
        driver, or when the worker asks (`marking`). The driver prepares and spawns its agent
        first, alone on the interpreter (its preparation and the mark are both Python: run
        side by side they only took turns on the GIL); the agent's spawn is written at
        once, so the mark is written while the agent starts. Nothing of the driver's is
        written, nor gated, before the mark, and nothing at all if the mark fails
        (`on_failure` is called then: the worker stops the driver at once)."""
        self._mark = mark
        self._on_mark_failure = on_failure

    def marking(self) -> asyncio.Future[Any]:
        """The mark, started now if nobody needed it yet (done at once when there is none)."""
        if self._marking is None:
            if self._mark is None:
                done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
                done.set_result(None)
                return done
            self._marking = asyncio.ensure_future(self._mark())
            self._marking.add_done_callback(self._mark_done)
        return self._marking

    def _mark_done(self, marking: asyncio.Future[Any]) -> None:
        """A failed mark: nothing of the driver's is written (what it queued is dropped, and
        a lost lease is the new owner's), and the worker is told to stop the driver."""
        if marking.cancelled() or marking.exception() is None:
            return
        self._dropped = True
        self._pending.clear()
        if isinstance(marking.exception(), LeaseLost):
            self.lease_lost = True
        if self._on_mark_failure is not None:
            self._on_mark_failure()

    async def _marked(self) -> None:
        """Wait for the mark before a write; after a failed mark no write goes through."""
        if self._mark is not None:
            with contextlib.suppress(Exception):  # (a failure is handled in `_mark_done`)
                await asyncio.shield(self.marking())
        if self.lease_lost or self._dropped:
            raise asyncio.CancelledError()

    async def _fenced(self, fn: Callable[..., Any] | None, **kwargs: Any) -> Any:
        """Call a service as this run's owner, after (and in the transaction of) what is
        queued so far; stop the run at once when the lease is gone. `fn=None`: only the queue."""
        await self._marked()
        async with self._writing:
            queued, self._pending = self._pending, []
            try:
                if not queued:
                    return None if fn is None else await _db(fn)(owner=self.owner, **kwargs)
                return await _db(queued_then)(
                    run_id=self.run_id, queued=queued, owner=self.owner, call=fn or _nothing, kwargs=kwargs
                )
            except LeaseLost:
                self.lease_lost = True
                logger.warning("run %s: another worker owns it now; stopping here without touching it", self.run_id)
                self._on_lease_lost()
                raise asyncio.CancelledError() from None

    async def flush(self) -> None:
        """Write what is queued (the worker calls it before it ends the run; `close` too)."""
        if self._pending and not self.lease_lost:
            try:
                await self._fenced(None)
            except asyncio.CancelledError:
                pass  # the lease is gone: nothing of this run is written any more

    async def _flush_soon(self) -> None:
        try:
            # Until nothing is queued: what was queued while a write was on its way waits
            # for the next round, not for the run's end.
            while self._pending and not self.lease_lost:
                # Long enough that the agent's next request (gated at once) usually takes the
                # queue along in its own transaction; short enough that the console shows it live.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._flush_now.wait(), QUEUE_FLUSH_S)
                self._flush_now.clear()
                await self.flush()
        except Exception:  # the timeline must never kill the run
            logger.exception("run %s: writing emitted activities failed", self.run_id)

    # --- RunContext -------------------------------------------------------------------------

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    async def wait_cancelled(self) -> None:
        await self._cancel.wait()

    async def emit(self, kind: str, payload: Mapping[str, Any]) -> None:
        if kind not in DRIVER_ACTIVITY_KINDS:
            kind = "notice"
        event = _KIND_EVENTS.get(kind, _NOTICE)
        if kind == "turn":
            # Every driver says a turn starts or ends by its `phase`; a turn's start records
            # the modes in force for it.
            event = _TURN_EVENTS.get(str(payload.get("phase") or ""), _TURN_UPDATE)
            if event is _TURN_STARTED:
                payload = {**payload, "runtime_mode": self.runtime_mode, "interaction_mode": self.interaction_mode}
        if self._replay_activities and kind != "notice":
            # A run replayed from its prompt says again what it already said: record it once.
            if self._replay_activities[0] == (kind, event, dict(payload)):
                self._replay_activities.pop(0)
                return
            self._replay_activities = []
        self._queue(("activity", kind, event, dict(payload)))

    def _queue(self, entry: tuple[Any, ...], *, at_once: bool = False) -> None:
        """Queue a write; `at_once`: the flusher writes the queue now, in the background,
        instead of waiting for the next write to take it along."""
        self._pending.append(entry)
        if at_once:
            self._flush_now.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush_soon())

    async def step_finished(self, step_id: int, *, output: str = "", exit_code: int | None = None, error: str = "") -> None:
        # Written at once in the background, with what was emitted before it: the agent is
        # now busy with the result (its model reads it), so the write is off the path of
        # its next tool call, whose gate no longer carries it (1 ms less a gate, measured on
        # Codex). A driver whose next request follows at once (the scripted one) still
        # writes it in that request's transaction: the gate takes the queue first.
        self._queue(("call", step_finish, {"run_id": self.run_id, "step_id": step_id, "output": output,
                                           "exit_code": exit_code, "error": error}), at_once=True)

    async def save_agent_state(self, state: Mapping[str, Any]) -> None:
        self.agent_state = dict(state)
        await self._fenced(run_save_agent_state, run_id=self.run_id, state=dict(state))

    async def process_started(self, record: Mapping[str, Any]) -> None:
        """An agent process of this run started (drivers/processes.py records it here).

        Written at once, but in the background: the driver talks to the process meanwhile
        (Codex's `initialize` went out 2–5 ms sooner than after an awaited write). Until the
        record lands, a worker that dies takes the process with it (its parent-death
        signal); one that lost its lease finds out on this write and stops the run."""
        self._queue(("call", run_record_process, {"run_id": self.run_id, "record": dict(record)}), at_once=True)

    async def resumed_conversation(self) -> None:
        # The agent remembers its own history: only what was still open can come again, and
        # the agent says new things (nothing to de-duplicate against the old log).
        self._replay = [s for s in self._replay if s.open]
        self._match_any_open = True
        self._replay_activities = []

    async def gate(self, request: ToolRequest) -> GateAnswer:
        """Record and decide one request; wait on the approval row when a person must decide."""
        if self.egress is not None and request.tool != NETWORK_TOOL:
            self.egress.task_started = True  # from now on an unlisted host is asked about
        outcome = None
        recorded = await self._match_record(request)
        if recorded is not None:
            outcome = await self._fenced(gate_replay, run_id=self.run_id, step_id=recorded.id)
        if outcome is None:
            consulted = await self._external_consulted(request)
            outcome = await self._fenced(
                gate_request,
                run_id=self.run_id,
                tool=request.tool,
                input=dict(request.input),
                cwd=request.cwd,
                kind=request.kind,
                subtype=request.subtype,
                presentation=dict(request.presentation),
                # The mode this run started under: a change applies from the next turn.
                runtime_mode=self.runtime_mode,
                tool_call_id=request.call_id,
                consulted=consulted,
            )
        return await self._settle(outcome)

    async def _external_consulted(self, request: ToolRequest) -> Any:
        """The answer of the rule policy's external decision point (None: it names none),
        asked before the gate's transaction and off the database thread: a slow one holds
        neither the write lock nor the other runs of this worker (issue 30.9)."""

        if request.kind != "permission":
            return None
        if self._external_point is _UNREAD:
            self._external_point = await _db(external_point_of)(self.run_id)  # the snapshot never changes
        if self._external_point is None:
            return None
        question = await _db(external_question)(
            run_id=self.run_id, tool=request.tool, input=dict(request.input), cwd=request.cwd, kind=request.kind,
            subtype=request.subtype, tool_call_id=request.call_id,
        )
        return None if question is None else await asyncio.to_thread(external_ask, question)

    async def _hibernate(self) -> None:
        """Waited long enough on a person: stop here (the worker stops the agent so that it
        can be resumed, and the run sleeps until a decision wakes it) — unless a step is
        executing meanwhile (another tool call of the agent is still running)."""
        await self.flush()  # a step's result may still be queued
        if await _db(_step_executing)(self.run_id):
            return
        assert self._on_hibernate is not None
        self._on_hibernate()  # cancels the run's task; the cancellation arrives here
        await asyncio.Event().wait()

    # --- the resume contract ----------------------------------------------------------------

    async def _match_record(self, request: ToolRequest) -> RecordedStep | None:
        """The recorded step this request replays, or None (a new request). The first
        request that differs from the record closes the open steps left in it."""
        if not self._replay:
            return None
        key = match_key(tool=request.tool, input=dict(request.input), kind=request.kind)
        candidates = self._replay if self._match_any_open else self._replay[:1]
        for recorded in candidates:
            if recorded.key == key:
                self._replay.remove(recorded)
                return recorded
        leftovers = [s.id for s in self._replay if s.open]
        self._replay = []
        self._replay_activities = []
        if leftovers:
            await self._fenced(steps_supersede, run_id=self.run_id, step_ids=leftovers)
        return None

    # --- waiting ----------------------------------------------------------------------------

    async def _at_once(self, approval_id: int) -> tuple[bool, GateAnswer | None]:
        """Woken by a decision: its approved permission handed out on the worker's own
        asynchronous connection, in this loop (no thread, no pooled connection), when the
        worker has one and nothing of this run's is queued to write first. Returns whether
        the statement was tried, and the outcome (None: the general path decides)."""
        hand_out = self._hand_out()
        if hand_out is None:
            return False, None
        async with self._writing:
            if self._pending:
                return False, None  # the queue goes first, in one transaction: the general path
            outcome: GateAnswer | None = await hand_out.allowed_at_once(approval_id, self.owner)
            return outcome is not None or hand_out.connected, outcome

    async def _settle(self, outcome: GateAnswer) -> GateAnswer:
        loop = asyncio.get_running_loop()
        while outcome.outcome == "wait":
            approval_id = outcome.approval_id
            waiting_since = loop.time()
            woken = False  # by the doorbell (a decision was made), not the poll's timer
            while True:
                self._wake.clear()
                if self._cancel.is_set():
                    return GateAnswer(outcome="abort", reason="cancelled", decided_by="system", step_id=outcome.step_id)
                tried, resolved = await self._at_once(approval_id) if woken and approval_id is not None else (False, None)
                if resolved is None:
                    resolved = await self._fenced(
                        gate_resolution, approval_id=approval_id, retry_supported=self.descriptor.retry,
                        woken=woken and not tried,  # (the one statement, once)
                    )
                if resolved is not None:
                    outcome = resolved
                    break
                timeout = settings.GATEHOUSE_WAIT_POLL_S
                deadline = await _db(_deadline_in)(approval_id)
                if deadline is not None and deadline <= 0:
                    await self._fenced(approval_expire, approval_id=approval_id)
                    continue
                if deadline is not None:
                    timeout = min(timeout, deadline)
                if self._hibernate_after and loop.time() - waiting_since >= self._hibernate_after:
                    await self._hibernate()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=max(timeout, 0.01))
                    woken = True
                except TimeoutError:
                    woken = False
        return outcome  # "wait" was settled above: the gate's answer, as it is


def _nothing(*, owner: str | None) -> None:
    """No write of its own: `flush` writes only the pending activities."""


def runtime_dir_of(run: Any) -> Path:
    """The scratch space of a run's agent (its HOME, CLAUDE_CONFIG_DIR, CODEX_HOME): one per
    session, under GATEHOUSE_RUNTIME_DIR, never the server user's own."""
    return Path(settings.GATEHOUSE_RUNTIME_DIR) / f"session-{run.session_id}"


def _recorded_driver_activities(run_id: int) -> list[tuple[str, str, dict[str, Any]]]:
    # Only what the driver itself emitted (`emit` names the event after the kind, or
    # `turn.*`), not what the gate recorded under the same kinds (`tool.requested`...).
    rows = Activity.objects.filter(run_id=run_id, kind__in=DRIVER_ACTIVITY_KINDS - {"notice"}).order_by("seq")
    return [(a.kind, a.event, _turn_as_now(a.kind, a.payload)) for a in rows if a.event == a.kind or a.event.startswith("turn.")]


def _turn_as_now(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A turn recorded before every driver said `phase` (Codex's and the scripted driver's
    `event: started/completed`), as the driver says it now: a run resumed across the change
    still finds what it already said."""
    if kind != "turn" or "phase" in payload or payload.get("event") not in _OLD_TURN_PHASES:
        return payload
    rest = {k: v for k, v in payload.items() if k != "event"}
    return {"phase": _OLD_TURN_PHASES[payload["event"]], **rest}


def _step_executing(run_id: int) -> bool:
    return Step.objects.filter(run_id=run_id, status=Step.Status.EXECUTING).exists()


def _deadline_in(approval_id: int) -> float | None:
    deadline = Approval.objects.filter(pk=approval_id).values_list("deadline", flat=True).first()
    if deadline is None:
        return None
    return (deadline - clock.now()).total_seconds()
