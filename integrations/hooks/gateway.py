"""The hook gateway's writes: each function is one transaction, through the gate.

A hook session (Claude Code's `session_id`, per token user) gets a Gatehouse session and
an external run on its first call; every PreToolUse call is a step recorded by
`approvals.gate.gate_request_in` (unfenced: no worker owns an external run), with the same
mapping as the Claude Code driver (`drivers.claude_code.mapping.build_request`).

The step lifecycle stays honest: an allowed step is `executing` (handed out) until the
PostToolUse hook reports its result (`finished`), or the session ends (`finished`, with
"result not reported"); a request that waited and nobody decided in time expires and the
step follows the run policy's timeout fallback; a run whose policy aborted it ends
`failed` and every later call of that hook session is denied.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.db.models.functions import Coalesce

from approvals.gate import RUN_UNREAD, gate_request_in, gate_resolution, step_finish
from approvals.models import Approval
from approvals.policy import PolicyError
from approvals.services import approval_give_up
from drivers.base import GateAnswer, ToolRequest
from drivers.claude_code import mapping
from infra import clock
from infra.prepared import Prepared
from integrations.models import HookSession, HookStep
from runs.errors import RunError
from runs.events import Event, Notice
from runs.models import Run, Step
from runs.services import run_create, run_finish, run_mark_running, session_create
from runs.timeline import activity_record

# Agents whose hooks the gateway takes -> the external driver of their runs. Codex's hook
# input names its calls as Claude Code's does (`Bash` with `command`; apply_patch arrives
# as a `Bash` heredoc), so one mapping serves both.
DRIVERS = {"claude-code": "claude-code-hook", "codex": "codex-hook"}
TITLES = {"claude-code": "Claude Code", "codex": "Codex"}
# Kinds a reviewer does not take over from the developer: the CLI asks them itself.
TERMINAL_KINDS = ("question", "plan_review")


class HookRefused(Exception):
    """A call the gateway cannot take (bad input, another policy); the API's error shape."""

    def __init__(self, code: str, message: str, status: int = 400, field: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.field = field


@dataclass(frozen=True)
class PreToolUse:
    """The validated hook input (Claude Code adds fields over time: others are ignored)."""

    session_id: str
    cwd: str
    tool_name: str
    tool_input: Mapping[str, Any]
    tool_use_id: str = ""
    permission_mode: str = "default"
    transcript_path: str = ""


@dataclass(frozen=True)
class HookAnswer:
    """What the hook prints: a decision now, or a wait on `approval_id`."""

    run_id: int
    request: ToolRequest | None
    outcome: GateAnswer | None = None
    # Answered by the gateway itself (no step): "allow" | "deny" | "ask" and why.
    local: tuple[str, str] | None = None

    @property
    def waiting(self) -> bool:
        return self.outcome is not None and self.outcome.outcome == "wait"


def _text(body: Mapping[str, Any], name: str, *, required: bool = True, limit: int = 200) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value) or len(value) > limit:
        raise HookRefused("invalid", f"{name}: a string of 1 to {limit} characters is required.", field=name)
    return value


def parse_pre_tool_use(body: Any) -> PreToolUse:
    if not isinstance(body, Mapping):
        raise HookRefused("invalid", "The hook input must be a JSON object.")
    event = body.get("hook_event_name", "PreToolUse")
    if event != "PreToolUse":
        raise HookRefused("invalid", f"hook_event_name: this endpoint takes PreToolUse, not {event!r}.", field="hook_event_name")
    cwd = _text(body, "cwd", limit=1024)
    if not cwd.startswith("/"):
        raise HookRefused("invalid", "cwd: an absolute path is required.", field="cwd")
    tool_input = body.get("tool_input", {})
    if not isinstance(tool_input, Mapping):
        raise HookRefused("invalid", "tool_input: an object is required.", field="tool_input")
    return PreToolUse(
        session_id=_text(body, "session_id"),
        cwd=cwd,
        tool_name=_text(body, "tool_name", limit=128),
        tool_input=dict(tool_input),
        tool_use_id=_text(body, "tool_use_id", required=False),
        permission_mode=_text(body, "permission_mode", required=False, limit=64) or "default",
        transcript_path=_text(body, "transcript_path", required=False, limit=4096),
    )


# --- the hook session and its run -----------------------------------------------------------


