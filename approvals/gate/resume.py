"""The resume contract, in one place so that no driver can forget it.

When a worker continues a run another worker (or an earlier process) started, the
driver's requests are matched against the recorded steps before anything is decided:

* a step recorded `finished` is never executed again: the gate answers `deny` with
  `already_done`, telling the agent plainly that it already ran and what it printed;
* an answered question or reviewed plan is answered again from the record, never re-asked;
* a refusal is told again as it was told;
* a decision made while no worker owned the run is applied — but only to the same request
  (same tool, same input, ignoring free-text fields that only describe it, such as
  Claude Code's Bash `description`);
* a step that was `executing` when the worker died becomes an `interrupted_side_effect`
  approval, re-checked against the policy before it runs again.

How requests are matched depends on how the driver resumed. A driver that starts the
agent again from the prompt replays it in order: each request is compared with the next
recorded step. A driver that resumed the agent's own conversation (Claude Code
`--resume`, Codex `thread/resume`) says so (`resumed_conversation`): the agent remembers
what it did, so only the steps still open are matched, and a request identical to an
earlier finished step is a new step (an agent may append to a file twice on purpose).
Either way, the first request that differs from the record means the agent went another
way: the open steps left in the record are closed (their approvals cancelled) and that
request, like every later one, is decided afresh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from approvals import policy as core
from approvals.models import Approval
from drivers.base import GateAnswer
from infra import broadcast, clock
from runs.events import Event
from runs.leases import fence
from runs.models import Step
from runs.timeline import activity_record

from .asking import approval_open
from .edits import edited_input_of
from .lifecycle import OPEN, step_move
from .status import run_status_sync

S = Step.Status

# Input fields that only describe a request (a model rewrites them freely between tries);
# they never make two requests different.
FREE_TEXT_FIELDS = frozenset({"description"})
OUTPUT_TOLD_CHARS = 4000


def match_key(*, tool: str, input: Any, kind: str = "permission") -> str:
    """What makes two requests "the same request" for the resume contract."""
    tool_input = dict(input) if isinstance(input, dict) else {}
    meaningful = {k: v for k, v in tool_input.items() if k not in FREE_TEXT_FIELDS}
    try:
        body = core.canonical_json({"kind": kind, "tool": tool, "input": meaningful})
    except core.PolicyError:
        body = repr((kind, tool, sorted(meaningful.items(), key=lambda kv: kv[0])))
    return body


@dataclass(frozen=True)
class RecordedStep:
    id: int
    seq: int
    key: str
    status: str

    @property
    def open(self) -> bool:
        return self.status in OPEN


def recorded_steps(*, run_id: int) -> list[RecordedStep]:
    """The run's steps in order, as the resume contract matches them."""
    # (a step a reviewer edited is matched by what the agent asked: its original request)
    rows = Step.objects.filter(run_id=run_id).order_by("seq").values_list(
        "id", "seq", "tool", "kind", "request", "original_request", "status")
    return [
        RecordedStep(id=pk, seq=seq, key=match_key(tool=tool, input=(original or request or {}).get("input", {}), kind=kind),
                     status=status)
        for pk, seq, tool, kind, request, original, status in rows
    ]


def _already_done(step: Step) -> GateAnswer:
    output = step.output or step.error
    exit_code = f" (exit code {step.exit_code})" if step.exit_code is not None else ""
    told = output if len(output) <= OUTPUT_TOLD_CHARS else output[:OUTPUT_TOLD_CHARS] + "\n… (truncated)"
    reason = (
        "Already done: this step ran before Gatehouse restarted, so it was not run again. "
        f"Its recorded result{exit_code}:\n{told}" if told else
        f"Already done: this step ran before Gatehouse restarted{exit_code}, so it was not run again."
    )
    return GateAnswer(step_id=step.pk, outcome="deny", reason=reason, decided_by="record", already_done=True,
                    recorded_output=step.output)


