"""One run of `opencode serve`: a session, one prompt sent asynchronously, the SSE stream
followed until the session is idle, permissions and questions answered through the gate."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers import sandbox
from drivers.acp.mapping import bounded_value, clip, refusal_text
from drivers.base import DriverError, GateAnswer, RunAborted, RunContext, RunResult, RunStatus, ToolRequest
from drivers.session import CONTINUE_PROMPT, AgentSession, RunFailed, stop_tasks

from . import config, mapping
from .http import HttpError, OpenCodeHttp, StreamError
from .server import OpenCodeServer, ServerStartError

log = logging.getLogger(__name__)

STOP_GRACE_S = 10.0
MESSAGE_CHARS = 64 * 1024
MAX_FOLLOW_UPS = 10


class OpenCodeRun(AgentSession):
    driver = "opencode"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.workspace = Path(ctx.workspace).resolve()
        self.server = OpenCodeServer()
        self.http: OpenCodeHttp | None = None
        self.session_id = ""
        self.sessions: set[str] = set()  # ours and our subagents'
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.reader: asyncio.Task[None] | None = None
        self.pending: dict[str, asyncio.Task[None]] = {}  # permission/question id -> deciding task
        self.stopping = False  # after abort/cancel: nothing pending is ever approved
        self.abort: tuple[str, str] | None = None
        self.session_error = ""
        self.tools: dict[str, str] = {}  # callID -> OpenCode tool name
        self.inputs: dict[str, Mapping[str, Any]] = {}  # callID -> the call's input (its bash `workdir`)
        self.steps: dict[str, int] = {}  # callID -> step id of an allowed permission
        self.texts: dict[str, str] = {}  # text part id -> its text so far (emitted at the end)
        self.user_messages: set[str] = set()  # message ids of the prompts (not the agent's words)
        self.emitted_texts: list[str] = []
        self.usage: dict[str, Any] = {}
        self.gates_waiting = 0
        self.follow_ups: list[str] = []
        self._running_seen: set[str] = set()
        self._last_event = 0.0

    # -- entry (the run itself, its failures and its ending: drivers/session.py) ---------------

    async def drive(self) -> RunResult:
        await self._start()
        status = await self._follow()
        for _ in range(MAX_FOLLOW_UPS):
            if status != "idle" or not self.follow_ups:
                break
            # What OpenCode could not tell the model itself (a declined question
            # ends its loop): said in the conversation, and the session goes on.
            text, self.follow_ups = "\n".join(self.follow_ups), []
            await self._prompt(text)
            status = await self._follow()
        if status == "cancelled":
            await self._stop("Run cancelled: the OpenCode session was aborted.")
            await self._turn_end("cancelled")
            return self.result("cancelled")
        if self.abort is not None:
            reason, detail = self.abort
            await self._stop(detail, level="error", reason=reason)
            await self._turn_end("aborted")
            return self.result("failed", reason)
        await self._turn_end("idle")
        if self.session_error:
            await self.notice("error", f"OpenCode reported an error: {self.session_error}", reason="agent_error")
            return self.result("failed", "agent_error")
        return self.result("completed")

    def result(self, status: RunStatus, reason: str = "") -> RunResult:
        return RunResult(status=status, failure_reason=reason, text="\n".join(self.emitted_texts), usage=dict(self.usage))

    # -- start -------------------------------------------------------------------------------

    def _floor(self) -> sandbox.Floor | None:
        """The run's floor, reaching the configured model endpoint (else OpenAI's)."""
        return self.floor_reaching([self.settings.get("opencode_base_url") or config.DEFAULT_MODEL_URL])

    async def _start(self) -> None:
        binary = config.find_binary(self.settings)
        if not binary or not Path(binary).exists():
            raise RunFailed("agent_not_found", "opencode not found: set GATEHOUSE_OPENCODE_BIN, put `opencode` on PATH, or run `make agents`.")
        found = config.blocking_config_files(self.workspace)
        if found:
            # Checked at run creation too; a file that appeared since is refused here.
            raise RunFailed("workspace_agent_config", config.refusal(found))
        scan = await self.scan_workspace()
        await self.start_notices(scan, ("git",))
        env = config.environment(self.settings, Path(self.ctx.runtime_dir), scan.git_env())
        try:
            await self.server.start(binary, cwd=self.workspace, env=env, floor=self._floor())
        except ServerStartError as exc:
            raise RunFailed("agent_exited", str(exc)) from exc
        self.http = OpenCodeHttp(self.server.host, self.server.port, username=self.server.username, password=self.server.password,
                                 unix_socket=self.server.unix_socket)
        self.reader = asyncio.create_task(self._read_events())
        kind, value = await self._next(timeout=30)
        if kind != "event" or value.get("type") != "server.connected":
            await self._dispatch_entry(kind, value)
        resumed = await self._resume_session()
        if not resumed:
            status, body = await self._request("POST", "/session", {"title": f"Gatehouse run {self.ctx.run_id}"})
            if status != 200 or not isinstance(body, Mapping) or not body.get("id"):
                raise RunFailed("agent_error", f"OpenCode did not create a session ({status}): {clip(str(body), 500)}")
            self.session_id = str(body["id"])
            await self.ctx.save_agent_state({"session_id": self.session_id})
        self.sessions.add(self.session_id)
        await self.emit("turn", {"phase": "start", "session_id": self.session_id, "resumed": resumed or False, "port": self.server.port})
        await self._prompt(CONTINUE_PROMPT if resumed == "restart" else (self.ctx.prompt or ""))

    async def _prompt(self, text: str) -> None:
        status, body = await self._request("POST", f"/session/{self.session_id}/prompt_async", {"parts": [{"type": "text", "text": text}]})
        if status not in (200, 204):
            raise RunFailed("agent_error", f"OpenCode refused the prompt ({status}): {clip(str(body), 500)}")

    async def _resume_session(self) -> str:
        """Continue an OpenCode session (kept in the session's data directory): after a
        restart this run's own ("restart"), or for a new run of the session the one an
        earlier run had ("follow-up", with this run's prompt); "" to create one (after a
        restart the gate then answers the steps that already ran from the record)."""
        session_id = str(self.ctx.resume_state.get("session_id") or "")
        if not session_id:
            return ""
        status, body = await self._request("GET", f"/session/{session_id}")
        if status != 200 or not isinstance(body, Mapping):
            await self.notice("warning", f"OpenCode session {session_id} is gone; starting a new one.")
            return ""
        self.session_id = session_id
        restarted = await self.conversation_continued(
            f"Resumed OpenCode session {session_id}.",
            f"Continued the session's conversation with OpenCode ({session_id}).",
            save={"session_id": session_id},
        )
        return "restart" if restarted else "follow-up"

    # -- the event stream -------------------------------------------------------------------------

    async def _read_events(self) -> None:
        assert self.http is not None
        try:
            async for event in self.http.events():
                await self.events.put(("event", event))
            await self.events.put(("eof", None))
        except StreamError as exc:
            await self.events.put(("protocol", str(exc)))
        except (HttpError, OSError, ValueError) as exc:
            await self.events.put(("eof", str(exc)))

    async def _next(self, *, timeout: float | None = None, cancellable: bool = False) -> tuple[str, Any]:
        """The next event; else "cancel" (`cancellable`), "exited" (the server ended) or "timeout"."""
        kind, value = await self.next_entry(self.events, timeout=timeout, cancellable=cancellable, exited=self.server.wait())
        return (kind, self.server.returncode) if kind == "exited" else (kind, value)

    async def _follow(self) -> str:
        """Dispatch events until our session is idle; "idle", "cancelled" or "aborted"."""
        while True:
            if self.abort is not None:
                return "aborted"
            kind, value = await self._next(timeout=1.0, cancellable=True)
            if kind == "cancel":
                return "cancelled"
            if kind == "timeout":
                self._check_idle()
                continue
            if await self._dispatch_entry(kind, value):
                return "idle"

    def _check_idle(self) -> None:
        loop = asyncio.get_running_loop()
        if self.gates_waiting or not self._last_event:
            self._last_event = loop.time()
        elif loop.time() - self._last_event > self.idle_timeout:
            raise RunFailed("agent_timeout", f"OpenCode sent nothing for {self.idle_timeout:g} s while no decision was pending.")

    async def _dispatch_entry(self, kind: str, value: Any) -> bool:
        """Handle one entry of the queue; True when our session went idle."""
        if kind == "protocol":
            raise RunFailed("agent_protocol_error", f"OpenCode protocol error: {value}")
        if kind in ("eof", "exited"):
            code = self.server.returncode
            detail = f" (exit code {code})" if code is not None else (f" ({value})" if value else "")
            raise RunFailed("agent_exited", f"OpenCode exited{detail} before the session was idle. {clip(self.server.output_tail[-2000:], 2000)}".strip())
        if kind == "timeout":
            raise RunFailed("agent_timeout", "OpenCode did not open its event stream in time.")
        self._last_event = asyncio.get_running_loop().time()
        return await self._on_event(value)

    async def _on_event(self, event: Mapping[str, Any]) -> bool:
        etype = str(event.get("type"))
        props_value = event.get("properties")
        props: Mapping[str, Any] = props_value if isinstance(props_value, Mapping) else {}
        session = str(props.get("sessionID") or "")
        if etype == "session.created":
            info = props.get("info") or {}
            if isinstance(info, Mapping) and info.get("parentID") in self.sessions:
                self.sessions.add(str(info.get("id")))
            return False
        if session and session not in self.sessions:
            return False  # another session of this server (none is expected)
        if etype == "permission.asked":
            self._decide_later(str(props.get("id") or ""), self._permission(props))
        elif etype == "question.asked":
            self._decide_later(str(props.get("id") or ""), self._question(props))
        elif etype in ("permission.replied", "question.replied", "question.rejected"):
            self.pending.pop(str(props.get("requestID") or ""), None)
        elif etype == "message.part.updated":
            await self._on_part(props.get("part") or {})
        elif etype == "message.updated":
            self._on_message(props.get("info") or {})
        elif etype == "session.error":
            error = props.get("error") or {}
            name = str(error.get("name") or "") if isinstance(error, Mapping) else str(error)
            if name != "MessageAbortedError":
                data = error.get("data") if isinstance(error, Mapping) else None
                message = data.get("message") if isinstance(data, Mapping) else ""
                self.session_error = clip(f"{name}: {message}" if message else name, 2000)
        elif etype == "session.idle" and session == self.session_id:
            return True
        return False

    # -- timeline ----------------------------------------------------------------------------------

    async def _on_part(self, part: Mapping[str, Any]) -> None:
        ptype = part.get("type")
        if ptype == "text":
            message_id = part.get("messageID")
            if message_id and message_id not in self.user_messages and not part.get("synthetic") and not part.get("ignored"):
                self.texts[str(part.get("id"))] = str(part.get("text") or "")
            return
        if ptype != "tool":
            return
        await self._flush_texts()
        call_id = str(part.get("callID") or "")
        tool = str(part.get("tool") or "")
        self.tools[call_id] = tool
        state = part.get("state") or {}
        if isinstance(state, Mapping) and isinstance(state.get("input"), Mapping) and state["input"]:
            self.inputs[call_id] = state["input"]
        status = str(state.get("status") or "") if isinstance(state, Mapping) else ""
        if status not in ("running", "completed", "error"):
            return
        payload: dict[str, Any] = {"phase": status, "tool_call_id": call_id, "tool": tool}
        if status == "running":
            if call_id in self._running_seen:
                return
            self._running_seen.add(call_id)
            payload["input"] = bounded_value(state.get("input") or {})
        else:
            output = str(state.get("output") or state.get("error") or "")
            payload["output"] = clip(output, 4000)
            step_id = self.steps.pop(call_id, None)
            if step_id is not None:
                metadata = state.get("metadata") or {}
                exit_code = metadata.get("exit") if isinstance(metadata, Mapping) and isinstance(metadata.get("exit"), int) else None
                error = clip(output, self.output_limit) if status == "error" else ""
                await self.ctx.step_finished(step_id, output=clip(output, self.output_limit), exit_code=exit_code, error=error)
        await self.emit("tool", payload)

    def _on_message(self, info: Mapping[str, Any]) -> None:
        if info.get("role") == "user" and info.get("id"):
            self.user_messages.add(str(info["id"]))
        tokens = info.get("tokens")
        if info.get("role") == "assistant" and isinstance(tokens, Mapping):
            self.usage = {"cost": info.get("cost"), **{k: v for k, v in tokens.items() if isinstance(v, (int, float, Mapping))}}

    async def _flush_texts(self) -> None:
        for part_id, text in list(self.texts.items()):
            del self.texts[part_id]
            if text.strip():
                text = clip(text, MESSAGE_CHARS)
                self.emitted_texts.append(text)
                await self.emit("message", {"text": text})

    async def _turn_end(self, status: str) -> None:
        await self._flush_texts()
        if self.usage:
            await self.emit("usage", bounded_value(self.usage))
        await self.emit("turn", {"phase": "end", "status": status})

    # -- permissions and questions -------------------------------------------------------------------

    def _decide_later(self, request_id: str, work: Any) -> None:
        task = asyncio.create_task(work)
        self.pending[request_id] = task
        task.add_done_callback(lambda t: self._decided(request_id, t))

    def _decided(self, request_id: str, task: asyncio.Task[None]) -> None:
        if self.pending.get(request_id) is task:
            self.pending.pop(request_id, None)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("opencode: deciding %s failed: %r", request_id, exc)
            if self.abort is None:
                self.abort = ("driver_crashed", f"Deciding an OpenCode request failed: {exc!r}")

    async def _gate(self, request: ToolRequest) -> GateAnswer:
        self.gates_waiting += 1
        try:
            return await self.ctx.gate(request)
        except RunAborted as exc:
            return GateAnswer(outcome="abort", reason=exc.reason or "aborted")
        except DriverError as exc:
            self.abort = (exc.reason, str(exc))
            return GateAnswer(outcome="abort", reason=exc.reason)
        finally:
            self.gates_waiting -= 1

    async def _permission(self, props: Mapping[str, Any]) -> None:
        tool = props.get("tool") or {}
        call_id = str(tool.get("callID") or "") if isinstance(tool, Mapping) else ""
        request = mapping.permission_request(props, self.workspace, self.tools.get(call_id, ""), self.inputs.get(call_id))
        path = f"/permission/{request.native_id}/reply"
        outside = mapping.outside_workspace(request, self.workspace)
        if outside:
            # Files are the workspace's only, as for the ACP client: refused without asking
            # anyone (an approval could not make it right).
            text = f"Gatehouse refused: {outside} is outside the run's workspace; files are served inside the workspace only."
            await self.notice("warning", text, permission=props.get("permission"))
            await self._request("POST", path, {"reply": "reject", "message": text})
            return
        decision = await self._gate(request)
        if self.stopping:
            return  # aborted meanwhile: the request is dead, never approved
        if decision.allowed:
            if call_id and decision.step_id is not None:
                self.steps[call_id] = decision.step_id
            # `once`, never `always`: OpenCode would remember `always` for every session of
            # this server; "always allow" is a Gatehouse grant, which answers the next one.
            await self._request("POST", path, {"reply": "once"})
            return
        if decision.outcome == "abort":
            self.abort = (decision.reason or "aborted", f"The run was aborted at {request.tool}: {decision.reason or 'aborted'}")
        # With a message OpenCode hands the reviewer's reason to the model and goes on.
        await self._request("POST", path, {"reply": "reject", "message": refusal_text(request, decision)})

    async def _question(self, props: Mapping[str, Any]) -> None:
        request = mapping.question_request(props, self.workspace)
        decision = await self._gate(request)
        if self.stopping:
            return
        answers = mapping.answers_body(request, decision)
        if decision.outcome == "abort":
            self.abort = (decision.reason or "aborted", f"The run was aborted at a question: {decision.reason or 'aborted'}")
        if answers is None or decision.outcome == "abort":
            await self._request("POST", f"/question/{request.native_id}/reject")
            if decision.outcome != "abort":
                reason = f" ({decision.reason})" if decision.reason else ""
                self.follow_ups.append(
                    f"There is no human answer to your question: it was declined in Gatehouse{reason}. Continue without an answer, or stop."
                )
        else:
            await self._request("POST", f"/question/{request.native_id}/reply", {"answers": answers})

    # -- stopping ------------------------------------------------------------------------------------

    async def _stop(self, text: str, *, level: str = "info", **extra: Any) -> None:
        """Abort the session (cancel, or the gate's abort), drop what is pending, wait
        briefly for idle. A permission still pending is dead: never approved after this."""
        self.stopping = True
        for task in list(self.pending.values()):
            task.cancel()
        if self.session_id and self.server.returncode is None:
            with contextlib.suppress(HttpError, RunFailed):
                await self._request("POST", f"/session/{self.session_id}/abort")
            deadline = asyncio.get_running_loop().time() + STOP_GRACE_S
            with contextlib.suppress(RunFailed):
                while (remaining := deadline - asyncio.get_running_loop().time()) > 0:
                    kind, value = await self._next(timeout=remaining)
                    if kind == "timeout" or await self._dispatch_entry(kind, value):
                        break
        await self.notice(level, text, **extra)

    async def shutdown(self) -> None:
        self.stopping = True
        await stop_tasks(*self.pending.values())
        await stop_tasks(self.reader)
        await super().shutdown()
        await self.server.stop()

    # -- helpers ---------------------------------------------------------------------------------

    async def _request(self, method: str, path: str, body: Any | None = None) -> tuple[int, Any]:
        assert self.http is not None
        try:
            return await self.http.request(method, path, body)
        except HttpError as exc:
            if self.server.returncode is not None:
                raise RunFailed("agent_exited", f"OpenCode exited (code {self.server.returncode}): {exc}") from exc
            raise RunFailed("agent_error", str(exc)) from exc
