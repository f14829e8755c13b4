"""One run of an ACP agent: spawn, initialize, session/new (or session/load), prompt, stop.

The protocol (typed schema, JSON-RPC requests both ways, routing to the client object)
is the `agent-client-protocol` package; the process and its stdio are ours
(`transport.ProcessTransport`). Every wait on the agent also watches for a cancel, an
abort decided by the gate, the agent going away or writing garbage, and silence (time
spent waiting on a person or a running command is not silence).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Awaitable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import acp
from acp.schema import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
)

from drivers.base import OptionsError, RunContext, RunResult, RunStatus, WorkspaceConfigError
from drivers.session import CONTINUE_PROMPT, Cancelled, RunFailed, StdioSession, stop_tasks
from runs.events import DriverKind

from . import agents
from .client import AcpClient
from .transport import ProcessTransport

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP_GRACE_S = 10.0
# Follow-up prompts that tell the agent why Gatehouse refused something, per run.
MAX_REFUSAL_PROMPTS = 10


class _Aborted(Exception):
    pass


class AcpRun(StdioSession):
    driver = "acp"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.workspace = Path(ctx.workspace).resolve()
        self.transport = ProcessTransport(self.proc)
        self.client: AcpClient | None = None
        self.conn: Any = None
        self.session_id = ""
        self.agent_name = ""
        self._stays_after_eof = False  # stopped with SIGTERM first (agents.STAYS_AFTER_EOF)
        self.prompt_text = ""
        self.abort: tuple[str, str] | None = None
        self._abort_event = asyncio.Event()
        self._prompt: asyncio.Future[Any] | None = None  # the open session/prompt, kept for a cancel

    # -- entry (the run itself, its failures and its ending: drivers/session.py) ---------------

    async def drive(self) -> RunResult:
        try:
            await self._start()
            return await self._turns()
        except Cancelled:
            await self._stop_turn()
            await self.notice("info", "Run cancelled: session/cancel sent to the agent.")
            return self.result("cancelled")
        except _Aborted:
            await self._stop_turn()
            assert self.abort is not None
            reason, detail = self.abort
            await self.notice("error", detail, reason=reason)
            return self.result("failed", reason)

    def result(self, status: RunStatus, reason: str = "") -> RunResult:
        client = self.client
        text = "\n".join(client.texts) if client else ""
        usage = dict(client.usage) if client else {}
        return RunResult(status=status, failure_reason=reason, text=text, usage=usage)

    # -- start -------------------------------------------------------------------------------

    async def _start(self) -> None:
        try:
            spec = agents.agent_for(self.ctx.options or {}, self.settings)
        except OptionsError as exc:
            raise RunFailed("invalid_options", str(exc)) from None
        self.agent_name = spec.name
        self._stays_after_eof = spec.profile in agents.STAYS_AFTER_EOF
        scan = await self.scan_workspace()
        env = agents.environment(spec, self.settings, Path(self.ctx.runtime_dir), scan.git_env())
        program = spec.argv[0] if Path(spec.argv[0]).is_absolute() else shutil.which(spec.argv[0], path=env.get("PATH"))
        if not program or not Path(program).exists():
            raise RunFailed("agent_not_found", f"ACP agent {spec.name!r}: {spec.argv[0]} not found (run `make agents`, or set GATEHOUSE_ACP_AGENTS).")
        if spec.profile == "claude-code-acp" and spec.argv[1].endswith(".js") and not Path(spec.argv[1]).exists():
            raise RunFailed("agent_not_found", f"ACP agent {spec.name!r}: {spec.argv[1]} not found (run `make agents`).")
        try:
            agents.check_workspace(self.workspace, self.ctx.options or {}, self.settings)
        except WorkspaceConfigError as exc:
            # Checked at run creation too; a file that appeared since is refused here.
            raise RunFailed("workspace_agent_config", str(exc)) from None
        await self.start_notices(scan, agents.SCANNED[spec.profile])
        await self.spawn([program, *spec.argv[1:]], env=env, floor=self.floor_reaching(agents.model_urls(spec, self.settings, env)))
        self.transport.last_received = asyncio.get_running_loop().time()
        self.client = AcpClient(self.ctx, env=env, on_abort=self._on_abort)
        # Unstable methods are routed (elicitation/create is one); each is answered on purpose.
        self.conn = acp.connect_to_agent(self.client, self.transport, use_unstable_protocol=True)
        init = await self._call(
            self.conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                # Forms (elicitation, unstable in ACP) reach a person as questions; URL
                # elicitations are not offered (drivers/elicitation.py).
                client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True,
                                                       elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities())),
                client_info=Implementation(name="gatehouse", title="Gatehouse", version="0.1.0"),
            ),
            "initialize",
        )
        meta = agents.session_meta(spec, self.workspace)
        resumed = await self._load_session(init, meta)
        if not resumed:
            session = await self._call(self.conn.new_session(cwd=str(self.workspace), mcp_servers=[], **meta), "session/new")
            self.session_id = str(session.session_id)
            await self.ctx.save_agent_state({"agent": spec.name, "session_id": self.session_id})
            if self.ctx.interaction_mode == "plan":
                await self._enter_plan_mode(session)
        self.client.session_id = self.session_id
        info = init.agent_info
        await self.emit("turn", {"phase": "start", "agent": spec.name, "session_id": self.session_id, "resumed": resumed,
                                  "agent_version": getattr(info, "version", None)})  # fmt: skip
        if not self.prompt_text:
            self.prompt_text = self.ctx.prompt or ""

    async def _load_session(self, init: Any, meta: Mapping[str, Any]) -> bool:
        """Continue an ACP session with `session/load`, when the agent can: after a restart
        this run's own (then `resumed_conversation`, and the agent is told to continue), or
        for a new run of the session the conversation an earlier run of it had (a follow-up
        turn with this run's prompt). False to start a new session (after a restart the gate
        then answers the steps that already ran from the record)."""
        state = self.ctx.resume_state
        session_id = str(state.get("session_id") or "")
        if not session_id or state.get("agent") != self.agent_name:
            return False
        capabilities = getattr(init, "agent_capabilities", None)
        if not getattr(capabilities, "load_session", False):
            await self.notice("info", f"The agent cannot load session {session_id}; starting a new one.")
            return False
        assert self.client is not None
        self.client.replaying = True
        try:
            await self._call(self.conn.load_session(cwd=str(self.workspace), session_id=session_id, mcp_servers=[], **meta), "session/load")
        except RunFailed as failed:
            if failed.reason != "agent_error":
                raise
            await self.notice("warning", f"Could not load session {session_id} ({failed.detail}); starting a new one.")
            return False
        finally:
            self.client.replaying = False
        self.session_id = session_id
        if await self.conversation_continued(
            f"Resumed the agent's session {session_id} (session/load).",
            f"Continued the session's conversation with the agent ({session_id}, session/load).",
            save={"agent": self.agent_name, "session_id": session_id},
        ):
            self.prompt_text = CONTINUE_PROMPT
        return True

    async def _enter_plan_mode(self, session: Any) -> None:
        modes = getattr(session, "modes", None)
        available = {str(m.id) for m in getattr(modes, "available_modes", None) or []}
        if "plan" in available:
            await self._call(self.conn.set_session_mode(session_id=self.session_id, mode_id="plan"), "session/set_mode")
        else:
            await self.notice("warning", "Plan mode was asked for, but this agent offers no plan mode; running in its default mode.")

    # -- turns -------------------------------------------------------------------------------

    async def _turns(self) -> RunResult:
        assert self.client is not None
        text = self.prompt_text
        for _ in range(MAX_REFUSAL_PROMPTS + 1):
            self._prompt = asyncio.ensure_future(self.conn.prompt(session_id=self.session_id, prompt=[acp.text_block(text)]))
            response = await self._call(self._prompt, "session/prompt")
            await self.client.flush_chunks()
            stop = str(response.stop_reason)
            if response.usage is not None:
                self.client.usage = response.usage.model_dump(mode="json", by_alias=True, exclude_none=True)
                await self.emit("usage", self.client.usage)
            await self.emit("turn", {"phase": "end", "stop_reason": stop})
            if self.abort is not None:
                raise _Aborted()
            if stop == "cancelled" and self.ctx.cancelled():
                raise Cancelled()
            if stop != "end_turn":
                return self.result("failed", f"agent_{stop}")
            if not self.client.refusals:
                return self.result("completed")
            # The agent could not read why: tell it now, in the conversation.
            text = "\n".join(self.client.refusals)
            self.client.refusals = []
        return self.result("completed")

    # -- waiting on the agent --------------------------------------------------------------------

    async def _call(self, awaitable: Awaitable[T], method: str, *, cancellable: bool = True) -> T:
        """The agent's answer to `method`; raises Cancelled, _Aborted or RunFailed first when
        the run is cancelled, the gate aborts it, or the agent fails or falls silent. An
        open session/prompt is left running then, for `_stop_turn` to wait on."""
        task = asyncio.ensure_future(awaitable)
        abort = asyncio.ensure_future(self._abort_event.wait())
        waiters: set[asyncio.Future[Any]] = {task, abort}
        if cancellable and self.cancel_waiter is not None:
            waiters.add(self.cancel_waiter)
        loop = asyncio.get_running_loop()
        try:
            while True:
                done, _ = await asyncio.wait(waiters, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
                if task in done:
                    return self._unwrap(task, method)
                if abort in done:
                    raise _Aborted()
                if self.cancel_waiter in done:
                    raise Cancelled()
                busy = self.client is not None and (self.client.gates_waiting or any(
                    t.exit_status() is None for t in self.client.terminals.values()))  # fmt: skip
                if not busy and loop.time() - self.transport.last_received > self.idle_timeout:
                    raise RunFailed("agent_timeout", f"The agent wrote nothing for {self.idle_timeout:g} s while no decision was pending.{self.stderr_hint()}")
        finally:
            abort.cancel()
            if not task.done() and task is not self._prompt:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    def _unwrap(self, task: asyncio.Future[T], method: str) -> T:
        try:
            return task.result()
        except acp.RequestError as exc:
            data = f" ({exc.data})" if exc.data else ""
            raise RunFailed("agent_error", f"The agent refused {method}: {exc}{data}{self.stderr_hint()}") from None
        except ConnectionError:
            if self.transport.error:
                raise RunFailed("agent_protocol_error", f"ACP protocol error: {self.transport.error}") from None
            code = self.proc.returncode
            raise RunFailed("agent_exited", f"The agent exited{f' (exit code {code})' if code is not None else ''} before {method} finished.{self.stderr_hint()}") from None

    def _on_abort(self, reason: str, detail: str) -> None:
        if self.abort is None:
            self.abort = (reason, detail)
        self._abort_event.set()

    # -- stopping ----------------------------------------------------------------------------------

    async def _stop_turn(self) -> None:
        """session/cancel, answer every pending permission `cancelled` (the client's waits
        end on `stopping`), then give the turn a moment to end with stopReason cancelled."""
        client = self.client
        if client is None or self.conn is None or not self.session_id:
            return
        with contextlib.suppress(Exception):
            await self.conn.cancel(session_id=self.session_id)
        client.stopping.set()
        await client.close_terminals()
        prompt = self._prompt
        if prompt is not None and not prompt.done():
            eof = asyncio.ensure_future(self.transport.eof.wait())
            await asyncio.wait({prompt, eof}, timeout=STOP_GRACE_S, return_when=asyncio.FIRST_COMPLETED)
            eof.cancel()
            if prompt.done() and not prompt.cancelled() and prompt.exception() is None:
                await self.emit("turn", {"phase": "end", "stop_reason": str(prompt.result().stop_reason)})

    async def shutdown(self) -> None:
        await stop_tasks(self._prompt)
        if self.client is not None:
            self.client.stopping.set()
            await self.client.close_terminals()
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await self.conn.close()
        await super().shutdown()
        await self.close_agent(terminate_first=self._stays_after_eof)

    # -- helpers -----------------------------------------------------------------------------------

    async def forward(self, kind: DriverKind, payload: Mapping[str, Any]) -> None:
        if self.client is not None:
            await self.client.forward(kind, payload)  # in order with the agent's own updates
        else:
            await super().forward(kind, payload)

    async def notice(self, level: str, text: str, **extra: Any) -> None:
        await super().notice(level, text, agent=self.agent_name, **extra)
