"""The gate and human decisions: every tool request is recorded and decided here.

`gate_request` records a step with the policy's verdict (and an approval when a person
must decide) in one transaction. `approval_decide` / `approval_answer` resolve an approval
exactly once by compare-and-set. `gate_resolution` turns a resolved approval into what
the driver is told, applying the run policy's fallbacks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Q

from approvals import policy as core
from approvals.models import Approval, Grant
from approvals.selectors import grants_active
from project import broadcast, clock
from runs import fragments
from runs.models import Run, Step
from runs.services import activity_record, run_mark_running, run_mark_waiting

logger = logging.getLogger(__name__)

# The verbs each kind accepts: an answer is never a decision and a decision never an answer.
VERBS_BY_KIND: dict[str, set[str]] = {
    Approval.Kind.PERMISSION: {"approve", "deny"},
    Approval.Kind.PLAN_REVIEW: {"approve", "deny"},
    Approval.Kind.INTERRUPTED_SIDE_EFFECT: {"approve", "deny"},
    Approval.Kind.QUESTION: {"answer"},
}
ACTIVITY_KIND: dict[str, str] = {Approval.Kind.QUESTION: "user-input"}


class ApprovalError(Exception):
    """A refused decision. `code` is stable; `status` is the HTTP status the API answers."""

    STATUS = {
        "already_resolved": 409,
        "stale": 409,
        "expired": 410,
        "kind_mismatch": 400,
        "invalid_decision": 400,
        "unavailable": 404,
    }

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = self.STATUS.get(code, 400)


@dataclass(frozen=True)
class GateOutcome:
    """What the worker does next for one request: answer the driver, or wait on an approval."""

    step_id: int
    outcome: str  # allow | deny | abort | answer | wait
    reason: str = ""
    decided_by: str = "policy"
    approval_id: int | None = None
    answers: Mapping[str, Any] | None = None
    plan_mode: str = ""
    scope: str = "once"
    timed_out: bool = False


def _activity_kind(kind: str) -> str:
    return ACTIVITY_KIND.get(kind, "approval")


def _run_view(run_id: int) -> core.RunView:
    counts = Step.objects.filter(run_id=run_id).aggregate(
        calls=Count("id"), denials=Count("id", filter=Q(status=Step.Status.DENIED))
    )
    return core.RunView(tool_calls=counts["calls"] or 0, denials=counts["denials"] or 0)


def _deadline(run: Run) -> Any:
    timeout = run.run_policy.get("approvals", {}).get("timeout_s")
    if timeout is None:
        return None
    return clock.now() + timedelta(seconds=float(timeout))


def _routing(run: Run, kind: str) -> str:
    approvals = run.run_policy.get("approvals", {})
    if kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT:
        return "ask"
    routing = str(approvals.get(kind, "ask"))
    if kind == Approval.Kind.QUESTION and routing != "ask":
        return "auto-deny"  # there is no answer to invent: a question is asked or declined
    return routing


def _capability(run: Run, step_seq: int, request: Mapping[str, Any], subtype: str, attempt: int) -> dict[str, Any]:
    # The run, step and attempt make a retried or repeated request a different approval,
    # so a decision made for an earlier one is refused as stale.
    return {
        "tool": request.get("tool"),
        "subtype": subtype,
        "run": run.pk,
        "step": step_seq,
        "attempt": attempt,
    }


def _approval_create(
    *,
    run: Run,
    step: Step,
    kind: str,
    subtype: str,
    request: Mapping[str, Any],
    presentation: Mapping[str, Any],
    attempt: int = 1,
    verdict: core.Verdict | None = None,
) -> Approval:
    capability = _capability(run, step.seq, request, subtype, attempt)
    if kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT:
        capability = {"tool": request.get("tool"), "args": request.get("input"), "run": run.pk, "step": step.seq, "attempt": attempt}
    suggestion = core.suggest_grant(request, verdict) if kind == Approval.Kind.PERMISSION else None
    approval = Approval.objects.create(
        run=run,
        step=step,
        kind=kind,
        subtype=subtype,
        capability=capability,
        presentation=dict(presentation),
        request=dict(request),
        hash=core.approval_hash(kind=kind, capability=capability, presentation=presentation, request=request),
        suggested_grant=suggestion[0] if suggestion else None,
        suggested_grant_label=suggestion[1] if suggestion else "",
        deadline=_deadline(run),
        attempt=attempt,
    )
    event = "user-input.requested" if kind == Approval.Kind.QUESTION else "approval.requested"
    activity_record(
        run_id=run.pk,
        kind=_activity_kind(kind),
        event=event,
        payload={
            "approval": approval.pk,
            "step": step.seq,
            "kind": kind,
            "subtype": subtype,
            "attempt": attempt,
            "deadline": approval.deadline.isoformat() if approval.deadline else None,
        },
    )
    run_mark_waiting(run_id=run.pk)
    approval_id = approval.pk
    broadcast.fragment_on_commit(
        [broadcast.INBOX_GROUP, broadcast.run_console_group(run.pk)], lambda: fragments.approval_added(approval_id)
    )
    return approval


def gate_request(
    *,
    run_id: int,
    tool: str,
    input: Mapping[str, Any],
    cwd: str,
    kind: str = "permission",
    subtype: str = "tool",
    presentation: Mapping[str, Any] | None = None,
    runtime_mode: str = "",
) -> GateOutcome:
    """Record one tool request and decide it, in one transaction.

    1. Validate the canonical request at the boundary (a bad one is denied, not stored half).
    2. Evaluate the run's rule policy with the session's grants and the run so far.
    3. Let the session's runtime mode approve an `ask` it covers.
    4. Route what is still `ask` per the run policy: a pending approval, or auto-approve /
       auto-deny recorded as decided by the policy.
    """
    presentation = dict(presentation or {})
    with transaction.atomic():
        run = Run.objects.select_related("session").get(pk=run_id)
        try:
            request = core.validate_request({"tool": tool, "input": dict(input), "cwd": cwd})
        except core.PolicyError as exc:
            request = {"tool": str(tool)[:128], "input": {}, "cwd": cwd}
            verdict = core.Verdict(decision="deny", reason=f"Malformed request: {exc.message}", rule="request")
        else:
            if kind == "permission":
                grants = list(grants_active(session_id=run.session_id))
                verdict = core.evaluate(
                    core.compile_policy(run.policy_document),
                    request,
                    run_view=_run_view(run_id),
                    grants=[g.rule for g in grants],
                )
            else:
                verdict = core.Verdict(decision="ask", reason=f"A {kind.replace('_', ' ')} needs a person.", rule=f"approvals.{kind}")
        decision, decided_by = verdict.decision, "policy"
        grant_row = None
        if verdict.grant is not None:
            decided_by = "grant"
            grant_row = next((g for g in grants if g.rule == verdict.grant), None)
        if decision == "ask" and kind == "permission":
            decision, decided_by = core.apply_runtime_mode(
                verdict, mode=runtime_mode or run.session.runtime_mode, request=request, workspace=run.workspace
            )
        routing = _routing(run, kind) if decision == "ask" else ""
        if routing == "auto-approve":
            decision, decided_by = "allow", "policy"
        elif routing == "auto-deny":
            decision, decided_by = "deny", "policy"
        status = {
            "allow": Step.Status.ALLOWED,
            "deny": Step.Status.DENIED,
            "abort": Step.Status.ABORTED,
            "ask": Step.Status.WAITING,
        }[decision]
        seq = (Step.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True).first() or 0) + 1
        step = Step.objects.create(
            run=run,
            seq=seq,
            tool=request["tool"],
            kind=kind,
            subtype=subtype,
            request=request,
            presentation=presentation,
            verdict=verdict.decision,
            rule=verdict.rule,
            reason=verdict.reason,
            segments=[s.to_dict() for s in verdict.segments],
            side_effect_class=verdict.side_effect_class or "",
            policy_version=run.policy_version,
            grant=grant_row,
            status=status,
            decided_by="" if decision == "ask" else decided_by,
        )
        activity_record(
            run_id=run_id,
            kind="tool",
            event="tool.requested",
            payload={
                "step": seq,
                "tool": request["tool"],
                "kind": kind,
                "input": request["input"],
                "verdict": verdict.decision,
                "decision": decision,
                "decided_by": decided_by if decision != "ask" else "",
                "rule": verdict.rule,
                "reason": verdict.reason,
                "grant": grant_row.pk if grant_row else None,
            },
        )
        if decision == "ask":
            approval = _approval_create(
                run=run, step=step, kind=kind, subtype=subtype, request=request, presentation=presentation,
                verdict=verdict,
            )
            return GateOutcome(step_id=step.pk, outcome="wait", approval_id=approval.pk)
        reason = verdict.reason
        if kind == "question" and decision == "deny":
            reason = "No human answer: questions are declined by the run policy."
        if decision == "abort":
            reason = "policy_abort"  # the sentence is on the step; the run fails with the code
        return GateOutcome(step_id=step.pk, outcome=decision, reason=reason, decided_by=decided_by)


# --- Deciding ------------------------------------------------------------------------------


def _refuse_unless_pending(approval: Approval) -> None:
    if approval.status == Approval.Status.PENDING:
        return
    if approval.status == Approval.Status.EXPIRED:
        raise ApprovalError("expired", "This request expired before a decision was made.")
    if approval.status == Approval.Status.CANCELLED:
        raise ApprovalError("unavailable", "This request is no longer waiting: its run ended or moved on.")
    raise ApprovalError("already_resolved", f"This request was already decided ({approval.status}).")


def _load_for_decision(approval_id: int, verb: str, hash: str) -> Approval:
    approval = Approval.objects.filter(pk=approval_id).first()
    if approval is None:
        raise ApprovalError("unavailable", f"No approval {approval_id}.")
    if verb not in VERBS_BY_KIND.get(approval.kind, set()):
        allowed = " or ".join(sorted(VERBS_BY_KIND.get(approval.kind, set())))
        raise ApprovalError("kind_mismatch", f"A {approval.get_kind_display().lower()} takes {allowed}, not {verb}.")
    _refuse_unless_pending(approval)
    if hash and hash != approval.hash:
        raise ApprovalError("stale", "The request changed since it was shown; reload and decide again.")
    if approval.deadline is not None and approval.deadline <= clock.now():
        # The deadline passed between the caller's expiry check and now; the worker
        # records the expiry (this transaction is about to roll back).
        raise ApprovalError("expired", "This request expired before a decision was made.")
    return approval


def _resolve(approval: Approval, *, status: str, user: Any, via: str, **fields: Any) -> None:
    """Compare-and-set pending → status; the loser learns what happened instead."""
    changed = Approval.objects.filter(pk=approval.pk, status=Approval.Status.PENDING).update(
        status=status, decided_by=user if getattr(user, "pk", None) else None, decided_via=via, decided_at=clock.now(), **fields
    )
    if changed != 1:
        approval.refresh_from_db()
        _refuse_unless_pending(approval)
        raise ApprovalError("already_resolved", "This request was already decided.")


def _after_resolution(approval: Approval, *, event_payload: Mapping[str, Any]) -> None:
    event = "user-input.resolved" if approval.kind == Approval.Kind.QUESTION else "approval.resolved"
    activity_record(run_id=approval.run_id, kind=_activity_kind(approval.kind), event=event, payload=event_payload)
    approval_id, run_id = approval.pk, approval.run_id
    broadcast.send_on_commit(broadcast.run_group(run_id), {"type": "approval.resolved", "approval_id": approval_id})
    broadcast.fragment_on_commit(
        [broadcast.INBOX_GROUP, broadcast.run_console_group(run_id)], lambda: fragments.approval_removed(approval_id)
    )


def approval_decide(
    *,
    approval_id: int,
    user: Any,
    approve: bool,
    reason: str = "",
    hash: str = "",
    scope: str = "once",
    mode: str = "",
    via: str = "api",
) -> Approval:
    """Approve or deny once. `scope="session"` also stores the suggested grant."""
    verb = "approve" if approve else "deny"
    approval_expire(approval_id=approval_id)  # a late decision finds the request expired, recorded
    if scope not in ("once", "session"):
        raise ApprovalError("invalid_decision", f"scope must be 'once' or 'session', not {scope!r}")
    if mode not in ("", "default", "accept-edits"):
        raise ApprovalError("invalid_decision", f"mode must be 'default' or 'accept-edits', not {mode!r}")
    with transaction.atomic():
        approval = _load_for_decision(approval_id, verb, hash)
        if scope == "session" and (not approve or not approval.suggested_grant):
            raise ApprovalError("invalid_decision", "This request cannot be allowed for the whole session.")
        if mode and approval.kind != Approval.Kind.PLAN_REVIEW:
            raise ApprovalError("invalid_decision", "mode applies to plan reviews only.")
        status = Approval.Status.APPROVED if approve else Approval.Status.DENIED
        _resolve(approval, status=status, user=user, via=via, reason=reason, scope=scope, plan_mode=mode)
        grant = None
        if scope == "session":
            assert approval.suggested_grant is not None  # refused above when there is none
            grant = grant_create(
                session_id=approval.run.session_id,
                rule=approval.suggested_grant,
                label=approval.suggested_grant_label,
                user=user,
                approval=approval,
            )
        approval.refresh_from_db()
        _after_resolution(
            approval,
            event_payload={
                "approval": approval.pk,
                "decision": status,
                "reason": reason,
                "scope": scope,
                "mode": mode,
                "by": getattr(user, "username", "") or "",
                "via": via,
                "grant": grant.pk if grant else None,
            },
        )
    return approval


def approval_answer(
    *, approval_id: int, user: Any, answers: Mapping[str, Any] | None, hash: str = "", decline: bool = False, via: str = "api"
) -> Approval:
    """Answer a question (or decline it: the agent then gets a typed "no human answer")."""
    if decline and answers:
        raise ApprovalError("invalid_decision", "Decline the questions or answer them, not both.")
    approval_expire(approval_id=approval_id)
    with transaction.atomic():
        approval = _load_for_decision(approval_id, "answer", hash)
        questions = approval.presentation.get("questions", [])
        if decline:
            record = None
        else:
            try:
                record = core.answers_of(questions, answers or {})
            except core.PolicyError as exc:
                raise ApprovalError("invalid_decision", exc.message) from None
            if not core.is_complete(questions, record):
                missing = [str(q.get("header") or q.get("id")) for q in questions if not core.is_complete([q], record)]
                raise ApprovalError("invalid_decision", f"Every question needs an answer; unanswered: {', '.join(missing)}.")
        _resolve(approval, status=Approval.Status.ANSWERED, user=user, via=via, answers=record)
        approval.refresh_from_db()
        _after_resolution(
            approval,
            event_payload={
                "approval": approval.pk,
                "decision": "answered" if record is not None else "declined",
                "answers": record,
                "summary": core.describe_answers(questions, record),
                "by": getattr(user, "username", "") or "",
                "via": via,
            },
        )
    return approval


def approval_expire(*, approval_id: int) -> bool:
    """Mark a pending approval whose deadline passed as expired (once)."""
    with transaction.atomic():
        changed = Approval.objects.filter(
            pk=approval_id, status=Approval.Status.PENDING, deadline__lte=clock.now()
        ).update(status=Approval.Status.EXPIRED, decided_via=Approval.Via.TIMEOUT, decided_at=clock.now())
        if changed:
            approval = Approval.objects.get(pk=approval_id)
            _after_resolution(approval, event_payload={"approval": approval_id, "decision": "expired", "via": "timeout"})
    return bool(changed)


def approvals_detach_for_run(*, run_id: int, cancelled: bool = False) -> None:
    """A finished run's pending approvals can no longer be decided: a cancelled run's
    expire (a late reviewer hears "expired"), any other's are detached ("unavailable")."""
    ids = list(Approval.objects.filter(run_id=run_id, status=Approval.Status.PENDING).values_list("id", flat=True))
    if not ids:
        return
    status = Approval.Status.EXPIRED if cancelled else Approval.Status.CANCELLED
    Approval.objects.filter(pk__in=ids, status=Approval.Status.PENDING).update(
        status=status, decided_via=Approval.Via.SYSTEM, decided_at=clock.now()
    )
    for approval_id in ids:
        broadcast.fragment_on_commit(
            [broadcast.INBOX_GROUP, broadcast.run_console_group(run_id)],
            lambda approval_id=approval_id: fragments.approval_removed(approval_id),
        )