def _new_hook_session(*, user: Any, agent: str, external_id: str, cwd: str, policy_name: str) -> HookSession:
    """First call of a hook session: a Gatehouse session and a running external run."""
    with transaction.atomic():
        session = session_create(user=user, title=f"{TITLES[agent]} {external_id[:40]}")
        run = run_create(
            driver=DRIVERS[agent],
            prompt=f"{TITLES[agent]} session {external_id} (hook gateway)",
            workspace=cwd,
            policy_name=policy_name,
            session=session,
            user=user,
        )
        run_mark_running(run_id=run.pk)
        return HookSession.objects.create(user=user, agent=agent, external_id=external_id, session=session, run=run)


# The hook session with its run as the gate reads it (its session; never its large JSON) and
# its policy's name: compiled once (`infra.prepared`), run on every call of every session.
_HOOK_SESSION: Prepared[HookSession] = Prepared(
    lambda user_id, agent, external_id: (
        HookSession.objects.select_related("run", "run__session", "run__policy")
        .defer(*(f"run__{name}" for name in RUN_UNREAD), "run__policy__document", "run__policy__run_policy",
               "run__policy__description")
        .filter(user_id=user_id, agent=agent, external_id=external_id)[:1]
    ),
    int, str, str,
)


def hook_session_for(*, user: Any, agent: str, external_id: str, cwd: str, policy_name: str) -> HookSession:
    """The hook session's row (created on its first call); refuses another policy."""
    found = _HOOK_SESSION.first(user.pk, agent, external_id)
    if found is None:
        try:
            found = _new_hook_session(user=user, agent=agent, external_id=external_id, cwd=cwd, policy_name=policy_name)
        except IntegrityError:  # the session's first calls raced; the other one created it
            found = _HOOK_SESSION.first(user.pk, agent, external_id)
            if found is None:
                raise
        except RunError as exc:
            raise HookRefused(exc.code, exc.message, exc.status, field=str(exc.fields.get("field", ""))) from None
        except Exception as exc:  # a policy the driver cannot honour, from run_create

            if isinstance(exc, PolicyError):
                raise HookRefused(exc.code, exc.message, 400, field=exc.field or "") from None
            raise
    named = found.run.policy.name if found.run.policy else ""
    if policy_name and policy_name != named:
        raise HookRefused(
            "policy_mismatch",
            f"This {TITLES[agent]} session runs under policy {named or '(the default)'!r}, not {policy_name!r}; start a new session to change it.",
            409,
            field="policy",
        )
    return found


# --- PreToolUse -----------------------------------------------------------------------------


def _plan_file(call: PreToolUse) -> bool:
    """In plan mode the CLI writes its plan under `$CLAUDE_CONFIG_DIR/plans/` (bookkeeping)."""
    path = str(call.tool_input.get("file_path") or "")
    if not call.transcript_path or not path:
        return False
    # transcript_path = <config dir>/projects/<project>/<session>.jsonl
    plans = PurePosixPath(call.transcript_path).parents[2] / "plans"
    return PurePosixPath(path).parent == plans


def _refused_locally(call: PreToolUse, run: Run) -> tuple[str, str] | None:
    """What the gateway answers itself, like the Claude Code driver (no step)."""
    native = call.tool_name
    if call.permission_mode == "plan":
        if native in mapping.EDIT_TOOLS and _plan_file(call):
            return "allow", "Gatehouse: the agent's own plan file."
        if native not in mapping.PLAN_MODE_READ_ONLY and not (
            native == "Bash" and mapping.is_read_only_shell(str(call.tool_input.get("command") or ""))
        ):
            return "deny", (
                f"{native} is not available in plan mode: Gatehouse only allows read-only tools while planning. "
                "Finish the plan and present it with ExitPlanMode for review."
            )
    if native == "WebSearch" and (run.run_policy or {}).get("web_search") == "deny":
        return "deny", "Gatehouse denied this tool call: web search is denied by the run policy."
    return None


def _finished_run_answer(run: Run) -> tuple[str, str]:
    reason = run.failure_reason or run.status
    return "deny", (
        f"Gatehouse ended this session's run #{run.pk} ({reason}): no more tool calls are allowed in it. "
        "Start a new Claude Code session to continue."
    )


