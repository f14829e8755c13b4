"""The Codex app-server session: JSON-RPC over stdio, one thread and one turn per run."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from drivers import elicitation
from drivers.base import Descriptor, DriverError, GateAnswer, RunAborted, RunContext, RunResult, RunStatus, ToolRequest
from drivers.sandbox import Floor, urls_in_env
from drivers.session import Cancelled, RunFailed, StdioSession, stop_tasks
from drivers.subprocess_io import ProcessExitedError, ProtocolError
from runs.events import Notice, Turn

from . import config, translate

log = logging.getLogger(__name__)

APPROVAL_POLICY = "untrusted"
# Workspace configuration Codex would read (drivers/workspace_config.py); the run's timeline
# names what of it was ignored (`.codex/`, pinned untrusted) or switched off (git programs).
WORKSPACE_AGENTS = ("codex", "git")
# After an interrupt (cancel) or a `cancel` reply (abort): how long to wait for turn/completed.
STOP_GRACE_S = 10.0
STDERR_NOTICE_CHARS = 4000
# The turn that continues a resumed thread; the model re-issues what was pending.
CONTINUE_PROMPT = (
    "Gatehouse restarted while you were working. Continue the task from where you left off; "
    "a command that was waiting for approval can be run again."
)

# Notifications that carry nothing for the timeline. The driver opts out of them at
# `initialize` (`optOutNotificationMethods`): a real model's streamed deltas are most of
# what the app-server writes, and each was serialized there and parsed here for nothing.
_QUIET = frozenset(
    {
        "thread/status/changed",
        "thread/started",
        "thread/settings/updated",
        "thread/readState/changed",
        "account/rateLimits/updated",
        "remoteControl/status/changed",
        "item/agentMessage/delta",
        "item/commandExecution/outputDelta",
        "item/fileChange/outputDelta",
        "item/reasoning/summaryTextDelta",
        "item/reasoning/textDelta",
        "item/reasoning/summaryPartAdded",
        "item/plan/delta",
        "turn/diff/updated",
        "turn/plan/updated",
        "serverRequest/resolved",
    }
)


def thread_params(run_policy: Mapping[str, Any], floor: Floor | None, workspace: Path) -> dict[str, Any]:
    """The guardrails of the run's Codex thread, sent with `thread/start` (and `thread/resume`):
    the workspace, the approval policy that makes Codex ask before every command, and the
    sandbox the run policy names (`config.SANDBOX_MODES`; `config.IN_FLOOR` when Gatehouse's
    floor holds the run). A sandbox value the driver does not know fails the run."""
    sandbox_value = str(run_policy.get("sandbox") or "inherit")
    sandbox = config.SANDBOX_MODES.get(sandbox_value)
    if sandbox is None:
        raise RunFailed("agent_protocol_error", f"sandbox {sandbox_value!r} is not supported by the codex driver")
    if floor is not None:
        sandbox = config.IN_FLOOR  # the floor holds Codex and its commands (config.IN_FLOOR)
    return {"cwd": str(workspace), "approvalPolicy": APPROVAL_POLICY, "sandbox": sandbox}


class _Aborted(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CodexDriver:
    def __init__(self, descriptor: Descriptor) -> None:
        self.descriptor = descriptor

    async def run(self, ctx: RunContext) -> RunResult:
        return await _Session(ctx).run()


class _Session(StdioSession):
    driver = "codex"

    def __init__(self, ctx: RunContext) -> None:
        settings: Mapping[str, Any] = ctx.settings or {}
        super().__init__(
            ctx,
            max_line_bytes=int(settings.get("max_line_bytes") or 8 * 1024 * 1024),
            stderr_tail_bytes=int(settings.get("stderr_tail_bytes") or 64 * 1024),
        )
        self.plan_mode = ctx.interaction_mode == "plan"
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.ids = itertools.count(1)
        self.responses: dict[int, asyncio.Future[Any]] = {}
        self.items: dict[str, dict[str, Any]] = {}  # itemId -> item from item/started
        self.steps: dict[str, list[int]] = {}  # itemId -> step ids of allowed requests
        self.thread_id = ""
        self.model = ""
        self.turn_id = ""
        self.turn: dict[str, Any] | None = None  # set by turn/completed
        self.last_text = ""
        self.usage: dict[str, Any] = {}
        self.stopping = False  # after interrupt/cancel: drop further server requests
        self._turn_requested = False
        self.resumed = False  # the thread was resumed: the turn continues it
        self.asked: set[str] = set()  # itemIds Codex asked about
        self.reader: asyncio.Task[None] | None = None

    # -- the run (its start, failures and ending: drivers/session.py) -----------------------
    # A stop by the worker keeps the thread resumable (`resumable_stop`: SIGTERM first).

    async def drive(self) -> RunResult:
        home = config.prepare_home(Path(self.ctx.runtime_dir), self.settings, self.ctx.run_policy or {}, self.workspace)
        argv = [config.find_binary(self.settings), "app-server"]
        scan = await self.scan_workspace()
        await self.start_notices(scan, WORKSPACE_AGENTS)
        try:
            env = config.child_env(self.settings, home, scan.git_env())
            await self.spawn(argv, env=env, floor=self._floor(env), failure="agent_exited")
            self.reader = asyncio.create_task(self._read_loop())
            await self._handshake()
            await self._start_turn()
            while self.turn is None:
                await self._dispatch(await self._next())
            return await self._finish_turn()
        except Cancelled:
            await self._stop_turn(interrupt=True)
            await self.notice("info", "Run cancelled; Codex turn interrupted.")
            return self.result("cancelled")
        except _Aborted as exc:
            await self._stop_turn(interrupt=False)
            await self.notice("error", f"Run aborted: {exc.reason}")
            return self.result("failed", exc.reason)

    def result(self, status: RunStatus, reason: str = "") -> RunResult:
        return RunResult(status=status, failure_reason=reason, text=self.last_text, usage=self.usage)

    async def failed(self, failed: RunFailed) -> RunResult:
        await self.notice("error", failed.detail, reason=failed.reason, stderr=self._stderr_excerpt())
        return self.result("failed", failed.reason)

    async def notice(self, level: str, text: str, **extra: Any) -> None:
        # Codex's notices do not name their driver (the run does).
        await self.emit("notice", cast(Notice, {"level": level, "text": text, **extra}))

    def _floor(self, env: Mapping[str, str]) -> Floor | None:
        """The run's floor, reaching the model API (the configured base URL, else OpenAI's)."""
        servers = (self.settings.get("mcp_servers") or {}).values()
        mcp_urls = [str(s["url"]) for s in servers if isinstance(s, Mapping) and s.get("url")]
        floor = self.floor_reaching([self.settings.get("base_url") or config.DEFAULT_MODEL_URL, *urls_in_env(env), *mcp_urls])
        return floor.replace(own_hosts=config.OWN_HOSTS) if floor is not None else None

    async def _handshake(self) -> None:
        await self._call(
            "initialize",
            {
                "clientInfo": {"name": "gatehouse", "title": "Gatehouse", "version": "0.1.0"},
                # Plan mode (collaborationMode) is experimental API in 0.171.0.
                "capabilities": {"experimentalApi": self.plan_mode, "optOutNotificationMethods": sorted(_QUIET)},
            },
        )
        await self._notify("initialized")
        params = thread_params(self.ctx.run_policy or {}, self.ctx.floor, self.workspace)
        result = await self._resume_thread(params)
        if result is None:
            result = await self._call("thread/start", params)
        thread = result.get("thread") if isinstance(result, Mapping) else None
        if not isinstance(thread, Mapping) or not thread.get("id"):
            raise RunFailed("agent_protocol_error", "thread/start returned no thread id")
        # Refuse to run un-gated if this Codex silently replaced the approval policy.
        if result.get("approvalPolicy") != APPROVAL_POLICY:
            raise RunFailed(
                "agent_protocol_error",
                f"Codex reports approvalPolicy {result.get('approvalPolicy')!r}, not {APPROVAL_POLICY!r}: "
                "it would run commands without asking",
            )
        self.thread_id = str(thread["id"])
        self.model = str(result.get("model") or self.settings.get("model") or "")

    async def _resume_thread(self, params: Mapping[str, Any]) -> Any:
        """Continue this run's Codex thread (kept in its CODEX_HOME) after a restart, with
        the same approval policy; None when there is none to resume (start afresh: the gate
        then answers the steps that already ran from the record)."""
        thread_id = str(self.ctx.resume_state.get("thread_id") or "")
        if not thread_id:
            return None
        fut = await self._send_request(
            "thread/resume",
            {"threadId": thread_id, **params, "excludeTurns": True},
        )
        fut.tolerate_error = True  # type: ignore[attr-defined]
        while not fut.done():
            await self._dispatch(await self._next())
        result = fut.result()
        if not isinstance(result, Mapping):
            await self.emit("notice", {"level": "warning", "text": f"Could not resume Codex thread {thread_id}; starting again from the prompt."})
            return None
        # After a restart the turn continues where the run stopped (`resumed`).
        self.resumed = await self.conversation_continued(
            f"Resumed Codex thread {thread_id}.", f"Continuing the session's Codex thread {thread_id}."
        )
        return result

    async def _start_turn(self) -> None:
        params: dict[str, Any] = {
            "threadId": self.thread_id,
            "input": [{"type": "text", "text": (CONTINUE_PROMPT if self.resumed else self.ctx.prompt) or "", "text_elements": []}],
        }
        if self.plan_mode:
            params["collaborationMode"] = {
                "mode": "plan",
                "settings": {"model": self.model, "reasoning_effort": None, "developer_instructions": None},
            }
        self._turn_requested = True
        fut = await self._send_request("turn/start", params)
        if self.thread_id != (self.ctx.agent_state or {}).get("thread_id"):
            # Saved while Codex starts the turn (not before asking it to): the thread is
            # on record before the turn's first request is gated, which waits for this write.
            await self.ctx.save_agent_state({**(self.ctx.agent_state or {}), "thread_id": self.thread_id})
        while not fut.done():
            await self._dispatch(await self._next())
        result = fut.result()
        turn = result.get("turn") if isinstance(result, Mapping) else None
        if isinstance(turn, Mapping) and turn.get("id") and not self.turn_id:
            self.turn_id = str(turn["id"])

    async def _finish_turn(self) -> RunResult:
        turn = self.turn or {}
        status = turn.get("status")
        if status == "completed":
            return RunResult(status="completed", text=self.last_text, usage=self.usage)
        raw_error = turn.get("error")
        error: Mapping[str, Any] = raw_error if isinstance(raw_error, Mapping) else {}
        message = str(error.get("message") or f"turn ended {status}")
        reason = "agent_error" if status == "failed" else "agent_interrupted"
        await self.emit("notice", {"level": "error", "text": f"Codex turn {status}: {message}", "reason": reason})
        return RunResult(status="failed", failure_reason=reason, text=self.last_text or message, usage=self.usage)

    async def _stop_turn(self, *, interrupt: bool) -> None:
        """Interrupt the turn (cancel) or let a `cancel` reply end it (abort); wait briefly
        for turn/completed, answering nothing more."""
        if self.stopping:
            return
        self.stopping = True
        if self.turn is not None or self.proc.returncode is not None or not self.thread_id:
            return
        try:
            interrupted = False
            deadline = asyncio.get_running_loop().time() + STOP_GRACE_S
            while self.turn is None:
                if interrupt and not interrupted and self.turn_id:
                    # (Before turn/started the turn id is unknown; send as soon as it is.)
                    await self._send_request("turn/interrupt", {"threadId": self.thread_id, "turnId": self.turn_id})
                    interrupted = True
                if not self.turn_id and not self._turn_requested:
                    break  # no turn was ever started: nothing to wait for
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    break
                await self._dispatch(await self._next(timeout=remaining, cancellable=False))
        except (RunFailed, Cancelled, ProcessExitedError) as exc:
            log.debug("codex: stopping turn: %s", exc)

    async def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            await self.close_agent()
        await stop_tasks(self.reader)
        await super().shutdown()
        for fut in self.responses.values():
            fut.cancel()

    # -- transport ---------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                msg = await self.proc.read()
                if msg is None:
                    await self.queue.put(("eof", None))
                    return
                await self.queue.put(("msg", msg))
        except ProtocolError as exc:
            await self.queue.put(("protocol", str(exc)))
        except Exception as exc:  # the pipe broke in some other way
            await self.queue.put(("protocol", f"reading from codex failed: {exc!r}"))

    async def _next(self, timeout: float | None = None, cancellable: bool = True) -> dict[str, Any]:
        """The next message from Codex. Raises Cancelled, or RunFailed for EOF, a bad line,
        or silence longer than the idle timeout (time spent in the gate is not counted)."""
        timeout = self.idle_timeout if timeout is None else timeout
        kind, value = await self.next_entry(self.queue, timeout=timeout, cancellable=cancellable)
        if kind == "cancel":
            raise Cancelled()
        if kind != "timeout":
            return self._unwrap((kind, value))
        raise RunFailed("agent_timeout", f"no message from Codex for {timeout:.0f} s")

    def _unwrap(self, entry: tuple[str, Any]) -> dict[str, Any]:
        kind, value = entry
        if kind == "msg":
            return value
        if kind == "protocol":
            raise RunFailed("agent_protocol_error", f"Codex protocol error: {value}")
        code = self.proc.returncode
        raise RunFailed("agent_exited", "Codex exited before the turn completed" + (f" (exit code {code})" if code is not None else ""))

    async def _send(self, obj: Mapping[str, Any]) -> None:
        try:
            await self.proc.send(obj)
        except ProcessExitedError as exc:
            raise RunFailed("agent_exited", f"Codex closed its input: {exc}") from exc

    async def _notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        msg: dict[str, Any] = {"method": method}
        if params is not None:
            msg["params"] = dict(params)
        await self._send(msg)

    async def _send_request(self, method: str, params: Mapping[str, Any]) -> asyncio.Future[Any]:
        request_id = next(self.ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.responses[request_id] = fut
        fut.method = method  # type: ignore[attr-defined]
        await self._send({"id": request_id, "method": method, "params": dict(params)})
        return fut

    async def _call(self, method: str, params: Mapping[str, Any]) -> Any:
        fut = await self._send_request(method, params)
        while not fut.done():
            await self._dispatch(await self._next())
        return fut.result()

    # -- dispatch ----------------------------------------------------------------------------

    async def _dispatch(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if isinstance(method, str) and "id" in msg:
            await self._on_server_request(msg)
        elif isinstance(method, str):
            await self._on_notification(method, msg.get("params") or {})
        elif "id" in msg and ("result" in msg or "error" in msg):
            self._on_response(msg)
        else:
            raise RunFailed("agent_protocol_error", f"Codex sent a message that is not JSON-RPC: {str(msg)[:200]}")

    def _on_response(self, msg: Mapping[str, Any]) -> None:
        fut = self.responses.pop(msg.get("id"), None)  # type: ignore[arg-type]
        if fut is None:
            raise RunFailed("agent_protocol_error", f"Codex answered a request we never sent (id {msg.get('id')!r})")
        method = getattr(fut, "method", "?")
        if "error" in msg:
            error = msg.get("error") or {}
            text = error.get("message") if isinstance(error, Mapping) else str(error)
            if method in ("turn/interrupt", "turn/steer") or getattr(fut, "tolerate_error", False):
                # interrupt: the turn was already over; steer: the refusal's reason could
                # not be added (the turn ended), the decline itself still stands.
                fut.set_result(None)
                return
            raise RunFailed("agent_protocol_error", f"Codex refused {method}: {text}")
        fut.set_result(msg.get("result"))

    async def _on_notification(self, method: str, params: Mapping[str, Any]) -> None:
        if method in _QUIET:
            return
        if method == "turn/started":
            turn = params.get("turn") or {}
            if turn.get("id"):
                self.turn_id = str(turn["id"])
            await self.emit("turn", {"phase": "start", "turn_id": self.turn_id})
        elif method == "turn/completed":
            turn = dict(params.get("turn") or {})
            if turn.get("id") and self.turn_id and turn["id"] != self.turn_id:
                return
            self.turn = turn
            payload: Turn = {"phase": "end", "turn_id": turn.get("id", ""), "status": turn.get("status")}
            if isinstance(turn.get("error"), Mapping):
                payload["error"] = str(turn["error"].get("message") or "")
            await self.emit("turn", payload)
        elif method == "item/started":
            await self._on_item_started(params.get("item") or {})
        elif method == "item/completed":
            await self._on_item_completed(params.get("item") or {})
        elif method == "thread/tokenUsage/updated":
            usage = params.get("tokenUsage") or {}
            total = usage.get("total") if isinstance(usage, Mapping) else None
            if isinstance(total, Mapping):
                self.usage = {
                    "input_tokens": total.get("inputTokens"),
                    "cached_input_tokens": total.get("cachedInputTokens"),
                    "output_tokens": total.get("outputTokens"),
                    "reasoning_output_tokens": total.get("reasoningOutputTokens"),
                    "total_tokens": total.get("totalTokens"),
                }
                await self.emit("usage", dict(self.usage))
        elif method == "error":
            error = params.get("error") or {}
            text = error.get("message") if isinstance(error, Mapping) else str(error)
            await self.emit("notice", {"level": "warning", "text": f"Codex error: {text}", "will_retry": bool(params.get("willRetry"))})
        elif method in ("warning", "configWarning"):
            pass  # startup noise (fallback model metadata, bundled bubblewrap)
        # Other notifications (new ones in later versions) are ignored on purpose.

    async def _on_item_started(self, item: Mapping[str, Any]) -> None:
        item_type = item.get("type")
        item_id = str(item.get("id") or "")
        if item_type in ("commandExecution", "fileChange"):
            self.items[item_id] = dict(item)
            await self.emit("tool", self._tool_payload("started", item))
        elif item_type in ("webSearch", "mcpToolCall", "dynamicToolCall", "imageView", "collabAgentToolCall"):
            await self.emit("tool", {"event": "started", "item_id": item_id, "tool": item_type, "detail": _short(item)})

    async def _on_item_completed(self, item: Mapping[str, Any]) -> None:
        item_type = item.get("type")
        item_id = str(item.get("id") or "")
        if item_type == "agentMessage":
            text = str(item.get("text") or "")
            if text:
                self.last_text = text
                await self.emit("message", {"text": text})
        elif item_type == "plan":
            text = str(item.get("text") or "")
            if text:
                self.last_text = text
                await self.emit("message", {"text": text, "plan": True})
        elif item_type in ("commandExecution", "fileChange"):
            self.items.pop(item_id, None)
            payload = self._tool_payload("completed", item)
            if item_id not in self.asked and item.get("status") != "declined":
                # Codex ran this without asking. The driver never replies acceptForSession
                # (a grant is asked about every time), so nothing is expected to: a gap
                # worth surfacing.
                payload["asked"] = False
                await self.emit(
                    "notice",
                    {
                        "level": "warning",
                        "text": "Codex ran this without asking Gatehouse",
                        "item_id": item_id,
                        "tool": payload["tool"],
                        "command": payload.get("command", ""),
                    },
                )
            await self.emit("tool", payload)
            for step_id in self.steps.pop(item_id, []):
                await self._finish_step(step_id, item)
        elif item_type in ("webSearch", "mcpToolCall", "dynamicToolCall", "imageView", "collabAgentToolCall"):
            await self.emit("tool", {"event": "completed", "item_id": item_id, "tool": item_type, "detail": _short(item)})

    def _tool_payload(self, event: str, item: Mapping[str, Any]) -> dict[str, Any]:
        payload: dict[str, Any] = {"event": event, "item_id": str(item.get("id") or ""), "status": item.get("status")}
        if item.get("type") == "commandExecution":
            payload["tool"] = "bash"
            payload["command"] = translate.inner_command(str(item.get("command") or ""), item.get("commandActions"))
            if event == "completed":
                payload["exit_code"] = item.get("exitCode")
                payload["output"] = translate.bounded(item.get("aggregatedOutput"), self.output_limit)
        else:
            payload["tool"] = "file_change"
            payload["files"] = [
                {
                    "file_path": translate.relative_path(str(c.get("path") or ""), self.workspace),
                    "change": (c.get("kind") or {}).get("type"),
                    "diff": translate.bounded(c.get("diff"), self.output_limit),
                }
                for c in item.get("changes") or []
                if isinstance(c, Mapping)
            ]
        return payload

    async def _finish_step(self, step_id: int, item: Mapping[str, Any]) -> None:
        status = item.get("status")
        if item.get("type") == "commandExecution":
            output = translate.bounded(item.get("aggregatedOutput"), self.output_limit)
            exit_code = item.get("exitCode")
            error = "" if exit_code is not None or status == "completed" else f"command {status}"
            await self.ctx.step_finished(step_id, output=output, exit_code=exit_code, error=error)
        else:
            error = "" if status == "completed" else f"file change {status}"
            await self.ctx.step_finished(step_id, output="", exit_code=None, error=error)

    # -- server requests ----------------------------------------------------------------------

    async def _steer_refusal(self, reason: str) -> None:
        """A `decline` carries no reason: Codex tells the model only "rejected by user". So
        the reviewer's reason (or the timeout's) is added to the running turn with
        `turn/steer` just before the decline; the model reads it after the tool output."""
        if not reason or not self.turn_id:
            return
        await self._send_request(
            "turn/steer",
            {
                "threadId": self.thread_id,
                "expectedTurnId": self.turn_id,
                "input": [{"type": "text", "text": f"Gatehouse refused that request: {reason}", "text_elements": []}],
            },
        )

    async def _on_server_request(self, msg: Mapping[str, Any]) -> None:
        method = str(msg["method"])
        request_id = msg["id"]
        params = msg.get("params") or {}
        if not isinstance(params, Mapping):
            params = {}
        if self.stopping:
            # Interrupting: Codex resolves what was pending itself; refuse anything new.
            await self._reply_error(request_id, -32000, "the run is stopping")
            return
        self.asked.add(str(params.get("itemId") or ""))
        if method == "item/commandExecution/requestApproval":
            request = translate.command_request(params, self.workspace)
            decision = await self._gate(request)
            await self._record_step(request, decision)
            reply = translate.approval_reply(decision)
            if reply == "decline":
                await self._steer_refusal(decision.reason)
            await self._send({"id": request_id, "result": {"decision": reply}})
            if reply == "cancel":
                raise _Aborted(decision.reason or "aborted")
        elif method == "item/fileChange/requestApproval":
            item = self.items.get(str(params.get("itemId") or ""))
            replies = []
            abort_reason = ""
            for request in translate.file_change_requests(params, item, self.workspace):
                decision = await self._gate(request)
                await self._record_step(request, decision)
                reply = translate.approval_reply(decision)
                replies.append(reply)
                if reply == "cancel":
                    abort_reason = decision.reason or "aborted"
                if reply != "accept":
                    break  # one refused file refuses the whole patch: ask no more
            reply = translate.combine_replies(replies)
            if reply in ("decline", "cancel"):
                # Steps allowed before a refusal never run.
                self.steps.pop(str(params.get("itemId") or ""), None)
            if reply == "decline":
                await self._steer_refusal(decision.reason)
            await self._send({"id": request_id, "result": {"decision": reply}})
            if reply == "cancel":
                raise _Aborted(abort_reason or "aborted")
        elif method == "item/tool/requestUserInput":
            request = translate.question_request(params, self.workspace)
            decision = await self._gate(request)
            if decision.outcome == "abort":
                # There is no "cancel" answer to a question: interrupt the turn instead.
                await self._stop_turn(interrupt=True)
                raise _Aborted(decision.reason or "aborted")
            if decision.outcome != "answer":
                # An empty answers map is all Codex can carry; say in words that no person
                # answered, so the model never takes the silence for a choice.
                await self._steer_refusal(decision.reason or "No human answer to the questions.")
            await self._send({"id": request_id, "result": translate.answers_reply(decision, request)})
        elif method == "mcpServer/elicitation/request":
            await self._on_elicitation(request_id, params)
        else:
            await self.emit(
                "notice",
                {"level": "warning", "text": f"Codex asked {method!r}, which Gatehouse does not handle; refused."},
            )
            await self._reply_error(request_id, -32601, f"Gatehouse does not handle {method}")

    async def _on_elicitation(self, request_id: Any, params: Mapping[str, Any]) -> None:
        """`mcpServer/elicitation/request`: Codex's own question before an MCP tool call
        (`_meta.codex_approval_kind: mcp_tool_call`), gated like any tool request as
        `mcp__<server>__<tool>`; or an MCP server's form, shown as questions
        (drivers/elicitation.py). Anything else is declined, with the reason on the timeline."""
        raw_meta = params.get("_meta")
        meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
        kind = meta.get("codex_approval_kind")
        if kind == "mcp_tool_call":
            request = translate.mcp_tool_request(params, self.workspace)
            decision = await self._gate(request)
            await self._record_step(request, decision)
            reply = translate.approval_reply(decision)
            if reply == "decline":
                await self._steer_refusal(decision.reason)
            await self._send({"id": request_id, "result": translate.elicitation_reply(reply)})
            if reply == "cancel":
                raise _Aborted(decision.reason or "aborted")
            return
        try:
            if kind is not None:
                raise elicitation.Unsupported(f"Codex's {kind!r} approval, which Gatehouse does not know")
            request = translate.elicitation_request(params, self.workspace)
        except elicitation.Unsupported as exc:
            await self.emit("notice", {"level": "warning", "text": (
                f"The MCP server {params.get('serverName')!r} asked for {exc}; Gatehouse cannot show it, so it was declined.")})
            await self._send({"id": request_id, "result": {"action": "decline"}})
            return
        decision = await self._gate(request)
        result = elicitation.reply_of(params.get("requestedSchema") or {}, decision.outcome, decision.answers)
        await self._send({"id": request_id, "result": result})
        if decision.outcome == "abort":
            raise _Aborted(decision.reason or "aborted")

    async def _reply_error(self, request_id: Any, code: int, message: str) -> None:
        await self._send({"id": request_id, "error": {"code": code, "message": message}})

    async def _record_step(self, request: ToolRequest, decision: GateAnswer) -> None:
        if decision.allowed and decision.step_id is not None and request.native_id:
            self.steps.setdefault(request.native_id, []).append(decision.step_id)

    async def _gate(self, request: ToolRequest) -> GateAnswer:
        """Ask the gate, while still noticing a cancel or Codex going away."""
        gate = asyncio.ensure_future(self.ctx.gate(request))
        waiters: set[asyncio.Future[Any]] = {gate}
        if self.cancel_waiter is not None:
            waiters.add(self.cancel_waiter)
        if self.reader is not None:
            waiters.add(self.reader)
        done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if gate in done:
            try:
                return gate.result()
            except RunAborted as exc:
                # The gate may stop the run by raising instead of answering `abort`.
                if self.ctx.cancelled():
                    raise Cancelled() from exc
                return GateAnswer("abort", reason=exc.reason or "aborted")
            except DriverError as exc:
                raise RunFailed(exc.reason, str(exc)) from exc
        gate.cancel()
        with contextlib.suppress(BaseException):
            await gate
        if self.cancel_waiter in done:
            raise Cancelled()
        # The reader ended: Codex exited or wrote garbage. Surface what it was.
        while True:
            kind, value = self.queue.get_nowait() if not self.queue.empty() else ("eof", None)
            if kind != "msg":
                self._unwrap((kind, value))

    # -- helpers ---------------------------------------------------------------------------------

    def _stderr_excerpt(self) -> str:
        tail = self.proc.stderr_tail
        return tail[-STDERR_NOTICE_CHARS:]


def _short(item: Mapping[str, Any]) -> str:
    text = str({k: v for k, v in item.items() if k not in ("type", "id")})
    return text if len(text) <= 500 else text[:500] + "…"