# --- After a resolution: what the driver is told -------------------------------------------------


def _fallback(run: Run, approval: Approval, which: str) -> str:
    return str(run.run_policy.get("approvals", {}).get(which, "abort"))


def gate_resolution(*, approval_id: int, retry_supported: bool) -> GateOutcome | None:
    """Turn a resolved approval into the driver's answer; None while it is pending.

    Denials follow `on_reject`, timeouts `on_timeout`: abort ends the run, continue hands
    the driver a typed refusal, retry asks again (new approval, attempt + 1) up to
    `max_retries` when the driver can re-ask, and aborts otherwise.
    """
    with transaction.atomic():
        approval = Approval.objects.select_related("run", "step").get(pk=approval_id)
        run, step = approval.run, approval.step
        if approval.status == Approval.Status.PENDING:
            return None
        assert step is not None  # every approval is created for a step (_approval_create)
        if approval.status == Approval.Status.APPROVED and approval.kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT:
            outcome = recheck_after_interruption(approval=approval)
            if outcome.outcome == "allow":
                Step.objects.filter(pk=step.pk).update(status=Step.Status.ALLOWED, decided_by=outcome.decided_by)
                run_mark_running(run_id=run.pk)
            return outcome
        if approval.status in (Approval.Status.APPROVED, Approval.Status.ANSWERED):
            Step.objects.filter(pk=step.pk).update(status=Step.Status.ALLOWED, decided_by=approval.decided_via)
            run_mark_running(run_id=run.pk)
            if approval.kind == Approval.Kind.QUESTION:
                if approval.answers is None:
                    return GateOutcome(
                        step_id=step.pk, outcome="deny", reason="No human answer: the reviewer declined the question.",
                        decided_by=approval.decided_via, approval_id=approval.pk,
                    )
                return GateOutcome(
                    step_id=step.pk, outcome="answer", answers=approval.answers, decided_by=approval.decided_via,
                    approval_id=approval.pk,
                )
            return GateOutcome(
                step_id=step.pk, outcome="allow", reason=approval.reason, decided_by=approval.decided_via,
                approval_id=approval.pk, plan_mode=approval.plan_mode, scope=approval.scope,
            )
        if approval.status == Approval.Status.CANCELLED:
            Step.objects.filter(pk=step.pk).update(status=Step.Status.ABORTED, decided_by="system")
            return GateOutcome(step_id=step.pk, outcome="abort", reason="cancelled", decided_by="system", approval_id=approval.pk)
        timed_out = approval.status == Approval.Status.EXPIRED
        fallback = _fallback(run, approval, "on_timeout" if timed_out else "on_reject")
        failure = "approval_timeout" if timed_out else "approval_denied"
        timeout = run.run_policy.get("approvals", {}).get("timeout_s")
        refusal = (
            f"No reviewer answered within {timeout:g} s." if timed_out and timeout is not None else approval.reason or "Denied by the reviewer."
        )
        if fallback == "retry":
            max_retries = int(run.run_policy.get("approvals", {}).get("max_retries", 3))
            if not retry_supported:
                activity_record(
                    run_id=run.pk, kind="notice", event="notice",
                    payload={"warning": "human_decision_retry_unsupported", "driver": run.driver},
                )
                fallback = "abort"
            elif approval.attempt <= max_retries:
                renewed = _approval_create(
                    run=run, step=step, kind=approval.kind, subtype=approval.subtype, request=approval.request,
                    presentation=approval.presentation, attempt=approval.attempt + 1,
                )
                return GateOutcome(step_id=step.pk, outcome="wait", approval_id=renewed.pk)
            else:
                fallback = "abort"
        if fallback == "continue":
            Step.objects.filter(pk=step.pk).update(status=Step.Status.DENIED, decided_by=approval.decided_via)
            run_mark_running(run_id=run.pk)
            return GateOutcome(
                step_id=step.pk, outcome="deny", reason=refusal, decided_by=approval.decided_via,
                approval_id=approval.pk, timed_out=timed_out,
            )
        Step.objects.filter(pk=step.pk).update(status=Step.Status.ABORTED, decided_by=approval.decided_via)
        return GateOutcome(
            step_id=step.pk, outcome="abort", reason=failure, decided_by=approval.decided_via,
            approval_id=approval.pk, timed_out=timed_out,
        )