def hook_pre_tool_use(*, user: Any, call: PreToolUse, policy_name: str = "", agent: str = "claude-code") -> HookAnswer:
    """Record and decide one PreToolUse call: the hook session, its run and the gate in one
    transaction (a session that ends meanwhile is seen, not written past)."""
    with transaction.atomic():
        hook = hook_session_for(user=user, agent=agent, external_id=call.session_id, cwd=call.cwd, policy_name=policy_name)
        answer = _decide(hook, call)
    if answer.outcome is not None and answer.outcome.outcome == "abort":
        hook_end_run(run_id=answer.run_id, outcome=answer.outcome)
    return answer


def _decide(hook: HookSession, call: PreToolUse) -> HookAnswer:
    run = hook.run
    if run.cancel_requested and not run.is_finished:
        _finish(run.pk, status=Run.Status.CANCELLED)
        run.refresh_from_db()
    if run.is_finished:
        return HookAnswer(run_id=run.pk, request=None, local=_finished_run_answer(run))
    request = mapping.build_request(call.tool_name, call.tool_input, call.cwd, call.tool_use_id, read_files=False)
    if request.kind in TERMINAL_KINDS:
        terminal: Notice = {"text": f"{call.tool_name} is answered by the developer in their terminal.", "tool": call.tool_name}
        activity_record(run_id=run.pk, kind="notice", event=Event.NOTICE, payload=terminal)
        return HookAnswer(run_id=run.pk, request=request, local=("ask", "Gatehouse: questions and plans are answered in your terminal."))
    local = _refused_locally(call, run)
    if local is not None:
        if local[0] == "deny":
            refused: Notice = {"text": local[1], "tool": call.tool_name}
            activity_record(run_id=run.pk, kind="notice", event=Event.NOTICE, payload=refused)
        return HookAnswer(run_id=run.pk, request=request, local=local)
    # The hook cannot wait longer than GATEHOUSE_HOOK_WAIT_S (its own timeout is near): an
    # approval is opened with a deadline never later, so reviewers, the webhooks and the
    # timeline see when it really expires.
    outcome = gate_request_in(
        run, tool=request.tool, input=dict(request.input), cwd=request.cwd, kind=request.kind,
        subtype=request.subtype, presentation=dict(request.presentation), tool_call_id=call.tool_use_id,
        latest_deadline=clock.now() + timedelta(seconds=settings.GATEHOUSE_HOOK_WAIT_S),
    )
    assert outcome.step_id is not None  # the gate names the step it recorded
    if call.tool_use_id:
        HookStep.objects.create(hook_session=hook, tool_use_id=call.tool_use_id, step_id=outcome.step_id)
    return HookAnswer(run_id=run.pk, request=request, outcome=outcome)


def hook_resolution(*, approval_id: int) -> GateAnswer | None:
    """The step's answer once its approval is resolved (None while pending). Retrying is
    something a hook cannot do: `retry` falls back to abort (the gate says so in a notice)."""
    outcome = gate_resolution(approval_id=approval_id, retry_supported=False)
    if outcome is not None and outcome.outcome == "abort":
        run_id = Approval.objects.values_list("run_id", flat=True).get(pk=approval_id)
        hook_end_run(run_id=run_id, outcome=outcome)
    return outcome


def hook_give_up(*, approval_id: int) -> GateAnswer | None:
    """Nobody will read the answer any more (the hook went away): expire the approval now,
    so no reviewer decides a request no agent waits for, and settle its step."""
    approval_give_up(approval_id=approval_id)
    return hook_resolution(approval_id=approval_id)


def hook_end_run(*, run_id: int, outcome: GateAnswer) -> None:
    """The policy or a fallback aborted: the run ends `failed` with the reason."""
    _finish(run_id, status=Run.Status.FAILED, failure_reason=outcome.reason or "aborted")


def _finish(run_id: int, *, status: str, failure_reason: str = "", text: str = "") -> None:
    """End the run. Steps handed out earlier ran on the agent's machine: they are closed as
    run-but-unreported (`finished`), not left for `run_finish` to call them aborted."""
    with transaction.atomic():
        for step_id in Step.objects.filter(run_id=run_id, status=Step.Status.EXECUTING).values_list("id", flat=True):
            step_finish(run_id=run_id, step_id=step_id, output=UNREPORTED)
        run_finish(run_id=run_id, status=status, failure_reason=failure_reason, text=text)


