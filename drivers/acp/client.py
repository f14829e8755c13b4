"""The client side of ACP for one run: permissions, files and terminals through the gate,
session updates into the timeline.

How a tool call reaches the gate exactly once
---------------------------------------------
An agent asks `session/request_permission` for a tool call, then (if allowed) may do its
work through this client: `fs/write_text_file`, `fs/read_text_file`, `terminal/create`.
Those are decided by the gate as well, so an agent that skips the permission request (its
own settings allowed the tool, or it never asks for reads) still cannot touch the
workspace unasked. A file or terminal operation that belongs to a tool call the gate
already allowed (the same path, the same command, while that call is still running) is not
asked again: the approval covers it. Everything else is a step of its own.

Answers to the agent are always one of the options it offered: `allow_once` for an allow,
`reject_once` for a refusal, never `allow_always` (an "always allow" is a Gatehouse
grant, which answers later covered requests) and never an invented id; with no fitting
option the request is refused (`cancelled`). A refusal's reason cannot travel in the
permission answer, so it is collected (`refusals`) and the driver tells the agent in the
next prompt; a refused file or terminal operation carries its reason in the error reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import RequestError
from acp.schema import (
    AcceptElicitationResponse,
    AllowedOutcome,
    CancelElicitationResponse,
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from drivers import elicitation, sandbox
from drivers.agent_env import is_forbidden
from drivers.base import ActivityEmitter, DriverError, GateAnswer, RunAborted, RunContext, ToolRequest, emit_checked
from runs.events import DriverKind, Message, Notice

from . import files, mapping
from .terminals import Terminal

log = logging.getLogger(__name__)

TERMINAL_OUTPUT_BYTES = 1024 * 1024
MESSAGE_CHARS = 64 * 1024
REFUSED = -32000  # the JSON-RPC error code of a request Gatehouse refused


@dataclass
class _Allowed:
    """A tool call the gate allowed, and what it covers while it runs."""

    request: ToolRequest
    step_id: int | None
    paths: set[Path] = field(default_factory=set)
    command: str = ""
    finished: bool = False


class AcpClient(ActivityEmitter):
    """Implements `acp.interfaces.Client` for one run (`RunContext` is the gate)."""

    def __init__(self, ctx: RunContext, *, env: Mapping[str, str], on_abort: Callable[[str, str], None]) -> None:
        self.ctx = ctx
        self.workspace = Path(ctx.workspace).resolve()
        self.env = dict(env)
        self.settings: Mapping[str, Any] = ctx.settings or {}
        self.output_limit = int(self.settings.get("output_limit") or 64 * 1024)
        self.command_timeout = float(self.settings.get("command_timeout_s") or 600.0)
        self.on_abort = on_abort
        self.session_id = ""
        self.replaying = False  # session/load replays history: not the timeline's news
        self.stopping = asyncio.Event()
        self.gates_waiting = 0
        self.calls: dict[str, dict[str, Any]] = {}
        self.allowed: dict[str, _Allowed] = {}
        self.refusals: list[str] = []
        self.terminals: dict[str, Terminal] = {}
        self._watchers: set[asyncio.Task[None]] = set()  # one per terminal: finishes its step
        self.texts: list[str] = []
        self.usage: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._chunk_kind = ""
        self._chunks: list[str] = []
        self._last_shown: dict[str, tuple[str, ...]] = {}

    # -- the gate ------------------------------------------------------------------------------

    async def _gate(self, request: ToolRequest) -> GateAnswer | None:
        """The gate's decision, or None when the run stops first (cancel, abort elsewhere)."""
        self.gates_waiting += 1
        gate = asyncio.ensure_future(self.ctx.gate(request))
        stop = asyncio.ensure_future(self.stopping.wait())
        try:
            done, _ = await asyncio.wait({gate, stop}, return_when=asyncio.FIRST_COMPLETED)
            if gate in done:
                try:
                    return gate.result()
                except RunAborted as exc:
                    return GateAnswer(outcome="abort", reason=exc.reason or "aborted")
                except DriverError as exc:
                    self.on_abort(exc.reason, str(exc))
                    return None
            gate.cancel()
            with contextlib.suppress(BaseException):
                await gate
            return None
        finally:
            stop.cancel()
            self.gates_waiting -= 1

    def _note_abort(self, decision: GateAnswer, what: str) -> None:
        if decision.outcome == "abort":
            reason = decision.reason or "aborted"
            self.on_abort(reason, f"The run was aborted at {what}: {reason}")

    async def notice(self, level: str, text: str, **extra: Any) -> None:
        # (a notice's extra keys are each caller's own: not checked)
        await self.emit("notice", cast(Notice, {"level": level, "text": text, "driver": "acp", **extra}))

    async def forward(self, kind: DriverKind, payload: Mapping[str, Any]) -> None:
        await self.flush_chunks()
        try:
            await emit_checked(self.ctx, kind, payload)
        except asyncio.CancelledError:
            raise
        except Exception:  # the timeline must never kill the run
            log.exception("acp: emitting %s activity failed", kind)

    # -- session/request_permission --------------------------------------------------------------

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        call = self._merge(tool_call.model_dump(mode="json", by_alias=True, exclude_none=True))
        offered = [o.model_dump(mode="json", by_alias=True) for o in options]
        if self.stopping.is_set():
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        # claude-code-acp asks ExitPlanMode with the modes to continue in as options.
        plan = {str(o.get("optionId")) for o in offered} >= {"default", "plan"}
        request = mapping.build_request(call, self.workspace, plan_options=plan)
        outside = mapping.outside_paths(call, self.workspace)
        if outside:
            # Files are the workspace's only (an agent may touch them itself, after the
            # permission, not through fs/*): refused without asking anyone.
            text = f"Gatehouse refused: {outside[0]} is outside the run's workspace; files are served inside the workspace only."
            return await self._refuse_unasked(text, request, offered)
        blind = mapping.unreadable(request)
        if blind:
            text = f"Gatehouse refused: {blind}, so neither the policy nor a person could judge it."
            return await self._refuse_unasked(text, request, offered, title=mapping.clip(str(call.get("title") or ""), 500))
        decision = await self._gate(request)
        if decision is None or self.ctx.cancelled():
            # After session/cancel every pending permission is answered `cancelled`.
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = mapping.select_option(offered, decision)
        if decision.allowed and option is not None:
            self.allowed[request.native_id] = self._covering(request, call, decision)
            return _selected(option)
        if decision.allowed:
            # Allowed, but the agent offered no allow-once: refuse rather than pick another.
            text = "The agent offered no allow-once option for this request; Gatehouse refused it (it never selects allow-always)."
            await self.notice("warning", text, tool_call_id=request.native_id, options=offered)
            if decision.step_id is not None:
                await self.ctx.step_finished(decision.step_id, error=text)
            decision = decision.replace(outcome="deny", reason=text)
        self._note_abort(decision, request.tool)
        if decision.outcome != "abort":
            self.refusals.append(mapping.refusal_text(request, decision))
        reject = mapping.select_option(offered, decision)
        if reject is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return _selected(reject)

    async def _refuse_unasked(self, text: str, request: ToolRequest, offered: list[dict[str, Any]], **extra: Any) -> RequestPermissionResponse:
        """Refuse a permission request before anyone is asked: a notice, the reason kept for
        the agent's next prompt, and the agent's own reject option (else `cancelled`)."""
        await self.notice("warning", text, tool_call_id=request.native_id, **extra)
        self.refusals.append(text)
        reject = mapping.select_option(offered, GateAnswer(outcome="deny"))
        return _selected(reject) if reject else RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

    def _covering(self, request: ToolRequest, call: Mapping[str, Any], decision: GateAnswer) -> _Allowed:
        allowed = _Allowed(request=request, step_id=decision.step_id)
        if request.tool == "bash":
            allowed.command = str(request.input.get("command") or "")
        elif request.subtype in ("file-change", "file-read"):
            for raw in (request.input.get("file_path"), request.input.get("move_path")):
                with contextlib.suppress(files.OutsideWorkspace):
                    if raw:
                        allowed.paths.add(files.resolve_inside(self.workspace, str(raw)))
            for location in call.get("locations") or []:
                with contextlib.suppress(files.OutsideWorkspace):
                    if isinstance(location, Mapping) and location.get("path"):
                        allowed.paths.add(files.resolve_inside(self.workspace, str(location["path"])))
        return allowed

    def _covered_path(self, path: Path) -> _Allowed | None:
        for allowed in self.allowed.values():
            if not allowed.finished and path in allowed.paths:
                return allowed
        return None

    # -- fs/* ------------------------------------------------------------------------------------

    def _inside(self, path: str) -> Path:
        try:
            return files.resolve_inside(self.workspace, path)
        except files.OutsideWorkspace as exc:
            raise RequestError(REFUSED, f"Gatehouse refused: {exc}. Files are served inside the workspace only.") from None

    async def _decide_file(self, tool: str, path: Path, presentation: dict[str, Any], extra: Mapping[str, Any]) -> int | None:
        """Gate one file operation no allowed tool call covers; the step id, or refuse."""
        shown = mapping.relative_path(str(path), self.workspace)
        request = ToolRequest(
            tool, {"file_path": shown, **extra}, str(self.workspace), "permission",
            "file-read" if tool == "read" else "file-change", {"path": shown, **presentation}, f"fs-{next(self._ids)}",
        )  # fmt: skip
        decision = await self._gate(request)
        if decision is None:
            raise RequestError(REFUSED, "The run is stopping in Gatehouse.")
        if not decision.allowed:
            self._note_abort(decision, tool)
            raise RequestError(REFUSED, mapping.refusal_text(request, decision))
        return decision.step_id

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        resolved = self._inside(path)
        step_id = None
        if self._covered_path(resolved) is None:
            shown = mapping.relative_path(str(resolved), self.workspace)
            step_id = await self._decide_file("read", resolved, {"title": f"Read {shown}"}, {})
        try:
            content = files.read_text(resolved, line, limit)
        except (OSError, ValueError) as exc:
            if step_id is not None:
                await self.ctx.step_finished(step_id, error=str(exc))
            raise RequestError(-32002, f"cannot read {path}: {exc}") from None
        if step_id is not None:
            await self.ctx.step_finished(step_id, output=mapping.clip(content, self.output_limit))
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse | None:
        resolved = self._inside(path)
        covering = self._covered_path(resolved)
        step_id = None
        if covering is None:
            shown = mapping.relative_path(str(resolved), self.workspace)
            try:
                old = files.read_text(resolved) if resolved.is_file() else ""
            except (OSError, ValueError):
                old = ""
            diff = mapping.unified_diff(shown, old, content)
            verb = "Edit" if resolved.exists() else "Write"
            step_id = await self._decide_file("edit" if resolved.exists() else "write", resolved, {"title": f"{verb} {shown}", "diff": diff}, {"diff": diff})
        # Gatehouse writes it, outside the floor: it refuses what the floor would refuse the agent.
        refusal = sandbox.write_refusal(self.ctx.floor.mode, str(self.workspace), str(resolved)) if self.ctx.floor else None
        if refusal:
            if step_id is not None:
                await self.ctx.step_finished(step_id, error=refusal)
            raise RequestError(REFUSED, f"cannot write {path}: {refusal}")
        try:
            files.write_text(resolved, content)
        except OSError as exc:
            if step_id is not None:
                await self.ctx.step_finished(step_id, error=str(exc))
            raise RequestError(-32603, f"cannot write {path}: {exc}") from None
        if step_id is not None:
            await self.ctx.step_finished(step_id, output=f"wrote {len(content)} characters")
        await self.emit("tool", {"phase": "fs/write_text_file", "path": mapping.relative_path(str(resolved), self.workspace),
                                 "covered_by": covering.request.native_id if covering else None, "step": step_id})  # fmt: skip
        return WriteTextFileResponse()

    # -- terminal/* --------------------------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        workdir = self._inside(cwd) if cwd else self.workspace
        if not workdir.is_dir():
            raise RequestError(REFUSED, f"{cwd} is not a directory in the workspace")
        script = shlex.join([command, *args]) if args else command
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        # an approved command covers a terminal only where it was judged to run: run elsewhere
        # (`cwd: .git`), its paths mean other files, so it is gated again there
        covering = next((a for a in self.allowed.values() if not a.finished and a.command and a.command == script
                         and os.path.normpath(a.request.cwd) == os.path.normpath(str(workdir))), None)
        if covering is not None:
            covering.command = ""  # one approved command covers one terminal
            step_id = covering.step_id
        else:
            request = ToolRequest(
                "bash", {"command": script}, str(workdir), "permission", "command",
                {"title": "Run a shell command", "command": mapping.clip(script)}, f"terminal-{next(self._ids)}",
            )  # fmt: skip
            decision = await self._gate(request)
            if decision is None:
                raise RequestError(REFUSED, "The run is stopping in Gatehouse.")
            if not decision.allowed:
                self._note_abort(decision, "bash")
                raise RequestError(REFUSED, mapping.refusal_text(request, decision))
            step_id = decision.step_id
        command_env = dict(self.env)
        for variable in env or []:
            if not is_forbidden(variable.name):
                command_env[variable.name] = variable.value
        limit = min(int(output_byte_limit or TERMINAL_OUTPUT_BYTES), TERMINAL_OUTPUT_BYTES)
        terminal = Terminal(f"term_{next(self._ids)}", limit=limit)
        terminal.step_id = step_id
        try:
            await terminal.start(argv, cwd=workdir, env=command_env, floor=self.ctx.floor)
        except OSError as exc:
            if step_id is not None:
                await self.ctx.step_finished(step_id, error=str(exc))
            raise RequestError(-32603, f"cannot start the command: {exc}") from None
        self.terminals[terminal.id] = terminal
        watcher = asyncio.create_task(self._finish_terminal_step(terminal))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return CreateTerminalResponse(terminal_id=terminal.id)

    async def _finish_terminal_step(self, terminal: Terminal) -> None:
        code, sig = await terminal.wait(self.command_timeout)
        for allowed in self.allowed.values():
            if allowed.step_id == terminal.step_id:
                allowed.finished = True
        if terminal.step_id is not None:
            output = mapping.clip(terminal.output, self.output_limit)
            await self.ctx.step_finished(terminal.step_id, output=output, exit_code=code, error=f"killed by {sig}" if sig else "")

    def _terminal(self, terminal_id: str) -> Terminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            raise RequestError(-32002, f"unknown terminal {terminal_id!r}")
        return terminal

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        status = terminal.exit_status()
        exit_status = TerminalExitStatus(exit_code=status[0], signal=status[1]) if status else None
        return TerminalOutputResponse(output=terminal.output, truncated=terminal.truncated, exit_status=exit_status)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        code, sig = await self._terminal(terminal_id).wait(self.command_timeout)
        return WaitForTerminalExitResponse(exit_code=code, signal=sig)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse | None:
        self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse | None:
        terminal = self.terminals.pop(terminal_id, None)
        if terminal is not None:
            await terminal.release()
        return ReleaseTerminalResponse()

    async def close_terminals(self) -> None:
        for terminal in list(self.terminals.values()):
            await terminal.release()
        self.terminals.clear()
        for watcher in list(self._watchers):
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(watcher, 5)

    # -- the rest of the Client interface --------------------------------------------------------

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> CreateElicitationResponse:
        """`elicitation/create` (unstable in ACP): a form the agent (or an MCP server behind
        it) asks a person to fill in, shown as questions (drivers/elicitation.py). A URL
        elicitation, or a form the questions cannot express, is declined with the reason."""
        schema = getattr(mode, "requested_schema", None)
        if self.stopping.is_set():
            return CancelElicitationResponse(action="cancel")
        try:
            if schema is None:
                raise elicitation.Unsupported("a URL elicitation (only forms are shown)")
            requested = schema.model_dump(mode="json", by_alias=True, exclude_none=True)
            request = elicitation.tool_request("", {"mode": "form", "message": message, "requestedSchema": requested},
                                               str(self.workspace))
        except elicitation.Unsupported as exc:
            await self.notice("warning", f"The agent asked for {exc}; Gatehouse cannot show it, so it was declined.")
            return DeclineElicitationResponse(action="decline")
        decision = await self._gate(request)
        if decision is None or self.ctx.cancelled():
            return CancelElicitationResponse(action="cancel")
        reply = elicitation.reply_of(requested, decision.outcome, decision.answers)
        if reply["action"] == "accept":
            return AcceptElicitationResponse(action="accept", content=reply["content"])
        if decision.outcome == "abort":
            self._note_abort(decision, request.tool)
            return CancelElicitationResponse(action="cancel")
        return DeclineElicitationResponse(action="decline")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None

    # -- session/update -----------------------------------------------------------------------------

    def _merge(self, update: Mapping[str, Any]) -> dict[str, Any]:
        call_id = str(update.get("toolCallId") or "")
        merged = {**self.calls.get(call_id, {}), **{k: v for k, v in update.items() if v not in (None, [], {})}}
        if call_id:
            self.calls[call_id] = merged
        return merged

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        data = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        kind = str(data.get("sessionUpdate") or "")
        if self.replaying:
            return
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            await self._chunk(kind, data.get("content") or {})
        elif kind in ("tool_call", "tool_call_update"):
            await self._tool_update(kind, data)
        elif kind == "plan":
            entries = [e for e in data.get("entries") or [] if isinstance(e, Mapping)]
            lines = [f"[{'x' if e.get('status') == 'completed' else ' '}] {e.get('content', '')}" for e in entries]
            await self.emit("message", {"text": mapping.clip("\n".join(lines), MESSAGE_CHARS), "plan": True})
        elif kind == "current_mode_update":
            await self.notice("info", f"The agent's mode is now {data.get('currentModeId')!s}.", mode=data.get("currentModeId"))
        elif kind == "usage_update":
            self.usage = {k: v for k, v in data.items() if k != "sessionUpdate" and isinstance(v, (int, float, dict))}
            await self.emit("usage", mapping.bounded_value(self.usage))
        # user_message_chunk, available_commands_update, config_option_update and
        # session_info_update say nothing a reviewer needs.

    async def _chunk(self, kind: str, content: Mapping[str, Any]) -> None:
        """Coalesce streamed chunks into one message per run of the same kind."""
        if kind != self._chunk_kind:
            await self.flush_chunks()
            self._chunk_kind = kind
        if content.get("type") == "text":
            self._chunks.append(str(content.get("text") or ""))

    async def flush_chunks(self) -> None:
        text, kind = "".join(self._chunks), self._chunk_kind
        self._chunks, self._chunk_kind = [], ""
        if not text.strip():
            return
        text = mapping.clip(text, MESSAGE_CHARS)
        payload: Message = {"text": text}
        if kind == "agent_message_chunk":
            self.texts.append(text)
        else:
            payload["thought"] = True
        try:
            await self.ctx.emit("message", payload)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("acp: emitting a message failed")

    async def _tool_update(self, kind: str, data: Mapping[str, Any]) -> None:
        call = self._merge(data)
        call_id = str(call.get("toolCallId") or "")
        status = str(call.get("status") or "")
        payload: dict[str, Any] = {"phase": "call" if kind == "tool_call" else "update", "tool_call_id": call_id, "status": status,
                                   "title": mapping.clip(str(call.get("title") or ""), 500), "kind": call.get("kind")}  # fmt: skip
        if status in ("completed", "failed"):
            output = _output_text(call)
            payload["output"] = mapping.clip(output, 4000)
            allowed = self.allowed.get(call_id)
            if allowed is not None and not allowed.finished:
                allowed.finished = True
                if allowed.step_id is not None and not any(t.step_id == allowed.step_id for t in self.terminals.values()):
                    error = output if status == "failed" else ""
                    await self.ctx.step_finished(allowed.step_id, output=mapping.clip(output, self.output_limit), error=mapping.clip(error, self.output_limit))
        elif kind == "tool_call":
            payload["input"] = mapping.bounded_value(call.get("rawInput") or {})
        elif not data.get("status"):
            return  # content-only progress: the next status change says it
        shown = (payload["phase"], status, payload["title"], str(payload.get("input")))
        if self._last_shown.get(call_id) == shown:
            return  # a repeat with nothing new (opencode streams output this way)
        self._last_shown[call_id] = shown
        await self.emit("tool", payload)


def _selected(option_id: str) -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))


def _output_text(call: Mapping[str, Any]) -> str:
    raw = call.get("rawOutput")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return "\n".join(str(b.get("text") or "") for b in raw if isinstance(b, Mapping))
    if isinstance(raw, Mapping):
        for key in ("output", "stdout", "text", "error"):
            if isinstance(raw.get(key), str):
                return str(raw[key])
    parts = []
    for item in call.get("content") or []:
        inner = item.get("content") if isinstance(item, Mapping) else None
        if isinstance(inner, Mapping) and inner.get("type") == "text":
            parts.append(str(inner.get("text") or ""))
    return "\n".join(parts)
