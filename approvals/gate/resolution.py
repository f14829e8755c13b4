"""After a person (or the clock) resolved an approval: what the driver is told.

Denials follow the run policy's `on_reject`, timeouts `on_timeout`: `abort` ends the run,
`continue` hands the driver a typed refusal, `retry` asks again (a new approval, attempt
+ 1) up to `max_retries` when the driver can re-ask, and aborts otherwise.

An approved permission (of a permission step still waiting, with no newer attempt) is
handed out by one implementation, whoever asks: the UPDATE … RETURNING of
`allowed_at_once_statement`, read by `allowed_at_once_outcome`. It runs

- on the worker's own asynchronous connection when the run's doorbell rang on PostgreSQL
  (infra/pg_doorbell.py `HandOut`, wired in drivers/worker.py);
- on Django's connection, before any read, when a woken worker has no such connection
  (`gate_resolution(woken=True)` → `_allowed_at_once`);
- inside `gate_resolution`'s locked read for everything else: a run that polls (not
  woken), a woken run the statement could not settle at once, and the hook gateway's
  external runs (`owner` None: the statement without the lease's fence, as `held` is
  none for them; a run some worker holds is refused, `runs.leases.held_by_none`, so no
  caller without the lease settles a step that worker's driver waits on) → `_resolved` →
  `_permission_handed_out`.

`hand_out(step, outcome="allow", …)` (gate/handout.py) is left for what the statement does
not cover: an approved plan review (answered, never executing), an approved interrupted
side effect re-checked against the policy (`recheck_after_interruption`), and the policy's
or a grant's allow at request time (gate/request.py, through `handed_out`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from approvals import policy as core
from approvals.models import Approval, SecretAnswer
from approvals.selectors import grants_for_run
from drivers.base import GateAnswer
from infra.prepared import Prepared
from runs.events import Event, Notice
from runs.leases import held, held_by_none
from runs.models import Run, Step
from runs.timeline import activity_record

from .asking import approval_open, capability_of
from .edits import edited_input_of
from .handout import hand_out
from .lifecycle import StepMoveRefused
from .paths import floor_holds, path_context
from .resume import answer_from_record

S = Step.Status


# Read on every poll of a waiting run, in one statement (compiled once: `infra.prepared`):
# the approval with its step, whether a newer attempt at that step exists (a retry opened
# after it), and its run, locked as the fence locks it (never the run's large JSON).
_APPROVAL: Prepared[Approval] = Prepared(
    lambda approval_id: (
        Approval.objects.select_related("run", "step").defer(*(f"run__{name}" for name in Run.LARGE_FIELDS))
        .annotate(superseded=Exists(Approval.objects.filter(step_id=OuterRef("step_id"), pk__gt=OuterRef("pk"))))
        .select_for_update(of=("run",))
        .filter(pk=approval_id)
    ),
    int,
)


def gate_resolution(
    *, approval_id: int, retry_supported: bool, owner: str | None = None, woken: bool = False
) -> GateAnswer | None:
    """The driver's answer for a resolved approval; None while it is still pending.

    `woken`: the run's doorbell rang (a decision was made). A worker's approved permission
    is then handed out by one statement (`_allowed_at_once`); anything else — still
    pending, denied, a question, superseded, the lease gone — takes the path below.
    """
    if woken and owner is not None:
        allowed = _allowed_at_once(approval_id, owner)
        if allowed is not None:
            return allowed
    with transaction.atomic():
        approval = _APPROVAL.first(approval_id)
        if approval is None:
            raise Approval.DoesNotExist(f"no approval {approval_id}")
        if owner is None:
            held_by_none(approval.run)  # no owner: only a run no worker holds (the hook gateway's)
        else:
            held(approval.run, owner)  # the fence, on the run row the read locked
        if approval.status == Approval.Status.PENDING:
            return None
        step = approval.step
        assert step is not None  # every approval is opened for a step (approval_open)
        if step.status != S.WAITING or approval.superseded:  # type: ignore[attr-defined]  # annotated
            # Already handed out (or superseded by a newer attempt): answer from the record.
            return answer_from_record(step, owner=owner)
        # (The run's status needs no sync here: the resolution synced it, and a new attempt
        # that `_resolved` may open syncs it in `approval_open`; a hand-out moves no approval.)
        return _resolved(approval, step, retry_supported, owner=owner)


@functools.cache
def _allowed_at_once_sql(vendor: str, fenced: bool = True) -> str:
    """One UPDATE that is `gate_resolution` for the common case: an approved permission of
    a permission step still waiting, with no newer attempt, for the worker that holds the run (the
    fence: owner, not finished, the run row locked as `fence` locks it on PostgreSQL;
    SQLite serializes the statement with every other writer). It moves the step
    waiting → allowed → executing (`step_move`'s path, `hand_out`'s fields) and returns
    what the driver is told. Not `fenced`: a write no worker owns (the hook gateway's
    external runs, a caller with no lease), which `fence` does not check either."""
    q = connection.ops.quote_name
    run, approval, step = (q(m._meta.db_table) for m in (Run, Approval, Step))
    finished = ", ".join(["%s"] * len(Run.FINISHED))
    lock = " FOR UPDATE" if vendor == "postgresql" else ""
    holder = (f"SELECT 1 FROM {run} r WHERE r.{q('id')} = a.{q('run_id')} AND r.{q('owner')} = %s "
              f"AND r.{q('status')} NOT IN ({finished}){lock}")
    fence = f"AND EXISTS ({holder}) " if fenced else ""
    return (
        f"UPDATE {step} SET {q('status')} = %s, {q('decided_by')} = a.{q('decided_via')}, {q('started_at')} = %s "
        f"FROM {approval} a WHERE a.{q('id')} = %s AND {step}.{q('id')} = a.{q('step_id')} "
        f"AND a.{q('status')} = %s AND a.{q('kind')} = %s AND {step}.{q('kind')} = %s AND {step}.{q('status')} = %s "
        f"AND NOT EXISTS (SELECT 1 FROM {approval} n WHERE n.{q('step_id')} = a.{q('step_id')} AND n.{q('id')} > a.{q('id')}) "
        f"{fence}"
        # (SQLite's RETURNING names only the updated table: the approval's columns by subquery.)
        f"RETURNING {step}.{q('id')}, {step}.{q('decided_by')}, {step}.{q('request')}, {step}.{q('original_request')}, "
        + ", ".join(f"(SELECT {q(c)} FROM {approval} WHERE {q('id')} = %s)" for c in ("reason", "plan_mode", "scope"))
    )


def allowed_at_once_statement(approval_id: int, owner: str | None) -> tuple[str, list[Any]]:
    """The approved permission's hand-out (every path's: see the module docstring): its SQL
    and parameters, for the connection's vendor, fenced by `owner`'s lease unless `owner`
    is None (the worker's asynchronous connection runs the same statement:
    infra/pg_doorbell.py)."""
    params = [S.EXECUTING, connection.ops.adapt_datetimefield_value(timezone.now()), approval_id,
              Approval.Status.APPROVED, Approval.Kind.PERMISSION, Approval.Kind.PERMISSION, S.WAITING]
    if owner is not None:
        params += [owner, *Run.FINISHED]
    return _allowed_at_once_sql(connection.vendor, owner is not None), [*params, approval_id, approval_id, approval_id]


def allowed_at_once_outcome(approval_id: int, row: Sequence[Any] | None) -> GateAnswer | None:
    """What the driver is told from the statement's row (None: no row, not that case)."""
    if row is None:
        return None
    step_id, via, request, original, reason, plan_mode, scope = row
    updated_input = None
    if original is not None:  # a reviewer edited it: the step's request is the edited one (issue 32.3)
        if isinstance(request, (str, bytes)):  # (SQLite gives the JSON's text; psycopg the value)
            request = json.loads(request)
        updated_input = dict(request.get("input") or {})
    return GateAnswer(step_id=step_id, outcome="allow", reason=reason, decided_by=via, approval_id=approval_id,
                    plan_mode=plan_mode, scope=scope, updated_input=updated_input)


