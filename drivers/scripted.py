"""The scripted driver: replays a scenario and really executes it in the run's workspace.

It is the demo and the test double for everything above the drivers. Scenario format::

    {"steps": [
      {"tool": "bash", "input": {"command": "echo hello > hello.txt"}},
      {"tool": "write", "input": {"file_path": "notes.md", "content": "# Notes\\n"}},
      {"tool": "edit", "input": {"file_path": "notes.md", "old_string": "Notes", "new_string": "Log"}},
      {"tool": "read", "input": {"file_path": "notes.md"}},
      {"tool": "webSearch", "input": {"query": "..."}},          # any other tool: asked, not executed
      {"question": {"questions": [{"id": "color", "header": "Color", "question": "Which?",
                                   "options": [{"label": "Red"}, {"label": "Blue"}],
                                   "multi_select": false, "allow_other": true}]}},
      {"elicitation": {"server": "tickets", "message": "Which project?",   # an MCP server's form
                       "schema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
      {"plan": "# Plan\\n1. Do the thing"},
      {"message": "All done."}
    ]}
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from approvals.policy import PolicyError, mask_secrets, validate_questions
from drivers import agent_env, elicitation, processes, sandbox
from drivers.base import FLOOR_SANDBOX, Descriptor, GateAnswer, RunContext, RunResult, ScenarioError, ToolRequest

EDIT_TOOLS = {"write": "file-change", "edit": "file-change", "MultiEdit": "file-change", "NotebookEdit": "file-change"}
STEP_KEYS = {"tool", "message", "question", "elicitation", "plan"}
OUTPUT_LIMIT = 64 * 1024
MAX_STEPS = 500


def _require_str(value: Any, field: str) -> None:
    if not isinstance(value, str):
        raise ScenarioError(field, f"must be a string, not {type(value).__name__}")


def validate_scenario(scenario: Any) -> None:
    """Refuse anything but the documented shape, naming the first bad field."""
    if not isinstance(scenario, Mapping):
        raise ScenarioError("scenario", "must be an object with a 'steps' list")
    extra = set(scenario) - {"steps"}
    if extra:
        raise ScenarioError(f"scenario.{sorted(extra)[0]}", "unknown field")
    steps = scenario.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ScenarioError("scenario.steps", "must be a non-empty list")
    if len(steps) > MAX_STEPS:
        raise ScenarioError("scenario.steps", f"at most {MAX_STEPS} steps")
    for index, step in enumerate(steps):
        _validate_step(step, f"scenario.steps[{index}]")


def _validate_step(step: Any, where: str) -> None:
    if not isinstance(step, Mapping):
        raise ScenarioError(where, "must be an object")
    keys = set(step) & STEP_KEYS
    if len(keys) != 1:
        raise ScenarioError(where, "needs exactly one of 'tool', 'message', 'question', 'elicitation', 'plan'")
    (key,) = keys
    allowed = {"tool": {"tool", "input"}, "message": {"message"}, "question": {"question"}, "elicitation": {"elicitation"},
               "plan": {"plan"}}[key]
    extra = set(step) - allowed
    if extra:
        raise ScenarioError(f"{where}.{sorted(extra)[0]}", "unknown field")
    if key == "message" or key == "plan":
        _require_str(step[key], f"{where}.{key}")
    elif key == "elicitation":
        form = step["elicitation"]
        if not isinstance(form, Mapping) or set(form) - {"server", "message", "schema"}:
            raise ScenarioError(f"{where}.elicitation", "must be {server, message, schema}")
        try:
            elicitation.questions_of(form.get("schema"))
        except elicitation.Unsupported as exc:
            raise ScenarioError(f"{where}.elicitation.schema", str(exc)) from None
    elif key == "question":
        questions = step["question"].get("questions") if isinstance(step["question"], Mapping) else None
        if not isinstance(questions, list) or not questions:
            raise ScenarioError(f"{where}.question.questions", "must be a non-empty list")

        try:
            validate_questions(questions)
        except PolicyError as exc:
            raise ScenarioError(f"{where}.question.{exc.field or 'questions'}", exc.message) from None
    else:
        _require_str(step["tool"], f"{where}.tool")
        if not step["tool"]:
            raise ScenarioError(f"{where}.tool", "must not be empty")
        tool_input = step.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise ScenarioError(f"{where}.input", "must be an object")
        _validate_tool_input(step["tool"], tool_input, f"{where}.input")


def _validate_tool_input(tool: str, tool_input: Mapping[str, Any], where: str) -> None:
    required: dict[str, tuple[str, ...]] = {
        "bash": ("command",),
        "write": ("file_path", "content"),
        "edit": ("file_path", "old_string", "new_string"),
        "read": ("file_path",),
    }
    for name in required.get(tool, ()):
        if name not in tool_input:
            raise ScenarioError(f"{where}.{name}", "is required")
        _require_str(tool_input[name], f"{where}.{name}")


def _subtype(tool: str) -> str:
    if tool == "bash":
        return "command"
    if tool == "read":
        return "file-read"
    if tool in EDIT_TOOLS:
        return "file-change"
    if tool in ("webSearch", "webFetch"):
        return "web"
    return "tool"


def _presentation(tool: str, tool_input: Mapping[str, Any]) -> dict[str, Any]:
    if tool == "bash":
        return {"title": "Run a command", "command": tool_input["command"]}
    if tool == "write":
        return {"title": f"Write {tool_input['file_path']}", "path": tool_input["file_path"], "content": tool_input["content"]}
    if tool == "edit":
        return {
            "title": f"Edit {tool_input['file_path']}",
            "path": tool_input["file_path"],
            "diff": f"- {tool_input['old_string']}\n+ {tool_input['new_string']}",
        }
    if tool == "read":
        return {"title": f"Read {tool_input['file_path']}", "path": tool_input["file_path"]}
    return {"title": f"Use {tool}", "input": dict(tool_input)}


DESCRIPTOR = Descriptor(
    name="scripted",
    title="Scripted (replays a scenario)",
    # Gatehouse's floor (drivers/sandbox/) holds the agent and all it starts.
    sandbox=FLOOR_SANDBOX,
    web_search=frozenset(),
    browser=frozenset(),
    approval_modes={
        "permission": frozenset({"ask", "auto-approve", "auto-deny"}),
        "plan_review": frozenset({"ask", "auto-approve", "auto-deny"}),
        "question": frozenset({"ask", "auto-deny"}),
    },
    retry=True,
    resumes=True,  # replayed from the record: finished steps answered, never re-run
    structured_output=False,
    sees=("every step of the scenario, reads included",),
    cannot_see=(),
    gates=frozenset({"commands", "edits", "reads", "tools"}),
    edits=frozenset({"bash", "write", "edit"}),  # the edited input is what the driver executes (issue 32.3)
    isolation=("allow-listed environment", "own HOME per run"),
    validate_scenario=validate_scenario,
)


class StepFailed(Exception):
    pass


class ScriptedDriver:
    descriptor = DESCRIPTOR

    async def run(self, ctx: RunContext) -> RunResult:
        validate_scenario(ctx.scenario)
        assert ctx.scenario is not None
        said: list[str] = []
        await ctx.emit("turn", {"phase": "start", "prompt": ctx.prompt})
        for step in ctx.scenario["steps"]:
            if ctx.cancelled():
                return RunResult(status="cancelled", text="\n".join(said))
            if "message" in step:
                said.append(step["message"])
                await ctx.emit("message", {"text": step["message"]})
                continue
            decision = await ctx.gate(self._request(ctx, step))
            if ctx.cancelled():
                return RunResult(status="cancelled", text="\n".join(said))
            if decision.outcome == "abort":
                return RunResult(status="failed", failure_reason=decision.reason or "policy_abort", text="\n".join(said))
            await self._apply(ctx, step, decision, said)
        await ctx.emit("turn", {"phase": "end"})
        return RunResult(status="completed", text="\n".join(said))

    def _request(self, ctx: RunContext, step: Mapping[str, Any]) -> ToolRequest:
        cwd = str(ctx.workspace)
        if "question" in step:
            questions = step["question"]["questions"]
            return ToolRequest(
                tool="AskUserQuestion", input={"questions": questions}, cwd=cwd, kind="question",
                subtype="question", presentation={"title": "The agent asks", "questions": questions},
            )
        if "elicitation" in step:
            form = step["elicitation"]
            return elicitation.tool_request(str(form.get("server") or "scripted"), {
                "mode": "form", "message": form.get("message") or "", "requestedSchema": form["schema"]}, cwd)
        if "plan" in step:
            return ToolRequest(
                tool="ExitPlanMode", input={"plan": step["plan"]}, cwd=cwd, kind="plan_review",
                subtype="plan", presentation={"title": "Review the plan", "plan": step["plan"]},
            )
        tool, tool_input = step["tool"], dict(step.get("input", {}))
        return ToolRequest(
            tool=tool, input=tool_input, cwd=cwd, subtype=_subtype(tool), presentation=_presentation(tool, tool_input)
        )

    async def _apply(self, ctx: RunContext, step: Mapping[str, Any], decision: GateAnswer, said: list[str]) -> None:
        """What the agent does with the decision: refusals are read and the run goes on."""
        if decision.already_done:
            return  # replayed after a restart: it ran before and is not run again
        if "elicitation" in step:
            reply = elicitation.reply_of(step["elicitation"]["schema"], decision.outcome, decision.answers)
            await ctx.emit("message", {"text": f"The MCP server got: {json.dumps(reply, sort_keys=True)}"})
            return
        if decision.outcome == "deny":
            note = f"The request was refused: {decision.reason}" if decision.reason else "The request was refused."
            said.append(note)
            await ctx.emit("message", {"text": note})
            return
        if "question" in step:
            # (a secret answer reached this agent; its echo on the timeline masks it)
            shown = mask_secrets(step["question"]["questions"], dict(decision.answers or {}))
            await ctx.emit("message", {"text": f"Thanks, I got the answers: {shown}"})
            return
        if "plan" in step:
            mode = decision.plan_mode or "default"
            await ctx.emit("message", {"text": f"The plan was approved; continuing in {mode} mode."})
            return
        assert decision.step_id is not None
        tool_input = step.get("input", {})
        if decision.updated_input is not None:
            # A reviewer edited the request before approving it (issue 32.3): the agent runs
            # the edited input, and says so.
            tool_input = {**tool_input, **decision.updated_input}
            note = f"A reviewer edited my {step['tool']} request; I ran the edited version."
            said.append(note)
            await ctx.emit("message", {"text": note})
        try:
            output, exit_code = await self._execute(ctx, step["tool"], tool_input)
        except StepFailed as exc:
            await ctx.step_finished(decision.step_id, error=str(exc))
            return
        await ctx.step_finished(decision.step_id, output=output, exit_code=exit_code)

    async def _execute(self, ctx: RunContext, tool: str, tool_input: Mapping[str, Any]) -> tuple[str, int | None]:
        if tool == "bash":
            return await self._bash(ctx, tool_input["command"])
        if tool == "write":
            path = self._writable(ctx, tool_input["file_path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(tool_input["content"])
            return f"Wrote {len(tool_input['content'])} characters to {tool_input['file_path']}", None
        if tool == "edit":
            path = self._writable(ctx, tool_input["file_path"])
            try:
                text = path.read_text()
            except OSError as exc:
                raise StepFailed(f"cannot read {tool_input['file_path']}: {exc.strerror}") from None
            if tool_input["old_string"] not in text:
                raise StepFailed(f"{tool_input['file_path']} does not contain the text to replace")
            path.write_text(text.replace(tool_input["old_string"], tool_input["new_string"], 1))
            return f"Edited {tool_input['file_path']}", None
        if tool == "read":
            path = self._inside(ctx, tool_input["file_path"])
            try:
                return path.read_text(errors="replace")[:OUTPUT_LIMIT], None
            except OSError as exc:
                raise StepFailed(f"cannot read {tool_input['file_path']}: {exc.strerror}") from None
        return f"{tool} is simulated by the scripted driver; nothing was executed.", None

    def _inside(self, ctx: RunContext, file_path: str) -> Path:
        workspace = Path(ctx.workspace).resolve()
        path = (workspace / file_path).resolve()
        if path != workspace and workspace not in path.parents:
            raise StepFailed(f"{file_path} is outside the workspace")
        return path

    def _writable(self, ctx: RunContext, file_path: str) -> Path:
        """A path inside the workspace that the run's floor lets the agent write: the driver
        writes it itself, so it refuses what a command inside the floor could not do."""
        path = self._inside(ctx, file_path)
        refusal = sandbox.write_refusal(ctx.floor.mode, str(ctx.workspace), str(path)) if ctx.floor else None
        if refusal:
            raise StepFailed(f"cannot write {file_path}: {refusal}")
        return path

    def _environment(self, ctx: RunContext) -> dict[str, str]:
        """What an agent's command gets (drivers/agent_env.py): the allow-list, the run's
        own HOME, and no setting of the server."""
        home = Path(ctx.runtime_dir) / "home"
        home.mkdir(parents=True, exist_ok=True)
        return agent_env.build(ctx.settings, fixed={"HOME": str(home)})

    async def _bash(self, ctx: RunContext, command: str) -> tuple[str, int | None]:
        timeout = float(ctx.settings.get("command_timeout_s", 600))
        proc = await processes.spawn(
            ["bash", "-c", command], floor=ctx.floor, cwd=str(ctx.workspace), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=self._environment(ctx),
        )
        assert proc.stdout is not None
        chunks: list[bytes] = []
        kept = 0

        async def drain() -> None:
            nonlocal kept
            while chunk := await proc.stdout.read(65536):  # type: ignore[union-attr]
                if kept < OUTPUT_LIMIT:
                    chunks.append(chunk[: OUTPUT_LIMIT - kept])
                    kept += len(chunks[-1])

        try:
            await asyncio.wait_for(asyncio.gather(drain(), proc.wait()), timeout)
        except (TimeoutError, asyncio.CancelledError) as exc:
            processes.signal_tree(proc.pid, signal.SIGKILL)  # inside a floor: the whole floor
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise StepFailed(f"the command ran longer than {timeout:g} s and was stopped") from None
        return b"".join(chunks).decode(errors="replace"), proc.returncode
