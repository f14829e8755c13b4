"""The timeline's vocabulary: every event a run's activity may carry (`Event`, its values the
strings stored in `runs.models.Activity.event`), and the payloads its readers rely on
(the webhooks, the event stream, the console, the API's clients: docs/api.md) as
TypedDicts, so a writer's keys are checked. Imports nothing of Gatehouse: every writer
(the gate, the services, the drivers' run context, the hook gateway) may use it."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, NotRequired, Required, TypedDict


class Event(StrEnum):
    """An activity's event (the stored string is the value)."""

    # a run's life (runs.services; `run.<status>` for each finished status, `run_finish`)
    RUN_CREATED = "run.created"
    RUN_STARTED = "run.started"
    RUN_RESUMED = "run.resumed"
    RUN_HIBERNATED = "run.hibernated"
    RUN_WOKE = "run.woke"
    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELLED = "run.cancelled"
    RUN_CANCEL_REQUESTED = "run.cancel_requested"
    # its workspace and delivery (repos.services)
    RUN_WORKSPACE = "run.workspace"
    RUN_DELIVERED = "run.delivered"
    RUN_DELIVERY_FAILED = "run.delivery_failed"
    RUN_DELIVERY_REFUSED = "run.delivery_refused"
    # approvals and questions (approvals.gate.asking, approvals.services, repos.services)
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_RESOLVED = "approval.resolved"
    APPROVAL_SIGNED_OFF = "approval.signed_off"
    USER_INPUT_REQUESTED = "user-input.requested"
    USER_INPUT_RESOLVED = "user-input.resolved"
    # session grants and settings (approvals.services, runs.services)
    GRANT_CREATED = "grant.created"
    GRANT_REVOKED = "grant.revoked"
    SESSION_RUN_POLICY_CHANGED = "session.run_policy_changed"
    SESSION_MODES_CHANGED = "session.modes_changed"
    # the gate's steps (approvals.gate)
    TOOL_REQUESTED = "tool.requested"
    TOOL_FINISHED = "tool.finished"
    STEPS_SUPERSEDED = "steps.superseded"
    # what a driver emits (drivers.runcontext: a turn by its phase, the other kinds as themselves)
    TURN_STARTED = "turn.started"
    TURN_COMPLETED = "turn.completed"
    TURN_UPDATE = "turn.update"
    MESSAGE = "message"
    TOOL = "tool"
    USAGE = "usage"
    NOTICE = "notice"


# --- payloads ------------------------------------------------------------------------------


class ApprovalRequested(TypedDict):
    """`approval.requested` / `user-input.requested`: the webhooks read `approval`."""

    approval: int
    kind: str
    subtype: str
    deadline: str | None
    step: NotRequired[int]  # a tool request's (approvals.gate.asking)
    attempt: NotRequired[int]
    confirmation: NotRequired[str]
    commit: NotRequired[str]  # a delivery's (repos.services)
    branch: NotRequired[str]
    by: NotRequired[str]


class ApprovalResolved(TypedDict):
    """`approval.resolved` / `user-input.resolved`: the webhooks read `approval`."""

    approval: int
    decision: str
    via: str
    by: NotRequired[str]
    reason: NotRequired[str]
    scope: NotRequired[str]
    mode: NotRequired[str]
    grant: NotRequired[int | None]
    edited: NotRequired[bool]
    input: NotRequired[Any]
    edited_input: NotRequired[Any]
    edited_verdict: NotRequired[str]
    edited_rule: NotRequired[str | None]
    answers: NotRequired[Any]  # a question's
    summary: NotRequired[str]


class ToolRequested(TypedDict):
    step: int
    tool: str
    tool_call_id: str
    kind: str
    input: Any
    verdict: str
    decision: str
    decided_by: str
    rule: str | None
    reason: str
    grant: int | None
    external: NotRequired[Any]


class ToolFinished(TypedDict):
    step: int
    tool: str
    output: str
    exit_code: int | None
    error: str


class RunFinished(TypedDict):
    """`run.completed` / `run.failed` / `run.cancelled`."""

    status: str
    failure_reason: NotRequired[str]
    detail: NotRequired[str]


class GrantCreated(TypedDict):
    grant: int
    rule: Any
    label: str
    by: str


class GrantRevoked(TypedDict):
    grant: int
    by: str


class Notice(TypedDict, total=False):
    """`notice`: a line for the person reading the timeline (`text`), with what it is about.
    The keys a notice may carry besides (a driver's `notice(level, text, **extra)` adds its
    own: they are not checked there)."""

    text: str
    level: str
    warning: str
    write: str
    tool: str
    driver: str
    reason: str  # a failure's code (a driver's failed run, a turn that failed)
    agent: str  # the ACP agent's name
    host: str  # a connection the run's egress refused (drivers/runegress.py)
    port: int
    control_files: list[str]  # agent control files that appeared during the run (the worker)
    item_id: str  # Codex: an item it ran without asking
    command: str
    will_retry: bool  # Codex: an error it retries
    refused_env: list[str]  # settings' variables kept from the agent (drivers/agent_env.py)
    workspace_config: list[dict[str, Any]]  # the workspace's agent configuration it was kept from


# --- what a driver emits (`drivers.base.RunContext.emit`; the run context names the event) --

# The kinds a driver may emit (`runs.timeline.DRIVER_ACTIVITY_KINDS`).
DriverKind = Literal["turn", "message", "tool", "usage", "notice"]


class Turn(TypedDict, total=False):
    """`turn`: every driver says `phase` (`start` → turn.started, `end` → turn.completed; the
    run context adds the modes in force to a start). The other keys are what each agent says
    of its turn. (Codex and the scripted driver said `event: started/completed` until issue
    31; `drivers.runcontext` reads such a stored row as its phase.)"""

    phase: Required[Literal["start", "end"]]
    runtime_mode: str  # added by the run context at a start
    interaction_mode: str
    prompt: str  # scripted
    turn_id: str  # Codex
    status: str | None  # Codex, OpenCode: how the turn ended
    error: str
    session_id: str | None  # ACP, Claude Code, OpenCode
    resumed: bool | str  # OpenCode: how ("restart", "follow-up"), "" not
    agent: str  # ACP: the agent, its version
    agent_version: str | None
    port: int  # OpenCode's server
    model: str | None  # Claude Code
    permission_mode: str | None
    cli_version: str | None
    result: str | None
    is_error: bool
    stop_reason: str | None  # ACP, Claude Code
    terminal_reason: str | None


class Message(TypedDict):
    """`message`: what the agent said (bounded), read by the console and the API's clients."""

    text: str
    plan: NotRequired[bool]  # a plan (Codex, ACP)
    thought: NotRequired[bool]  # its reasoning, not its answer (ACP)
    subagent: NotRequired[str | None]  # the sub-agent's tool call that said it (Claude Code)