def _allowed_at_once(approval_id: int, owner: str | None) -> GateAnswer | None:
    """The hand-out of an approved permission in one statement, or None (not that case:
    the caller reads the approval and decides, as for every other resolution)."""
    # (Tested beside the general path, and against `handed_out` and the lifecycle table:
    # tests/approvals/gate/test_resolution.py.)
    sql, params = allowed_at_once_statement(approval_id, owner)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return allowed_at_once_outcome(approval_id, row)


def _told_answers(approval: Approval, step: Step) -> dict[str, Any]:
    """The answers the agent gets: the record, with each secret answer (taken from its drop
    box, which is emptied here, in the hand-out's transaction) and each unanswered question
    said in words."""
    secret = SecretAnswer.objects.filter(approval_id=approval.pk).first()
    answers = {**(approval.answers or {}), **(secret.answers if secret is not None else {})}
    if secret is not None:
        secret.delete()
    return core.answers_for_agent(step.presentation.get("questions") or [], answers)


def _permission_handed_out(approval: Approval, step: Step, owner: str | None) -> GateAnswer:
    """An approved permission handed out by the one statement, in the caller's transaction
    (which read the approval and its step and locked the run): the same statement every
    other path runs. It always matches here; if it did not (the step moved meanwhile), it
    is refused as `step_move` refuses a compare-and-set that changed nothing."""
    outcome = _allowed_at_once(approval.pk, owner)
    if outcome is None:
        found = Step.objects.filter(pk=step.pk).values_list("status", flat=True).first()
        raise StepMoveRefused(step.pk, S.ALLOWED, found)
    return outcome


