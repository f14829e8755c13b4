"""What every driver's run of an agent shares: its opening, its waits and its ending.

A driver (Claude Code, Codex, OpenCode, ACP) runs one session of its agent per run. The
session classes derive from `AgentSession`, which does once what each of them did for
itself, and keep only what their protocol needs:

- the run (`run`): a run cancelled before it starts ends at once; `drive` (the driver's
  own) runs it; a `RunFailed` becomes a failed result with its notice (`failed`); a stop by
  the worker (shutdown, a lost lease, hibernation: the task is cancelled) is marked
  `resumable_stop`; and the session always shuts down (`shutdown`);
- the start: the workspace scan and, once per run (not again when a worker resumes it),
  the notices of what the agent was kept from (`start_notices`); the run's floor reaching
  the agent's model endpoints (`floor_reaching`); the agent's own conversation continued
  from `ctx.resume_state` (`conversation_continued`);
- the waits: a future that completes when the run is cancelled (`cancel_waiter`), and the
  next entry of an event queue with a deadline (`next_entry`);
- the timeline: `emit` (a failed write of the timeline never ends the run) and `notice`.

`StdioSession` adds an agent that is a child process speaking JSON lines on stdio (Claude
Code, Codex app-server, ACP agents): `spawn` starts it inside the run's floor
(`subprocess_io.JsonLinesProcess` → `processes.spawn`) and `close_agent` stops it (stdin
EOF, SIGTERM, SIGKILL; SIGTERM first for a stop the agent must be able to resume from).
OpenCode's agent is an HTTP server (`opencode/server.py`, spawned the same way).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from drivers import agent_env, sandbox, workspace_config
from drivers.base import ActivityEmitter, RunContext, RunResult, RunStatus, emit_checked
from drivers.subprocess_io import JsonLinesProcess, ProcessStartError
from runs.events import DriverKind, Notice

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT_S = 300.0
DEFAULT_OUTPUT_LIMIT = 64 * 1024
DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_STDERR_TAIL_BYTES = 64 * 1024

# The user message that continues a resumed conversation (the agent restores its history;
# the model then makes again whatever was pending when the agent stopped).
CONTINUE_PROMPT = (
    "Gatehouse restarted while you were working. Continue the task from where you left off; "
    "a tool call that was waiting for approval can be made again."
)

# What `next_entry` answers besides the queue's own entries.
CANCEL = ("cancel", None)
TIMEOUT = ("timeout", None)


class RunFailed(Exception):
    """The run cannot go on: it fails with `reason` (stored on the run), `detail` its notice."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class Cancelled(Exception):
    """Someone cancelled the run while the session waited on the agent."""


def _ending_retrieved(task: asyncio.Future[Any]) -> None:
    """Mark a stopped task's ending as seen (no "exception was never retrieved" log)."""
    if not task.cancelled():
        task.exception()