# --- Grants --------------------------------------------------------------------------------


def grant_create(
    *, session_id: int, rule: Mapping[str, Any], label: str = "", user: Any = None, approval: Approval | None = None
) -> Grant:
    rule = core.validate_grant(rule)
    with transaction.atomic():
        grant = Grant.objects.create(
            session_id=session_id, rule=rule, label=label, created_by=user if getattr(user, "pk", None) else None,
            approval=approval,
        )
        for run_id in Run.objects.filter(session_id=session_id).exclude(status__in=Run.FINISHED).values_list("id", flat=True):
            activity_record(
                run_id=run_id, kind="notice", event="grant.created",
                payload={"grant": grant.pk, "rule": rule, "label": label, "by": getattr(user, "username", "") or ""},
            )
    return grant


def grant_revoke(*, grant: Grant, user: Any = None) -> Grant:
    with transaction.atomic():
        changed = Grant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(revoked_at=clock.now())
        if changed:
            for run_id in Run.objects.filter(session_id=grant.session_id).exclude(status__in=Run.FINISHED).values_list("id", flat=True):
                activity_record(
                    run_id=run_id, kind="notice", event="grant.revoked",
                    payload={"grant": grant.pk, "by": getattr(user, "username", "") or ""},
                )
    grant.refresh_from_db()
    return grant