def _resolved(approval: Approval, step: Step, retry_supported: bool, *, owner: str | None = None) -> GateAnswer:
    run = approval.run
    via = approval.decided_via
    if approval.status == Approval.Status.APPROVED and approval.kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT:
        return recheck_after_interruption(approval=approval)
    if (approval.status == Approval.Status.APPROVED and approval.kind == Approval.Kind.PERMISSION
            and step.kind == Approval.Kind.PERMISSION):
        return _permission_handed_out(approval, step, owner)  # the one hand-out (module docstring)
    if approval.status in (Approval.Status.APPROVED, Approval.Status.ANSWERED):
        if approval.kind == Approval.Kind.QUESTION:
            if approval.answers is None:
                return hand_out(step, outcome="deny", reason="No human answer: the reviewer declined the question.",
                                decided_by=via, approval_id=approval.pk)
            return hand_out(step, outcome="answer", answers=approval.answers, decided_by=via, approval_id=approval.pk,
                            told_answers=_told_answers(approval, step))
        return hand_out(step, outcome="allow", reason=approval.reason, decided_by=via, approval_id=approval.pk,
                        plan_mode=approval.plan_mode, scope=approval.scope, updated_input=edited_input_of(step))
    if approval.status == Approval.Status.CANCELLED:
        return hand_out(step, outcome="abort", reason="cancelled", decided_by="system", approval_id=approval.pk)
    timed_out = approval.status == Approval.Status.EXPIRED
    approvals_policy = run.run_policy.get("approvals", {})
    fallback = str(approvals_policy.get("on_timeout" if timed_out else "on_reject", "abort"))
    failure = "approval_timeout" if timed_out else "approval_denied"
    timeout = approvals_policy.get("timeout_s")
    refusal = (
        f"No reviewer answered within {timeout:g} s." if timed_out and timeout is not None
        else approval.reason or "Denied by the reviewer."
    )
    if fallback == "retry":
        max_retries = int(approvals_policy.get("max_retries", 3))
        if not retry_supported:
            unsupported: Notice = {"warning": "human_decision_retry_unsupported", "driver": run.driver}
            activity_record(
                run_id=run.pk, kind="notice", event=Event.NOTICE, payload=unsupported,
            )
            fallback = "abort"
        elif approval.attempt <= max_retries:
            renewed = approval_open(
                run=run, step=step, kind=approval.kind, subtype=approval.subtype, request=approval.request,
                presentation=approval.presentation, attempt=approval.attempt + 1,
            )
            return GateAnswer(step_id=step.pk, outcome="wait", approval_id=renewed.pk)
        else:
            fallback = "abort"
    if fallback == "continue":
        return hand_out(step, outcome="deny", reason=refusal, decided_by=via, approval_id=approval.pk, timed_out=timed_out)
    return hand_out(step, outcome="abort", reason=failure, decided_by=via, approval_id=approval.pk, timed_out=timed_out)


def recheck_after_interruption(*, approval: Approval) -> GateAnswer:
    """An approved interrupted side effect runs again only if the policy still allows it, or
    still asks for exactly the request a person already approved (same hash); anything
    else pauses the run on a new approval, or refuses it."""
    run, step = approval.run, approval.step
    assert step is not None  # every approval is opened for a step (approval_open)
    grants = list(grants_for_run(run))
    paths = path_context(run)
    verdict = core.evaluate(
        core.compile_policy(run.policy_document), step.request, run_view=core.RunView(floor=floor_holds(run)),
        grants=[g.rule for g in grants],
        paths=paths,
    )
    if verdict.decision == "allow":
        return hand_out(step, outcome="allow", decided_by="grant" if verdict.grant else "policy", approval_id=approval.pk,
                        updated_input=edited_input_of(step))
    if verdict.decision == "ask":
        for earlier in Approval.objects.filter(step=step, kind=Approval.Kind.PERMISSION, status=Approval.Status.APPROVED):
            fresh = core.approval_hash(
                kind=earlier.kind,
                capability=capability_of(run, step.seq, step.request, step.subtype, earlier.attempt, earlier.kind),
                presentation=step.presentation,
                request=step.request,
            )
            if fresh == earlier.hash:
                return hand_out(step, outcome="allow", decided_by="person", approval_id=approval.pk,
                                updated_input=edited_input_of(step))
        renewed = approval_open(
            run=run, step=step, kind=Approval.Kind.PERMISSION, subtype=step.subtype, request=step.request,
            presentation=step.presentation, attempt=approval.attempt + 1, verdict=verdict,
        )
        return GateAnswer(step_id=step.pk, outcome="wait", approval_id=renewed.pk)
    if verdict.decision == "deny":
        return hand_out(step, outcome="deny", reason=verdict.reason, decided_by="policy", approval_id=approval.pk)
    return hand_out(step, outcome="abort", reason="policy_abort", decided_by="policy", approval_id=approval.pk)