def answer_from_record(step: Step, *, owner: str | None = None) -> GateAnswer:
    """What the driver is told for a step from what is recorded on it.

    Final steps are answered from the record; an `allowed` step (decided, never handed out)
    is handed out now; an `executing` one becomes an interrupted side effect; a `waiting`
    one waits on its latest approval (which may have been decided meanwhile).
    """
    status = step.status
    if status == S.FINISHED:
        return _already_done(step)
    if status == S.DENIED:
        return GateAnswer(step_id=step.pk, outcome="deny", reason=step.told or step.reason, decided_by=step.decided_by)
    if status == S.ABORTED:
        return GateAnswer(step_id=step.pk, outcome="abort", reason=step.told or "policy_abort", decided_by=step.decided_by)
    if status == S.ANSWERED:
        if step.kind == Approval.Kind.QUESTION:
            # (answered again from the record: a secret answer is not there, and the agent is told so)
            told = core.answers_for_agent(step.presentation.get("questions") or [], step.answers)
            return GateAnswer(step_id=step.pk, outcome="answer", answers=told, decided_by=step.decided_by)
        return GateAnswer(step_id=step.pk, outcome="allow", plan_mode=step.plan_mode, decided_by=step.decided_by)
    if status == S.ALLOWED:
        step_move(step.pk, S.EXECUTING)
        return GateAnswer(step_id=step.pk, outcome="allow", decided_by=step.decided_by, updated_input=edited_input_of(step))
    if status == S.EXECUTING:
        return _interrupted(step)
    latest = Approval.objects.filter(step=step).order_by("-id").first()
    if status == S.WAITING and latest is not None:
        return GateAnswer(step_id=step.pk, outcome="wait", approval_id=latest.pk)
    raise ValueError(f"step {step.pk} in state {status} cannot be answered from the record")


def _interrupted(step: Step) -> GateAnswer:
    """The worker stopped while this step may have been running: ask a person first."""
    step_move(step.pk, S.WAITING, frm=S.EXECUTING)
    presentation = {
        **step.presentation,
        "title": f"Interrupted: {step.presentation.get('title') or step.tool}",
        "note": "The worker stopped while this may have been running. Run it again?",
    }
    approval = approval_open(
        run=step.run, step=step, kind=Approval.Kind.INTERRUPTED_SIDE_EFFECT, subtype=step.subtype,
        request=step.request, presentation=presentation,
    )
    return GateAnswer(step_id=step.pk, outcome="wait", approval_id=approval.pk)


def gate_replay(*, run_id: int, step_id: int, owner: str | None = None) -> GateAnswer | None:
    """Answer a replayed request from its recorded step; None when nothing was decided for
    it (the caller then decides the request afresh)."""
    with transaction.atomic():
        fence(run_id, owner)
        step = Step.objects.select_related("run").get(pk=step_id, run_id=run_id)
        if step.status == S.REQUESTED:
            return None
        outcome = answer_from_record(step, owner=owner)
        if outcome.outcome == "wait" or step.status in (S.ALLOWED, S.EXECUTING):
            run_status_sync(run_id=run_id)
        return outcome


def steps_supersede(*, run_id: int, step_ids: list[int], owner: str | None = None) -> None:
    """After a restart the agent asked something else: the open steps left in the record
    will never be answered. Close them (their pending approvals are cancelled)."""
    with transaction.atomic():
        fence(run_id, owner)
        closed = []
        for step in Step.objects.filter(run_id=run_id, pk__in=step_ids, status__in=OPEN).order_by("seq"):
            pending = list(Approval.objects.filter(step=step, status=Approval.Status.PENDING).values_list("id", flat=True))
            Approval.objects.filter(pk__in=pending, status=Approval.Status.PENDING).update(
                status=Approval.Status.CANCELLED, decided_via=Approval.Via.SYSTEM, decided_at=clock.now()
            )
            for approval_id in pending:
                broadcast.fragment_on_commit(
                    [broadcast.INBOX_GROUP, broadcast.run_console_group(run_id)],
                    "approval_removed", approval_id=approval_id,
                )
            step_move(step.pk, S.ABORTED, decided_by="system",
                      told="Superseded: after a restart the agent asked something else instead.")
            closed.append(step.seq)
        if closed:
            activity_record(
                run_id=run_id, kind="notice", event=Event.STEPS_SUPERSEDED,
                payload={"steps": closed, "text": "After the restart the agent went another way; these open steps were closed."},
            )
            run_status_sync(run_id=run_id)