# --- Resume after a crash --------------------------------------------------------------------


def interrupted_side_effect_request(*, run_id: int, step_id: int) -> GateOutcome:
    """A step was allowed but never reported finished: ask a person before running it again."""
    with transaction.atomic():
        step = Step.objects.select_related("run").get(pk=step_id, run_id=run_id)
        pending = Approval.objects.filter(step=step, status=Approval.Status.PENDING).order_by("-id").first()
        if pending is None:
            presentation = {
                **step.presentation,
                "title": f"Interrupted: {step.presentation.get('title') or step.tool}",
                "note": "The worker stopped while this may have been running. Run it again?",
            }
            pending = _approval_create(
                run=step.run, step=step, kind=Approval.Kind.INTERRUPTED_SIDE_EFFECT, subtype=step.subtype,
                request=step.request, presentation=presentation,
            )
        return GateOutcome(step_id=step.pk, outcome="wait", approval_id=pending.pk)


def recheck_after_interruption(*, approval: Approval) -> GateOutcome:
    """An approved interrupted side effect runs again only if the policy still allows it, or
    still asks for exactly the request a person already approved (same hash); anything
    else pauses the run on a new approval."""
    run, step = approval.run, approval.step
    assert step is not None  # every approval is created for a step (_approval_create)
    grants = list(grants_active(session_id=run.session_id))
    verdict = core.evaluate(
        core.compile_policy(run.policy_document), step.request, run_view=core.RunView(), grants=[g.rule for g in grants]
    )
    if verdict.decision == "allow":
        return GateOutcome(step_id=step.pk, outcome="allow", decided_by="grant" if verdict.grant else "policy", approval_id=approval.pk)
    if verdict.decision == "ask":
        for earlier in Approval.objects.filter(step=step, kind=Approval.Kind.PERMISSION, status=Approval.Status.APPROVED):
            fresh = core.approval_hash(
                kind=earlier.kind,
                capability=_capability(run, step.seq, step.request, step.subtype, earlier.attempt),
                presentation=step.presentation,
                request=step.request,
            )
            if fresh == earlier.hash:
                return GateOutcome(step_id=step.pk, outcome="allow", decided_by="person", approval_id=approval.pk)
        renewed = _approval_create(
            run=run, step=step, kind=Approval.Kind.PERMISSION, subtype=step.subtype, request=step.request,
            presentation=step.presentation, attempt=approval.attempt + 1,
        )
        return GateOutcome(step_id=step.pk, outcome="wait", approval_id=renewed.pk)
    Step.objects.filter(pk=step.pk).update(status=Step.Status.DENIED if verdict.decision == "deny" else Step.Status.ABORTED)
    return GateOutcome(
        step_id=step.pk, outcome="deny" if verdict.decision == "deny" else "abort",
        reason=verdict.reason if verdict.decision == "deny" else "policy_abort", approval_id=approval.pk,
    )


# --- Policies ----------------------------------------------------------------------------------


def policy_save(*, policy: Any) -> Any:
    """Validate a policy's documents and store it with its content version."""
    from approvals.models import Policy

    compiled = core.compile_policy(policy.document or {})
    if policy.run_policy is not None:
        core.parse_run_policy(policy.run_policy)
    policy.version = compiled.version
    with transaction.atomic():
        if policy.is_default:
            Policy.objects.exclude(pk=policy.pk).filter(is_default=True).update(is_default=False)
        policy.save()
    return policy
