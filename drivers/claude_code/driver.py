"""The Claude Code driver: the CLI in SDK streaming mode (JSON lines on stdio).

How each tool call reaches the gate exactly once
------------------------------------------------
`initialize` registers one SDK `PreToolUse` hook for every tool (`matcher: null`). The
hook callback answers `ask` at once, without asking the gate, and the CLI then always
sends a `can_use_tool` for that call. Observed with CLI 2.1.197: a hook `ask` produces a
`can_use_tool` (`decision_reason_type: "hook"`) for every tool, reads and `ls` included,
in every permission mode (default, acceptEdits, plan, bypassPermissions). The gate is
asked once, at `can_use_tool`, which:
  - has no timeout (a person may take minutes; 150 s observed) and accepts
    `updatedInput`, which AskUserQuestion (answers) and ExitPlanMode need anyway;
  - carries the input the tool will run with (the CLI fills ExitPlanMode's `plan` itself
    between the hook and `can_use_tool`).
Deciding in the hook instead would be wrong in plan mode: a hook `allow` runs a Write
without any `can_use_tool` and bypasses plan mode (observed). A second `can_use_tool`
for the same `tool_use_id` (not observed) is answered from the remembered decision.

Other choices
-------------
- "Always allow" (`GateAnswer.scope == "session"`) is not passed to the CLI: the grant is
  Gatehouse's, and every later call reaches the gate again through the hook, where the
  grant answers. Nothing is written to `.claude/settings*.json`.
- In plan mode (as the CLI reports it, so it ends when a plan is approved) the driver
  refuses non-read-only tools itself, with a notice, without creating a step: the CLI
  forwards them and would run them on an allow.
- Writes into the CLI's own plan directory (`$CLAUDE_CONFIG_DIR/plans/`, under the run's
  runtime dir) are the CLI's bookkeeping and are allowed without a step.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers import agent_env, sandbox
from drivers.base import (
    FLOOR_SANDBOX,
    Descriptor,
    DriverError,
    GateAnswer,
    RunAborted,
    RunContext,
    RunResult,
    RunStatus,
    ToolRequest,
)
from drivers.session import CONTINUE_PROMPT, RunFailed, StdioSession, stop_tasks
from drivers.subprocess_io import ProcessExitedError, ProtocolError

from . import isolation, mapping

log = logging.getLogger(__name__)

DESCRIPTOR = Descriptor(
    name="claude-code",
    title="Claude Code",
    # Gatehouse's floor (drivers/sandbox/) holds the agent and all it starts.
    sandbox=FLOOR_SANDBOX,
    # web_search "deny" is enforced with --disallowedTools WebSearch; every search and
    # fetch also goes through the gate. There is no browser tool to allow.
    web_search=frozenset({"allow", "deny"}),
    browser=frozenset({"deny"}),
    approval_modes={
        "permission": frozenset({"ask", "auto-approve", "auto-deny"}),
        "plan_review": frozenset({"ask", "auto-approve", "auto-deny"}),
        "question": frozenset({"ask", "auto-deny"}),
    },
    retry=False,
    resumes=True,  # --resume <session id> (SIGTERM flushes the transcript)
    structured_output=False,
    sees=(
        "every tool call before it runs, reads included (PreToolUse hook on all tools)",
        "shell commands (Bash), with their output",
        "file writes and edits (Write, Edit, MultiEdit, NotebookEdit), with a diff",
        "file reads and searches (Read, Glob, Grep)",
        "web search and fetch",
        "subagent and MCP tool calls",
        "questions (AskUserQuestion) and plan review (ExitPlanMode)",
    ),
    cannot_see=(
        "what an allowed shell command does inside (its child processes, files, network)",
        "the CLI's own files in its runtime directory (session transcript, plan file)",
        "what an administrator's MCP server does once a call is allowed (it runs with the CLI's "
        "environment, model key included)",
    ),
    gates=frozenset({"commands", "edits", "reads", "tools"}),
    # can_use_tool's allow carries `updatedInput`: the edited input is what the CLI runs.
    edits=frozenset({"bash", "write", "edit"}),
    # See isolation.py for what each of these is and what it was checked against.
    isolation=(
        "allow-listed environment",
        "own HOME and CLAUDE_CONFIG_DIR per run",
        "setting sources: only Gatehouse's user settings (no workspace hooks, permissions, plugins, agents, commands)",
        "MCP servers: only the administrator's (--strict-mcp-config)",
        "CLAUDE.md as plain context",
        "no start-up git status; the repository's git programs switched off",
    ),
)

PERMISSION_MODES = {
    "approval-required": "default",
    "auto-accept-edits": "acceptEdits",
    "full-access": "bypassPermissions",
    "auto": "default",
}

# What the CLI may see of the server's environment besides the common allow-list
# (drivers/agent_env.py): its model provider's variables and its documented switches.
ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_")
ENV_NAMES = ("IS_SANDBOX",)
# The model API the CLI reaches when ANTHROPIC_BASE_URL does not name another.
DEFAULT_MODEL_URL = "https://api.anthropic.com"

ISOLATION_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    # No start-up `git status` (it runs a repository's fsmonitor and clean filters): isolation.py.
    "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
    # Each Bash call starts in the workspace: the gate judges a command's paths from there,
    # while the CLI otherwise keeps a `cd` for the next call (`cd .git`, then
    # `echo x > hooks/pre-commit`, was judged as a write of `hooks/pre-commit`: observed).
    "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1",
    "TERM": "dumb",
}

# The hook registration sent in `initialize`: one callback for every tool.
HOOK_CALLBACK_ID = "gatehouse_pre_tool_use"
HOOKS = {"PreToolUse": [{"matcher": None, "hookCallbackIds": [HOOK_CALLBACK_ID]}]}

DRAIN_TIMEOUT_S = 15.0
MESSAGE_CHARS = 64 * 1024
ACTIVITY_CHARS = 4000

_EXIT_CODE = re.compile(r"^Exit code (\d+)")

def find_binary(settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    """GATEHOUSE_CLAUDE_BIN (settings "claude_bin"), else `claude` on PATH, else make's copy."""
    configured = settings.get("claude_bin")
    if configured:
        return str(configured)
    on_path = shutil.which("claude", path=env.get("PATH"))
    if on_path:
        return on_path
    agents_dir = settings.get("agents_dir") or Path(__file__).resolve().parents[2] / ".agents"
    bundled = Path(agents_dir) / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
    return str(bundled) if bundled.is_file() else None