async def stop_tasks(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel the tasks (None: none) and wait until each has ended, whatever its ending.

    A task's own ending (its cancellation, its exception) is swallowed; the caller's is not:
    cancelled while it waits, the caller is cancelled (the tasks, already told to stop, end
    on their own). `asyncio.wait` draws the line: it never raises a task's ending, only the
    caller's own cancellation. A caller that is already being cancelled (a session's
    `shutdown` in the `finally` of a cancelled run) still waits for its tasks: only a new
    cancellation, arriving during the wait, stops it.
    """
    live = [t for t in tasks if t is not None]
    if not live:
        return
    for task in live:
        task.cancel()
        task.add_done_callback(_ending_retrieved)
    await asyncio.wait(live)


class AgentSession(ActivityEmitter):
    """One run of an agent (see the module docstring); a driver's session derives from it."""

    # The driver's name in its notices (None: its notices do not carry it).
    driver: str | None = None

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.settings: Mapping[str, Any] = ctx.settings or {}
        # An agent that writes nothing this long while no decision is pending is hung.
        self.idle_timeout = float(self.settings.get("idle_timeout_s") or DEFAULT_IDLE_TIMEOUT_S)
        # A step's output is recorded up to this many characters.
        self.output_limit = int(self.settings.get("output_limit") or DEFAULT_OUTPUT_LIMIT)
        self.workspace = Path(ctx.workspace)
        # Completes when someone cancels the run (from `run` on).
        self.cancel_waiter: asyncio.Future[Any] | None = None
        # The worker stopped the run: the agent is stopped so that it can be resumed (SIGTERM
        # first, its transcript flushed with the pending request still open).
        self.resumable_stop = False

    # -- the run -------------------------------------------------------------------------

    async def run(self) -> RunResult:
        if self.ctx.cancelled():
            return RunResult(status="cancelled")
        self.cancel_waiter = asyncio.ensure_future(self.ctx.wait_cancelled())
        try:
            try:
                return await self.drive()
            except RunFailed as failed:
                return await self.failed(failed)
        except asyncio.CancelledError:
            self.resumable_stop = True
            raise
        finally:
            await self.shutdown()

    async def drive(self) -> RunResult:
        """Start the agent and run the turn (the driver's protocol)."""
        raise NotImplementedError

    def result(self, status: RunStatus, reason: str = "") -> RunResult:
        """The run's result so far (the agent's words, its usage) with `status`."""
        return RunResult(status=status, failure_reason=reason)

    async def failed(self, failed: RunFailed) -> RunResult:
        await self.notice("error", failed.detail, reason=failed.reason)
        return self.result("failed", failed.reason)

    async def shutdown(self) -> None:
        """Whatever the ending: the driver stops its agent and its tasks, then calls this."""
        await stop_tasks(self.cancel_waiter)

    # -- the start -----------------------------------------------------------------------

    async def scan_workspace(self) -> workspace_config.Scan:
        """The agent configuration the workspace holds (drivers/workspace_config.py)."""
        return await asyncio.to_thread(workspace_config.scan, self.workspace)

    async def start_notices(self, scan: workspace_config.Scan, agents: Sequence[str]) -> None:
        """Once per run (not again when a worker resumes it): what the agent was kept from,
        of the server's environment and of the workspace's configuration (`agents`' files)."""
        if self.ctx.resuming:
            return
        driver = self.driver or ""
        for payload in (agent_env.refused_notice(self.settings, driver=driver), scan.notice(agents=agents, driver=driver)):
            if payload is not None:
                await self.emit("notice", payload)

    def floor_reaching(self, urls: Iterable[str]) -> sandbox.Floor | None:
        """The run's floor, reaching the agent's model endpoints `urls`; None without a floor."""
        if self.ctx.floor is None:
            return None
        return self.ctx.floor.reaching(list(urls))

    async def conversation_continued(self, resumed: str, continued: str, *, save: Mapping[str, Any] | None = None) -> bool:
        """The agent's own conversation, found from `ctx.resume_state`, goes on. After a worker
        change (the run is resuming) the gate is told (`resumed_conversation`: only the step
        that was pending is matched against the record) and the notice says `resumed`; for a
        new run of the session, `save` (if any) becomes this run's agent state and the notice
        says `continued`. True after a worker change: the agent is then sent CONTINUE_PROMPT."""
        if self.ctx.resuming:
            await self.ctx.resumed_conversation()
            await self.notice("info", resumed)
            return True
        if save is not None:
            await self.ctx.save_agent_state(save)
        await self.notice("info", continued)
        return False

    # -- waits ---------------------------------------------------------------------------

    async def next_entry(
        self,
        queue: asyncio.Queue[tuple[str, Any]],
        *,
        timeout: float | None,
        cancellable: bool = True,
        exited: Awaitable[Any] | None = None,
    ) -> tuple[str, Any]:
        """The next entry of `queue`; else CANCEL once the run is cancelled (`cancellable`),
        ("exited", None) once `exited` (the agent's process ending) completes, or TIMEOUT
        after `timeout` seconds (None: no deadline)."""
        getter = asyncio.ensure_future(queue.get())
        waiters: set[asyncio.Future[Any]] = {getter}
        if cancellable and self.cancel_waiter is not None:
            waiters.add(self.cancel_waiter)
        exit_waiter = asyncio.ensure_future(exited) if exited is not None else None
        if exit_waiter is not None:
            waiters.add(exit_waiter)
        try:
            done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if exit_waiter is not None:
                exit_waiter.cancel()
            if not getter.done():
                getter.cancel()
        if getter in done:
            return getter.result()
        if cancellable and self.cancel_waiter in done:
            return CANCEL
        if exit_waiter is not None and exit_waiter in done:
            return "exited", None
        return TIMEOUT

    # -- the timeline --------------------------------------------------------------------

    async def forward(self, kind: DriverKind, payload: Mapping[str, Any]) -> None:
        try:
            await emit_checked(self.ctx, kind, payload)
        except Exception:  # the timeline must never end the run
            log.exception("%s: emitting %s activity failed", self.driver or type(self).__name__, kind)

    async def notice(self, level: str, text: str, **extra: Any) -> None:
        driver = {"driver": self.driver} if self.driver is not None else {}
        # (a notice's extra keys are each caller's own: not checked)
        await self.emit("notice", cast(Notice, {"level": level, "text": text, **driver, **extra}))


class StdioSession(AgentSession):
    """An agent that is a child process speaking JSON lines on stdio (`self.proc`)."""

    def __init__(
        self,
        ctx: RunContext,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES,
    ) -> None:
        super().__init__(ctx)
        self.proc = JsonLinesProcess(max_line_bytes=max_line_bytes, stderr_tail_bytes=stderr_tail_bytes)

    async def spawn(
        self, argv: Sequence[str], *, env: Mapping[str, str], floor: sandbox.Floor | None, failure: str = "agent_not_found"
    ) -> None:
        """Start the agent in the workspace, inside `floor` (the run's, reaching the agent's
        endpoints; None: none); one that cannot start fails the run with `failure`."""
        try:
            await self.proc.start(argv, cwd=self.workspace, env=env, floor=floor)
        except ProcessStartError as exc:
            raise RunFailed(failure, str(exc)) from exc

    async def close_agent(self, *, terminate_first: bool | None = None) -> int | None:
        """Stop the agent and its process group and reap it (safe to repeat): stdin EOF,
        then SIGTERM, then SIGKILL; SIGTERM first when `terminate_first` (default: a
        `resumable_stop`). Its exit code."""
        first = self.resumable_stop if terminate_first is None else terminate_first
        return await self.proc.close(timeout=5.0, terminate_first=first)

    def stderr_hint(self) -> str:
        """The end of the agent's stderr, for a failure's notice ("" when it wrote none)."""
        tail = self.proc.stderr_tail.strip()
        return f" stderr: {tail[-2000:]}" if tail else ""
