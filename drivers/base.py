"""The small interface every driver implements, and the values that cross it.

A driver knows its agent's wire protocol and nothing about Django models. It receives a
`RunContext` (implemented by the worker on top of the services), turns each native tool
request into a `ToolRequest`, awaits `ctx.gate(request)` and turns the `GateAnswer` back
into the native reply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from runs.events import DriverKind, Message, Notice, Turn

if TYPE_CHECKING:
    from drivers.sandbox import Floor

Kind = Literal["permission", "plan_review", "question"]
# "wait": a person must decide. Only the gate returns it (with the approval's id): the run
# context, or the hook gateway, waits on that approval and asks again. No driver gets it.
Outcome = Literal["allow", "deny", "abort", "answer", "wait"]
RunStatus = Literal["completed", "failed", "cancelled"]


# The run policy's `sandbox` values every driver whose processes Gatehouse starts can honour:
# the OS sandbox floor (drivers/sandbox/) makes them real, whatever the agent.
FLOOR_SANDBOX = frozenset({"read-only", "workspace-write", "unrestricted"})


@dataclass(frozen=True)
class Descriptor:
    """What a driver models; run-policy validation and the README table read it."""

    name: str
    title: str
    # Run-policy values this driver can honour (an explicit value outside these is refused).
    sandbox: frozenset[str] = frozenset()
    web_search: frozenset[str] = frozenset()
    browser: frozenset[str] = frozenset()
    # Approval routing modes per kind ("permission", "plan_review", "question").
    approval_modes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    retry: bool = False
    structured_output: bool = False
    sees: tuple[str, ...] = ()
    cannot_see: tuple[str, ...] = ()
    # Which requests reach the gate as requests of their own, before they happen:
    # "commands" (shell), "edits" (file writes as edits, with their path), "reads" (the
    # agent's own file reads and searches), "tools" (other named tools: web, MCP, tasks).
    # A policy section for a kind the driver does not gate is not enforced for its runs
    # (the policy page's driver warnings say so).
    gates: frozenset[str] = frozenset()
    # How the agent is kept from the server and from its workspace's own configuration
    # (environment, homes, setting sources, MCP servers, git programs): short phrases for
    # the README's driver table.
    isolation: tuple[str, ...] = ()
    # The driver can stop its agent while a person decides and bring it back later with
    # nothing lost (it resumes the agent's own conversation, or replays from the record):
    # only such runs hibernate (GATEHOUSE_HIBERNATE_AFTER_S).
    resumes: bool = False
    # An external run: the agent runs elsewhere and calls Gatehouse (the hook gateway);
    # no worker ever claims or executes it (runs/leases.py).
    external: bool = False
    # Edit before approve (issue 32.3): the canonical tools whose request a reviewer may
    # edit and approve, because the driver's protocol can hand the agent the edited input
    # (`GateAnswer.updated_input`). Empty: the console offers no Edit and the API answers
    # 409 edit_unsupported.
    edits: frozenset[str] = frozenset()
    # What the registry checks before a run of this driver is created (drivers/registry.py).
    # `validate_options(options, settings)` raises OptionsError; None: the driver takes no options.
    validate_options: Callable[[Mapping[str, Any], Mapping[str, Any]], None] | None = field(default=None, compare=False)
    # `check_workspace(workspace, options, settings)` raises WorkspaceConfigError for a workspace
    # whose agent configuration the agent would load anyway; None: nothing to check.
    check_workspace: Callable[[Path, Mapping[str, Any], Mapping[str, Any]], None] | None = field(default=None, compare=False)
    # `validate_scenario(scenario)` raises ScenarioError; None: the driver takes no scenario.
    validate_scenario: Callable[[Any], None] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ToolRequest:
    """One request from the agent, in canonical form (see the policy-engine issue).

    `tool` is the canonical name (`bash`, `write`, `edit`, `read`, ... or the runtime's own),
    `input` its arguments. `presentation` is what a reviewer sees (title, body, diff, plan,
    questions); every string in it comes from the agent and is untrusted.
    """

    tool: str
    input: Mapping[str, Any]
    cwd: str
    kind: Kind = "permission"
    subtype: str = "tool"
    presentation: Mapping[str, Any] = field(default_factory=dict)
    # The id the driver replies to (often the tool call's own id).
    native_id: str = ""
    # The agent's own id of the tool call, where it differs from `native_id` (OpenCode
    # replies to a permission id; its call is `callID`): recorded on the step.
    tool_call_id: str = ""

    @property
    def call_id(self) -> str:
        """The agent's id of this tool call, as recorded (`tool_call_id` else `native_id`)."""
        return self.tool_call_id or self.native_id

    def canonical(self) -> dict[str, Any]:
        return {"tool": self.tool, "input": dict(self.input), "cwd": self.cwd}


@dataclass(frozen=True)
class GateAnswer:
    """The gate's answer for one request: what `approvals.gate` returns, what the run
    context hands the driver and what the hook gateway answers from (one type, no copies).

    `step_id` names the recorded step for `ctx.step_finished` (the gate always sets it; a
    driver's own refusal, or a test's, has none). `outcome` "wait" (the gate's, never a
    driver's) comes with `approval_id`, the approval to wait on."""

    outcome: Outcome
    reason: str = ""
    # Who decided, in `runs.models.Step.DecidedBy`'s words (what the step records), or
    # "record": a replayed step answered from what is recorded on it.
    decided_by: str = "policy"
    answers: Mapping[str, Any] | None = None  # questions: {question_id: [labels] | "text"}
    plan_mode: str = ""  # plan review approved: "default" | "accept-edits"
    scope: str = "once"  # "session" when a person granted "always allow"
    timed_out: bool = False
    step_id: int | None = None
    # The approval the answer came from, or to wait on ("wait"); None: nobody was asked.
    approval_id: int | None = None
    # A resumed run replays its requests: this one already ran before the worker changed
    # hands. The outcome is then "deny" (so no driver can execute it again), `reason` tells
    # the agent plainly that it already ran, and `recorded_output` is what it printed.
    already_done: bool = False
    recorded_output: str = ""
    # A reviewer edited the request before approving it: the input to execute instead of
    # the agent's (canonical keys; the driver maps them back to its protocol). None: as asked.
    updated_input: Mapping[str, Any] | None = None

    @property
    def allowed(self) -> bool:
        return self.outcome in ("allow", "answer")

    def replace(self, **changes: Any) -> GateAnswer:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class RunResult:
    status: RunStatus
    failure_reason: str = ""
    text: str = ""
    usage: Mapping[str, Any] = field(default_factory=dict)


class DriverError(Exception):
    """A run cannot go on. `reason` is a short code stored on the run."""

    def __init__(self, reason: str, message: str, *, permanent: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.permanent = permanent


class OptionsError(Exception):
    """A run's driver options are refused; `field` names the offending option."""

    def __init__(self, message: str, *, field: str = "options") -> None:
        super().__init__(message)
        self.field = field


class ScenarioError(ValueError):
    """A run's scenario is refused; `field` names the offending part."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class WorkspaceConfigError(Exception):
    """The workspace holds agent configuration the agent would load and that Gatehouse
    cannot switch off (it could run a program or widen a permission): the run is refused."""

    def __init__(self, message: str, *, files: list[str]) -> None:
        super().__init__(message)
        self.files = files


class RunAborted(Exception):
    """The gate answered `abort` (or the run was cancelled): stop the agent at once."""

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason


class RunContext(Protocol):
    """What a driver may use while it runs. Implemented by `drivers.worker`."""

    run_id: int
    prompt: str
    workspace: Path
    # Scratch space for this run (agent HOME, config dirs); created, under var/runtime/.
    runtime_dir: Path
    scenario: Mapping[str, Any] | None
    # Driver options chosen for this run (validated by the driver at run creation).
    options: Mapping[str, Any]
    runtime_mode: str  # approval-required | auto-accept-edits | auto | full-access
    interaction_mode: str  # default | plan
    run_policy: Mapping[str, Any]  # materialised run policy (sandbox, approvals, ...)
    settings: Mapping[str, Any]  # driver settings (binary paths, model endpoint)
    # True when this worker continues a run an earlier worker (or process) started.
    resuming: bool
    # The OS sandbox every process of the run starts in (drivers/sandbox/; pass it to
    # `processes.spawn`, with the model endpoints the agent must reach added by
    # `floor.reaching(urls)`); None when the run has none (`unrestricted`, or the floor off).
    floor: Floor | None
    # What the driver saved with `save_agent_state` (e.g. the agent's session id); {} at first.
    agent_state: Mapping[str, Any]
    # A new run of a session: what an earlier run of this driver in the session saved, so
    # the agent continues that conversation with this run's prompt (a follow-up turn).
    conversation: Mapping[str, Any]

    @property
    def resume_state(self) -> Mapping[str, Any]:
        """The agent state a driver continues from: this run's own `agent_state` when it is
        resuming (a worker changed hands), else the session's `conversation` (a follow-up
        run); {} when there is none."""

    async def save_agent_state(self, state: Mapping[str, Any]) -> None:
        """Persist what the driver needs to resume the agent's own conversation later."""

    async def resumed_conversation(self) -> None:
        """Tell the gate that the agent's own conversation was resumed (it remembers what it
        did): only the step that was pending is matched against the record, and a request
        identical to an earlier finished step is a new step. Without this call a resuming
        run is replayed in order from the start: finished steps are answered from the record."""

    async def gate(self, request: ToolRequest) -> GateAnswer:
        """Record the request, decide it (policy, grants, person) and return the decision."""

    async def step_finished(
        self, step_id: int, *, output: str = "", exit_code: int | None = None, error: str = ""
    ) -> None:
        """Record what an allowed step did (bounded output), for the timeline."""

    # Append an activity of a driver's kind: a turn (`phase` start or end), a message, a
    # notice, each checked against its payload (runs/events.py); a tool call's record and the
    # usage are each driver's own shape.
    @overload
    async def emit(self, kind: Literal["turn"], payload: Turn) -> None: ...
    @overload
    async def emit(self, kind: Literal["message"], payload: Message) -> None: ...
    @overload
    async def emit(self, kind: Literal["notice"], payload: Notice) -> None: ...
    @overload
    async def emit(self, kind: Literal["tool", "usage"], payload: Mapping[str, Any]) -> None: ...

    def cancelled(self) -> bool:
        """True once someone asked to cancel this run."""

    async def wait_cancelled(self) -> None:
        """Return when someone asks to cancel this run."""


class ActivityEmitter:
    """`emit` typed as `RunContext.emit`, for a class that hands a driver's activities on to
    its run context (a driver's session, the ACP client): it implements `forward`."""

    @overload
    async def emit(self, kind: Literal["turn"], payload: Turn) -> None: ...
    @overload
    async def emit(self, kind: Literal["message"], payload: Message) -> None: ...
    @overload
    async def emit(self, kind: Literal["notice"], payload: Notice) -> None: ...
    @overload
    async def emit(self, kind: Literal["tool", "usage"], payload: Mapping[str, Any]) -> None: ...
    async def emit(self, kind: DriverKind, payload: Mapping[str, Any]) -> None:
        await self.forward(kind, payload)

    async def forward(self, kind: DriverKind, payload: Mapping[str, Any]) -> None:
        """Hand on an activity `emit` checked (or one already checked by another's `emit`)."""
        raise NotImplementedError


async def emit_checked(ctx: RunContext, kind: DriverKind, payload: Mapping[str, Any]) -> None:
    """`ctx.emit` for a payload its caller's `emit` already checked against `kind`."""
    emit: Callable[[DriverKind, Mapping[str, Any]], Any] = ctx.emit  # type: ignore[assignment]
    await emit(kind, payload)


class Driver(Protocol):
    descriptor: Descriptor

    async def run(self, ctx: RunContext) -> RunResult: ...