class ClaudeCodeDriver:
    descriptor = DESCRIPTOR

    async def run(self, ctx: RunContext) -> RunResult:
        return await _ClaudeRun(ctx).run()


class _ClaudeRun(StdioSession):
    driver = "claude-code"

    def __init__(self, ctx: RunContext) -> None:
        super().__init__(ctx)
        self.runtime_home = Path(ctx.runtime_dir) / "home"
        self.config_dir = self.runtime_home / ".claude"
        self.cli_mode = "default"
        self._ids = itertools.count(1)
        self._init_id = ""
        self._initialized = False
        # can_use_tool request_id -> task deciding it (awaiting the gate).
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._pending_native: dict[str, dict[str, Any]] = {}
        self._gates_waiting = 0
        # tool_use_id -> (request, decision, reply) once decided; for step_finished and
        # for answering a repeated can_use_tool without asking the gate again.
        self._decided: dict[str, tuple[ToolRequest | None, GateAnswer | None, dict[str, Any]]] = {}
        self._deciding: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tool_names: dict[str, str] = {}
        self._abort: tuple[str, str] | None = None  # (failure reason, detail)
        self._stopping = False
        self._handler_error: BaseException | None = None
        self._wake = asyncio.Event()
        self._last_activity = 0.0
        self._read_task: asyncio.Task[dict[str, Any] | None] | None = None
        self._texts: list[str] = []
        self._resume_session = ""  # the CLI session this run continues (`--resume`)

    # -- entry (the run itself, its failures and its ending: drivers/session.py) -------------
    # A stop by the worker (shutdown, a lost lease, hibernation) sends SIGTERM first, so the
    # CLI flushes its transcript with the pending request still open (`resumable_stop`).

    async def drive(self) -> RunResult:
        await self._start()
        return await self._loop()

    def result(self, status: RunStatus, reason: str = "") -> RunResult:
        return RunResult(status=status, failure_reason=reason, text="\n".join(self._texts))

    # -- start -----------------------------------------------------------------------------

    def _permission_mode(self) -> str:
        if self.ctx.interaction_mode == "plan":
            return "plan"
        mode = PERMISSION_MODES.get(self.ctx.runtime_mode, "default")
        if mode == "bypassPermissions" and not self.settings.get("allow_bypass_permissions"):
            return "default"
        return mode

    def _environment(self, mode: str, git_env: Mapping[str, str] | None = None) -> dict[str, str]:
        fixed = {**(git_env or {}), **ISOLATION_ENV, "HOME": str(self.runtime_home), "CLAUDE_CONFIG_DIR": str(self.config_dir)}
        env = agent_env.build(self.settings, names=ENV_NAMES, prefixes=ENV_PREFIXES, fixed=fixed)
        env.pop("IS_SANDBOX", None)
        if mode == "bypassPermissions":
            # The CLI refuses bypassPermissions as root without it (observed).
            env["IS_SANDBOX"] = "1"
        return env

    def _floor(self, env: Mapping[str, str]) -> sandbox.Floor | None:
        """The run's floor, reaching the model API (ANTHROPIC_BASE_URL, else Anthropic's) and
        the administrator's HTTP MCP servers. Claude Code's own sandbox stays off (its
        default): the floor holds the CLI and everything it starts, not only its Bash."""
        servers = (self.settings.get("mcp_servers") or {}).values()
        mcp_urls = [str(s["url"]) for s in servers if isinstance(s, Mapping) and s.get("url")]
        return self.floor_reaching([*(sandbox.urls_in_env(env) or [DEFAULT_MODEL_URL]), *mcp_urls])

    def _cli_argv(self, binary: str, mode: str, resume_session: str) -> list[str]:
        """The CLI's command line: SDK streaming mode, every permission through stdio, the
        permission mode, web search refused when the run policy denies it, the isolation
        flags (writing the files they name into the run's directory) and `--resume`."""
        argv = [
            binary,
            "--output-format", "stream-json",
            "--input-format", "stream-json",
            "--verbose",
            "--permission-prompt-tool", "stdio",
            "--permission-mode", mode,
        ]  # fmt: skip
        if self.settings.get("model"):
            argv += ["--model", str(self.settings["model"])]
        if (self.ctx.run_policy or {}).get("web_search") == "deny":
            argv += ["--disallowedTools", "WebSearch"]
        argv += isolation.argv(
            files_dir=Path(self.ctx.runtime_dir) / "claude-code",
            workspace=self.workspace,
            mcp_servers=self.settings.get("mcp_servers") or {},
        )
        if resume_session:
            argv += ["--resume", resume_session]
        return argv

    async def _start(self) -> None:
        mode = self._permission_mode()
        if self.ctx.interaction_mode != "plan" and self.ctx.runtime_mode == "full-access" and mode != "bypassPermissions":
            await self.notice(
                "warning",
                "full-access was requested but this server does not allow Claude Code's bypassPermissions; "
                "running in default mode (every tool call still goes through the gate).",
            )
        self.cli_mode = mode
        scan = await self.scan_workspace()
        await self.start_notices(scan, isolation.AGENTS)
        env = self._environment(mode, scan.git_env())
        binary = find_binary(self.settings, env)
        if not binary:
            raise RunFailed("agent_not_found", "Claude Code CLI not found: set GATEHOUSE_CLAUDE_BIN, put `claude` on PATH, or run `make agents`.")
        isolation.prepare_config_dir(self.config_dir)
        self._resume_session = self._resumable_session()
        argv = self._cli_argv(binary, mode, self._resume_session)
        await self.spawn(argv, env=env, floor=self._floor(env))
        self._last_activity = asyncio.get_running_loop().time()
        self._init_id = f"req_{next(self._ids)}_initialize"
        await self._send(
            {"type": "control_request", "request_id": self._init_id, "request": {"subtype": "initialize", "hooks": HOOKS}}
        )
        # The prompt follows at once: the CLI reads its input in order, so the turn starts
        # as soon as its own start-up is done (waiting for the initialize reply first cost a
        # round trip through its start-up, ~0.1-0.3 s per run). A refused initialize still
        # fails the run before any tool request is answered.
        await self._begin_turn()

    def _resumable_session(self) -> str:
        """The CLI session to continue, if a transcript of it survived: this run's own after
        a restart, else — for a new run of the session — the session's
        conversation with Claude Code (a follow-up turn with this run's prompt).

        The CLI keeps its transcript at `$CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl`
        (flushed on SIGTERM or stdin EOF; a SIGKILL during the first turn leaves none).
        Without one, the run starts again from its prompt and the gate answers the steps
        that already ran from the record.
        """
        session_id = str(self.ctx.resume_state.get("session_id") or "")
        if not re.fullmatch(r"[A-Za-z0-9-]{1,100}", session_id):
            return ""
        transcripts = self.config_dir / "projects"
        if not any(path.stat().st_size > 0 for path in transcripts.glob(f"*/{session_id}.jsonl")):
            return ""
        return session_id

    # -- the loop --------------------------------------------------------------------------

    async def _loop(self) -> RunResult:
        while True:
            event, value = await self._next_event()
            if event == "message":
                result = await self._dispatch(value)
                if result is not None:
                    return result
            elif event == "cancel":
                return await self._finish_cancelled()
            elif event == "abort":
                if self.ctx.cancelled():
                    return await self._finish_cancelled()
                assert self._abort is not None
                reason, detail = self._abort
                await self.notice("error", detail, reason=reason)
                await self._drain()
                return RunResult(status="failed", failure_reason=reason, text="\n".join(self._texts))
            elif event == "eof":
                code = await self.proc.close(timeout=5.0)
                raise RunFailed("agent_exited", f"Claude Code exited (code {code}) before the turn finished.{self.stderr_hint()}")
            elif event == "timeout":
                raise RunFailed(
                    "agent_timeout", f"Claude Code wrote nothing for {self.idle_timeout:g} s while no decision was pending.{self.stderr_hint()}"
                )

    async def _next_event(self, *, deadline: float | None = None) -> tuple[str, Any]:
        """The next thing to act on: a message, EOF, cancel, abort, idle timeout."""
        loop = asyncio.get_running_loop()
        while True:
            if self._handler_error is not None:
                raise self._handler_error
            if self._abort is not None and not self._stopping:
                return "abort", None
            if self._read_task is None:
                self._read_task = asyncio.create_task(self.proc.read())
            wake = asyncio.create_task(self._wake.wait())
            waiters: set[asyncio.Future[Any]] = {self._read_task, wake}
            if self.cancel_waiter is not None and not self._stopping:
                waiters.add(self.cancel_waiter)
            now = loop.time()
            if deadline is not None:
                timeout: float | None = max(0.0, deadline - now)
            elif self._gates_waiting:
                timeout = None  # a person may be deciding: that is not the agent hanging
            else:
                timeout = max(0.0, self.idle_timeout - (now - self._last_activity))
            try:
                done, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                wake.cancel()
            self._wake.clear()
            if self._read_task in done:
                task, self._read_task = self._read_task, None
                self._last_activity = loop.time()
                try:
                    message = task.result()
                except ProtocolError as exc:
                    raise RunFailed("agent_protocol_error", f"Claude Code protocol error: {exc}") from exc
                return ("eof", None) if message is None else ("message", message)
            if self.cancel_waiter is not None and self.cancel_waiter in done and not self._stopping:
                return "cancel", None
            if done:
                continue  # woken: a gate started or finished, or an abort was decided
            if deadline is not None and loop.time() >= deadline:
                return "timeout", None
            if not self._gates_waiting and loop.time() - self._last_activity >= self.idle_timeout:
                return "timeout", None

    # -- messages from the CLI -------------------------------------------------------------

    async def _dispatch(self, msg: dict[str, Any]) -> RunResult | None:
        kind = msg.get("type")
        if kind == "control_request":
            await self._on_control_request(msg)
        elif kind == "control_response":
            await self._on_control_response(msg)
        elif kind == "control_cancel_request":
            self._on_control_cancel(msg)
        elif kind == "assistant":
            await self._on_assistant(msg)
        elif kind == "user":
            await self._on_user(msg)
        elif kind == "system":
            await self._on_system(msg)
        elif kind == "result":
            return await self._on_result(msg)
        elif kind in ("stream_event", "keep_alive", "rate_limit_event", "tool_progress", "auth_status"):
            pass
        elif not isinstance(kind, str):
            raise RunFailed("agent_protocol_error", f"Claude Code wrote a message without a type: {mapping.bounded(repr(msg), 300)}")
        else:
            log.debug("claude-code: ignoring message type %s", kind)
        return None

    async def _on_control_response(self, msg: dict[str, Any]) -> None:
        response = msg.get("response") or {}
        if response.get("request_id") != self._init_id or self._initialized:
            return
        if response.get("subtype") != "success":
            raise RunFailed("agent_protocol_error", f"Claude Code refused initialize: {mapping.bounded(str(response.get('error')), 500)}")
        self._initialized = True

    async def _begin_turn(self) -> None:
        restarted = False
        if self._resume_session:
            # After a restart the agent remembers what it did: the gate matches only what was still open.
            restarted = await self.conversation_continued(
                f"Resumed Claude Code's conversation {self._resume_session}.",
                f"Continuing the session's Claude Code conversation {self._resume_session}.",
            )
        await self._send(
            {
                "type": "user",
                "message": {"role": "user", "content": CONTINUE_PROMPT if restarted else self.ctx.prompt},
                "parent_tool_use_id": None,
                "session_id": "default",
            }
        )

    async def _on_control_request(self, msg: dict[str, Any]) -> None:
        request_id = msg.get("request_id")
        request = msg.get("request")
        if not isinstance(request_id, str) or not isinstance(request, dict):
            raise RunFailed("agent_protocol_error", "Claude Code sent a control_request without request_id or request.")
        subtype = request.get("subtype")
        if subtype == "hook_callback":
            await self._reply(request_id, self._hook_answer(request))
        elif subtype == "can_use_tool":
            if self._stopping:
                await self._reply(request_id, {"behavior": "deny", "message": "The run is ending in Gatehouse.", "interrupt": True})
                return
            self._pending_native[request_id] = request
            task = asyncio.create_task(self._decide(request_id, request))
            self._pending[request_id] = task
            task.add_done_callback(functools.partial(self._handler_done, request_id))
        else:
            # The CLI waits for an answer to every control request: never leave one hanging.
            await self.notice("warning", f"Claude Code asked for {subtype!r}, which Gatehouse does not support; refused.")
            await self._send(
                {
                    "type": "control_response",
                    "response": {"subtype": "error", "request_id": request_id, "error": f"unsupported control request: {subtype}"},
                }
            )

    def _hook_answer(self, request: dict[str, Any]) -> dict[str, Any]:
        hook_input = request.get("input") or {}
        if request.get("callback_id") != HOOK_CALLBACK_ID or hook_input.get("hook_event_name") != "PreToolUse":
            return {}
        if self._stopping:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "The run is ending in Gatehouse.",
                }
            }
        # Always "ask": the decision is made once, at the can_use_tool that follows.
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": "Gatehouse decides every tool call.",
            }
        }

    def _on_control_cancel(self, msg: dict[str, Any]) -> None:
        # The CLI gave up on a request (after an interrupt): stop deciding it, do not reply.
        request_id = msg.get("request_id")
        task = self._pending.pop(request_id, None) if isinstance(request_id, str) else None
        if task is not None:
            task.cancel()

    def _handler_done(self, request_id: str, task: asyncio.Task[None]) -> None:
        self._pending.pop(request_id, None)
        self._pending_native.pop(request_id, None)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and self._handler_error is None:
            self._handler_error = exc
            self._wake.set()

    async def _decide(self, request_id: str, request: dict[str, Any]) -> None:
        native = str(request.get("tool_name") or "")
        raw_input = request.get("input")
        tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
        tool_use_id = str(request.get("tool_use_id") or "")
        if tool_use_id and tool_use_id in self._decided:
            await self._reply(request_id, self._decided[tool_use_id][2])
            return
        if tool_use_id and tool_use_id in self._deciding:
            # Still being decided for an earlier request: share that one decision.
            await self._reply(request_id, await asyncio.shield(self._deciding[tool_use_id]))
            return
        decided: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if tool_use_id:
            self._deciding[tool_use_id] = decided
        try:
            reply = await self._decide_once(request_id, native, tool_input, tool_use_id)
        except BaseException:
            decided.cancel()
            raise
        finally:
            self._deciding.pop(tool_use_id, None)
        decided.set_result(reply)

    async def _decide_once(self, request_id: str, native: str, tool_input: dict[str, Any], tool_use_id: str) -> dict[str, Any]:
        local = self._local_answer(native, tool_input)
        if local is not None:
            reply, notice = local
            if notice:
                await self.notice("warning", notice, tool=native, tool_use_id=tool_use_id)
            if tool_use_id:
                self._decided[tool_use_id] = (None, None, reply)
            await self._reply(request_id, reply)
            return reply
        tool_request = mapping.build_request(native, tool_input, str(self.ctx.workspace), tool_use_id)
        self._gates_waiting += 1
        self._wake.set()
        try:
            decision = await self.ctx.gate(tool_request)
        except RunAborted as exc:
            decision = GateAnswer(outcome="abort", reason=exc.reason)
        except DriverError as exc:
            reply = {"behavior": "deny", "message": f"Gatehouse failed: {exc}", "interrupt": True}
            await self._reply(request_id, reply)
            self._abort = (exc.reason, str(exc))
            self._wake.set()
            return reply
        finally:
            self._gates_waiting -= 1
            self._last_activity = asyncio.get_running_loop().time()
            self._wake.set()
        reply = mapping.permission_reply(tool_request, tool_input, decision)
        if tool_use_id:
            self._decided[tool_use_id] = (tool_request, decision, reply)
        await self._reply(request_id, reply)
        if decision.allowed and decision.updated_input is not None:
            # The allow's `updatedInput` is the only place the protocol has: the model sees the
            # edited input in its own tool call's result, the timeline says so here.
            await self.notice("info", f"A reviewer edited this {native} request; Claude Code ran the edited version.",
                               tool=native, tool_use_id=tool_use_id)
        if decision.outcome == "abort":
            reason = decision.reason or "aborted"
            self._abort = (reason, f"The run was aborted at {native}: {reason}")
            self._wake.set()
        return reply

    def _local_answer(self, native: str, tool_input: Mapping[str, Any]) -> tuple[dict[str, Any], str] | None:
        """Answers the driver gives itself, without a step (see the module docstring)."""
        if native in mapping.EDIT_TOOLS and self._is_plan_file(tool_input):
            return {"behavior": "allow", "updatedInput": dict(tool_input)}, ""
        if self.cli_mode != "plan" or native in mapping.PLAN_MODE_READ_ONLY:
            return None
        if native == "Bash" and mapping.is_read_only_shell(str(tool_input.get("command") or "")):
            return None
        message = (
            f"{native} is not available in plan mode: Gatehouse only allows read-only tools while planning. "
            "Finish the plan and present it with ExitPlanMode for review."
        )
        return {"behavior": "deny", "message": message}, f"Refused {native} in plan mode (not read-only)."

    def _is_plan_file(self, tool_input: Mapping[str, Any]) -> bool:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        if not path:
            return False
        try:
            resolved = Path(str(path)).resolve()
            plans = (self.config_dir / "plans").resolve()
        except (OSError, ValueError):
            return False
        return resolved.is_relative_to(plans) and resolved != plans

    async def _on_assistant(self, msg: dict[str, Any]) -> None:
        message = msg.get("message") or {}
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                text = mapping.bounded(str(block["text"]), MESSAGE_CHARS)
                self._texts.append(text)
                await self.ctx.emit("message", {"text": text, "subagent": msg.get("parent_tool_use_id")})
            elif block.get("type") == "tool_use":
                tool_use_id = str(block.get("id") or "")
                name = str(block.get("name") or "")
                self._tool_names[tool_use_id] = name
                await self.ctx.emit(
                    "tool",
                    {
                        "phase": "call",
                        "tool_use_id": tool_use_id,
                        "name": name,
                        "tool": mapping.canonical_tool(name)[0],
                        "input": mapping.bounded_value(block.get("input") or {}, ACTIVITY_CHARS),
                    },
                )

    async def _on_user(self, msg: dict[str, Any]) -> None:
        content = (msg.get("message") or {}).get("content")
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_use_id = str(block.get("tool_use_id") or "")
            name = self._tool_names.get(tool_use_id, "")
            is_error = bool(block.get("is_error"))
            output = mapping.result_text(block.get("content"))
            await self.ctx.emit(
                "tool",
                {
                    "phase": "result",
                    "tool_use_id": tool_use_id,
                    "name": name,
                    "is_error": is_error,
                    "output": mapping.bounded(output, ACTIVITY_CHARS),
                },
            )
            request, decision, _reply = self._decided.get(tool_use_id, (None, None, None))
            if decision is None or not decision.allowed or decision.step_id is None:
                continue
            exit_code: int | None = None
            if name == "Bash":
                match = _EXIT_CODE.match(output) if is_error else None
                exit_code = int(match.group(1)) if match else (None if is_error else 0)
            bounded_output = mapping.bounded(output, self.output_limit)
            await self.ctx.step_finished(
                decision.step_id,
                output=bounded_output,
                exit_code=exit_code,
                error=bounded_output if is_error else "",
            )

    async def _on_system(self, msg: dict[str, Any]) -> None:
        subtype = msg.get("subtype")
        if subtype == "init":
            self.cli_mode = str(msg.get("permissionMode") or self.cli_mode)
            session_id = msg.get("session_id")
            if isinstance(session_id, str) and session_id and session_id != (self.ctx.agent_state or {}).get("session_id"):
                await self.ctx.save_agent_state({**(self.ctx.agent_state or {}), "session_id": session_id})
            await self.ctx.emit(
                "turn",
                {
                    "phase": "start",
                    "session_id": msg.get("session_id"),
                    "model": msg.get("model"),
                    "permission_mode": msg.get("permissionMode"),
                    "cli_version": msg.get("claude_code_version"),
                },
            )
        elif subtype == "status" and msg.get("permissionMode"):
            previous, self.cli_mode = self.cli_mode, str(msg["permissionMode"])
            if previous != self.cli_mode:
                await self.notice("info", f"Claude Code permission mode: {previous} -> {self.cli_mode}.")

    async def _on_result(self, msg: dict[str, Any]) -> RunResult:
        usage = {
            **{k: v for k, v in (msg.get("usage") or {}).items() if isinstance(v, (int, float))},
            "total_cost_usd": msg.get("total_cost_usd"),
            "duration_ms": msg.get("duration_ms"),
            "num_turns": msg.get("num_turns"),
        }
        await self.ctx.emit("usage", usage)
        ok = msg.get("subtype") == "success" and not msg.get("is_error")
        text = str(msg.get("result") or "") or "\n".join(self._texts)
        await self.ctx.emit(
            "turn",
            {"phase": "end", "result": msg.get("subtype"), "is_error": bool(msg.get("is_error")), "stop_reason": msg.get("stop_reason"), "terminal_reason": msg.get("terminal_reason")},
        )
        if ok:
            return RunResult(status="completed", text=text, usage=usage)
        detail = f"Claude Code ended the turn with {msg.get('subtype')}: {mapping.bounded(text, 2000)}"
        await self.notice("error", detail, reason="agent_error")
        return RunResult(status="failed", failure_reason="agent_error", text=text, usage=usage)

    # -- cancel, drain, shutdown -----------------------------------------------------------

    async def _finish_cancelled(self) -> RunResult:
        self._stopping = True
        await self.notice("info", "Cancel requested: interrupting Claude Code.")
        # Answer whatever waits for a decision (deny + interrupt), then interrupt the turn
        # (stops a running command). The CLI may also send control_cancel_request.
        for request_id, task in list(self._pending.items()):
            task.cancel()
            with contextlib.suppress(ProcessExitedError):
                await self._reply(request_id, {"behavior": "deny", "message": "The run was cancelled in Gatehouse.", "interrupt": True})
        self._pending.clear()
        with contextlib.suppress(ProcessExitedError):
            await self._send({"type": "control_request", "request_id": f"req_{next(self._ids)}_interrupt", "request": {"subtype": "interrupt"}})
        await self._drain()
        return RunResult(status="cancelled", text="\n".join(self._texts))

    async def _drain(self) -> None:
        """After an interrupt, read (bounded in time) until the turn's result or EOF."""
        self._stopping = True
        deadline = asyncio.get_running_loop().time() + DRAIN_TIMEOUT_S
        while True:
            try:
                event, value = await self._next_event(deadline=deadline)
            except (RunFailed, ProcessExitedError):
                return
            if event != "message":
                return
            if value.get("type") == "result":
                return
            with contextlib.suppress(RunFailed, ProcessExitedError):
                await self._dispatch(value)

    async def shutdown(self) -> None:
        self._stopping = True
        await stop_tasks(self._read_task, *self._pending.values())
        await super().shutdown()
        await self.close_agent()

    # -- helpers ---------------------------------------------------------------------------

    async def _send(self, obj: dict[str, Any]) -> None:
        try:
            await self.proc.send(obj)
        except ProcessExitedError:
            if self._stopping:
                raise
            # The read side will see EOF and report the exit with its code.
            log.debug("claude-code: write after exit: %s", obj.get("type"))

    async def _reply(self, request_id: str, response: dict[str, Any]) -> None:
        await self._send({"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": response}})