def hook_output(
    answer: HookAnswer, outcome: GateAnswer | None = None, *, tool_input: Mapping[str, Any], agent: str = "claude-code"
) -> dict[str, Any]:
    """The agent's PreToolUse hook output for the answer (the Claude Code driver's reply, reused).

    Codex 0.171.0 takes only `deny` from a PreToolUse hook (`allow` and `ask` are refused as
    unsupported): it gets `{}` — no objection, the call proceeds — for anything but a deny."""
    if answer.local is not None:
        decision, reason = answer.local
    else:
        final = outcome or answer.outcome
        assert final is not None and answer.request is not None
        reply = mapping.permission_reply(answer.request, tool_input, final)
        if reply["behavior"] == "allow":
            decision, reason = "allow", f"Gatehouse allowed this tool call ({final.decided_by})."
        elif final.timed_out:
            waited = settings.GATEHOUSE_HOOK_WAIT_S
            ends = " Gatehouse ended this session's run (the run policy's timeout fallback)." if final.outcome == "abort" else ""
            decision, reason = "deny", f"Gatehouse denied this tool call: no reviewer answered in time (within {waited:g} s).{ends}"
        else:
            decision, reason = "deny", str(reply.get("message") or "Gatehouse denied this tool call.")
    if agent == "codex" and decision != "deny":
        return {}
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": reason}}


# --- PostToolUse and SessionEnd -------------------------------------------------------------


def _tool_output(response: Any) -> tuple[str, str]:
    """(output, error) from a PostToolUse `tool_response` (Bash: stdout/stderr; else JSON)."""
    if isinstance(response, Mapping) and ("stdout" in response or "stderr" in response):
        return str(response.get("stdout") or ""), str(response.get("stderr") or "")
    if isinstance(response, str):
        return response, ""
    return json.dumps(response, ensure_ascii=False, sort_keys=True, default=str), ""


def hook_post_tool_use(*, user: Any, session_id: str, tool_use_id: str, tool_response: Any, agent: str = "claude-code") -> bool:
    """Record what an allowed tool call did; False when no executing step matches."""
    row = (
        HookStep.objects.select_related("step", "hook_session")
        .filter(hook_session__user=user, hook_session__agent=agent, hook_session__external_id=session_id, tool_use_id=tool_use_id)
        .order_by("-id")
        .first()
    )
    if row is None:
        return False
    output, error = _tool_output(tool_response)
    return step_finish(run_id=row.step.run_id, step_id=row.step_id, output=output, error=error)


UNREPORTED = "(no result reported: the agent's PostToolUse hook is not installed, or it did not run)"


def hook_close_idle(*, idle_hours: float | None = None) -> list[int]:
    """Hook runs whose agent went quiet without a SessionEnd (the terminal was closed, the
    machine slept) end `completed` after GATEHOUSE_HOOK_IDLE_CLOSE_H hours without a call,
    as SessionEnd would end them; a later call of that session is told its run ended.
    Returns the runs closed (the worker's hourly housekeeping calls it; 0 hours = never)."""
    hours = settings.GATEHOUSE_HOOK_IDLE_CLOSE_H if idle_hours is None else idle_hours
    if not hours:
        return []
    cutoff = clock.now() - timedelta(hours=hours)
    idle = (
        Run.objects.filter(driver__in=DRIVERS.values()).exclude(status__in=Run.FINISHED)
        .annotate(last=Coalesce(Max("activities__created_at"), "created_at"))
        .filter(last__lt=cutoff)
        .values_list("id", "driver")
    )
    agents = {driver: agent for agent, driver in DRIVERS.items()}
    closed = []
    for run_id, driver in list(idle):
        _finish(run_id, status=Run.Status.COMPLETED, text=(
            f"{TITLES[agents[driver]]} session: no call from its hooks for {hours:g} h and no SessionEnd; "
            "taken as ended."
        ))
        closed.append(run_id)
    return closed


def hook_session_end(*, user: Any, session_id: str, reason: str = "", agent: str = "claude-code") -> Run | None:
    """The agent's session ended: close executing steps as run-but-unreported, then the run."""
    hook = HookSession.objects.select_related("run").filter(user=user, agent=agent, external_id=session_id).first()
    if hook is None:
        return None
    run = hook.run
    if not run.is_finished:
        _finish(run.pk, status=Run.Status.COMPLETED, text=f"{TITLES[agent]} session ended ({reason or 'unknown reason'}).")
    run.refresh_from_db()
    return run
