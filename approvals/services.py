"""Human decisions, grants and policies: the writes people make.

`approval_decide` / `approval_answer` resolve an approval exactly once by compare-and-set;
the run's worker then applies it (`approvals.gate.gate_resolution`). The gate itself —
recording and deciding each tool request, the step lifecycle, resume — is `approvals.gate`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from approvals import policy as core
from approvals.errors import ApprovalError
from approvals.gate.asking import activity_kind
from approvals.gate.edits import edit_checked, step_edit
from approvals.gate.lifecycle import OPEN, step_move
from approvals.gate.paths import path_context
from approvals.gate.status import run_status_sync
from approvals.models import Approval, Grant, SecretAnswer, Signoff
from approvals.policy_versions import policy_save  # the policies' writes live there; re-exported
from infra import broadcast, clock, pg_doorbell
from infra.prepared import Prepared
from runs.events import ApprovalResolved, Event, GrantCreated, GrantRevoked
from runs.leases import fence
from runs.models import Run, Step
from runs.timeline import activity_record, run_wake_on_commit

logger = logging.getLogger(__name__)

__all__ = ["ApprovalError", "BatchOutcome", "approval_answer", "approval_decide",
           "approval_decide_each", "approval_expire", "approval_give_up", "grant_create", "grant_revoke",
           "grant_settle_pending", "policy_save"]

# The verbs each kind accepts: an answer is never a decision and a decision never an answer.
VERBS_BY_KIND: dict[str, set[str]] = {
    Approval.Kind.PERMISSION: {"approve", "deny"},
    Approval.Kind.PLAN_REVIEW: {"approve", "deny"},
    Approval.Kind.INTERRUPTED_SIDE_EFFECT: {"approve", "deny"},
    Approval.Kind.QUESTION: {"answer"},
    Approval.Kind.DELIVERY: {"approve", "deny"},
}


# --- Deciding ------------------------------------------------------------------------------


def _refuse_unless_pending(approval: Approval) -> None:
    if approval.status == Approval.Status.PENDING:
        return
    if approval.status == Approval.Status.EXPIRED:
        raise ApprovalError("expired", "This request expired before a decision was made.")
    if approval.status == Approval.Status.CANCELLED:
        raise ApprovalError("unavailable", "This request is no longer waiting: its run ended or moved on.")
    raise ApprovalError("already_resolved", f"This request was already decided ({approval.status}).")


# A decision's reads, compiled once (`infra.prepared`).
# The run row found through its approval, locked (FOR UPDATE OF the run): one statement.
_RUN_OF: Prepared[int] = Prepared(
    lambda approval_id: Run.objects.select_for_update(of=("self",)).filter(approvals__id=approval_id).values_list("id", flat=True),
    int,
)
_RUN_UNREAD = (*Run.LARGE_FIELDS, "policy_document")
# The approval with what a decision reads of its run and step (never the run's large JSON),
# its run row locked first (FOR UPDATE OF the run, as `_lock_run_of`), in one statement.
_FOR_DECISION: Prepared[Approval] = Prepared(
    lambda approval_id: (
        Approval.objects.select_related("run", "step").defer(*(f"run__{name}" for name in _RUN_UNREAD))
        .select_for_update(of=("run",)).filter(pk=approval_id)
    ),
    int,
)
_STATUS_AND_DEADLINE: Prepared[tuple[str, Any]] = Prepared(
    lambda approval_id: Approval.objects.filter(pk=approval_id).values_list("status", "deadline"), int
)


def _lock_run_of(approval_id: int) -> None:
    """Lock the approval's run row before the approval's own: every writer takes the run
    first (the worker's fence does), so a decision racing the worker's expiry queues
    instead of deadlocking (PostgreSQL)."""
    _RUN_OF.all(approval_id)


@contextmanager
def _deciding(approval_id: int) -> Iterator[None]:
    """A decision's transaction. One that finds the deadline passed rolls back and records
    the expiry (its own transaction), so a late reviewer's "expired" is on the record; the
    common case costs no expiry check before the transaction."""
    try:
        with transaction.atomic():
            yield
    except ApprovalError as exc:
        if exc.code == "expired":
            approval_expire(approval_id=approval_id)
        raise


def _load_for_decision(approval_id: int, verb: str, hash: str) -> Approval:
    # (The approval's own columns are as of the statement's start: a decision that raced
    # this one and won while it waited for the run's lock is caught by `_resolve`'s
    # compare-and-set.)
    approval = _FOR_DECISION.first(approval_id)
    if approval is None:
        raise ApprovalError("unavailable", f"No approval {approval_id}.")
    if verb not in VERBS_BY_KIND.get(approval.kind, set()):
        allowed = " or ".join(sorted(VERBS_BY_KIND.get(approval.kind, set())))
        raise ApprovalError("kind_mismatch", f"A {approval.get_kind_display().lower()} takes {allowed}, not {verb}.")
    _refuse_unless_pending(approval)
    if approval.deadline is not None and approval.deadline <= clock.now():
        # The deadline passed: this transaction rolls back and `_deciding` records the expiry.
        raise ApprovalError("expired", "This request expired before a decision was made.")
    if hash and hash != approval.hash:
        raise ApprovalError("stale", "The request changed since it was shown; reload and decide again.")
    return approval


def _resolve(approval: Approval, *, status: str, user: Any, via: str, **fields: Any) -> None:
    """Compare-and-set pending → status; the loser learns what happened instead."""
    values = {"status": status, "decided_by": user if getattr(user, "pk", None) else None, "decided_via": via,
              "decided_at": clock.now(), **fields}
    changed = Approval.objects.filter(pk=approval.pk, status=Approval.Status.PENDING).update(**values)
    if changed != 1:
        approval.refresh_from_db()
        _refuse_unless_pending(approval)
        raise ApprovalError("already_resolved", "This request was already decided.")
    for name, value in values.items():  # the row as written, without reading it back
        setattr(approval, name, value)


def _after_resolution(approval: Approval, *, event_payload: ApprovalResolved, asleep: bool | None = None) -> None:
    """The resolution's activity, the run's status, and the doorbells after commit. `asleep`:
    whether the run is hibernated, when the caller read it with the approval."""
    approval_id, run_id = approval.pk, approval.run_id
    # The run's doorbells first: after commit the messages go out in the order they were
    # registered, and the agent waiting on this decision should not wait behind the console's.
    # On PostgreSQL the database has rung already, at commit (infra/pg_doorbell.py): the
    # layer's doorbell is the second way in there, not waited for.
    broadcast.send_on_commit(broadcast.run_group(run_id), {"type": "approval.resolved", "approval_id": approval_id},
                             urgent=not pg_doorbell.enabled())
    run_wake_on_commit(run_id=run_id, asleep=asleep)
    event = Event.USER_INPUT_RESOLVED if approval.kind == Approval.Kind.QUESTION else Event.APPROVAL_RESOLVED
    activity_record(run_id=run_id, kind=activity_kind(approval.kind), event=event, payload=event_payload)
    run_status_sync(run_id=run_id)
    broadcast.fragment_on_commit(
        [broadcast.INBOX_GROUP, broadcast.run_console_group(run_id)], "approval_removed", approval_id=approval_id
    )


def approval_own_run(*, run: Run, user: Any) -> bool:
    """Four eyes (GATEHOUSE_REVIEW_OWN_RUNS off): the person who started a run does not
    decide its approvals. The console greys the card out with this; the services refuse."""
    if settings.GATEHOUSE_REVIEW_OWN_RUNS:
        return False
    return run.created_by_id is not None and run.created_by_id == getattr(user, "pk", None)


def _refuse_own_run(approval: Approval, user: Any) -> None:
    if approval_own_run(run=approval.run, user=user):
        raise ApprovalError(
            "own_run",
            f"You started run #{approval.run_id}: another reviewer must decide its requests "
            "(four-eyes rule, GATEHOUSE_REVIEW_OWN_RUNS is off).",
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
    confirmation: str = "",
    batch: bool = False,
    edited_input: Mapping[str, Any] | None = None,
) -> Approval:
    """Approve or deny once. `scope="session"` also stores the suggested grant.

    Friction scaled to risk (issue 32.2), for an approval whose class takes more than
    Approve: `typed` needs `confirmation` to be the word the card asks for; a
    `second-reviewer` approval is approved by two different people — the first approval is
    recorded (a `Signoff`) and the approval stays pending (`approvals_given` says how many).
    Neither is decided in a batch or allowed for the session. A deny settles either.

    Edit before approve (issue 32.3): `edited_input` approves the request with its input
    changed (`approvals.gate.edits`: only where the run's driver can hand it to its agent,
    only the tool's editable keys, evaluated by the policy again). Never for the session,
    nor for a request that needs a second reviewer (both people approve the same request);
    a typed confirmation and four eyes hold as for any approval."""
    verb = "approve" if approve else "deny"
    if scope not in ("once", "session"):
        raise ApprovalError("invalid_decision", f"scope must be 'once' or 'session', not {scope!r}")
    if mode not in ("", "default", "accept-edits"):
        raise ApprovalError("invalid_decision", f"mode must be 'default' or 'accept-edits', not {mode!r}")
    with _deciding(approval_id):
        approval = _load_for_decision(approval_id, verb, hash)
        if approve and approval.confirmation == "second-reviewer" and approval_own_run(run=approval.run, user=user):
            raise ApprovalError("second_reviewer_required", f"You started run #{approval.run_id}: two other reviewers "
                                "must approve this request (four-eyes rule, GATEHOUSE_REVIEW_OWN_RUNS is off).")
        _refuse_own_run(approval, user)
        if approve and approval.confirmation:
            _refuse_shortcuts(approval, scope=scope, batch=batch)
        if scope == "session" and (not approve or not approval.suggested_grant):
            raise ApprovalError("invalid_decision", "This request cannot be allowed for the whole session.")
        if mode and approval.kind != Approval.Kind.PLAN_REVIEW:
            raise ApprovalError("invalid_decision", "mode applies to plan reviews only.")
        edited, edited_verdict = None, None
        if edited_input is not None:
            edited, edited_verdict = _edit_refused_or_checked(approval, edited_input, approve=approve, scope=scope, batch=batch)
        if approve and approval.confirmation:
            if approval.confirmation == "typed" and confirmation.strip() != approval.confirmation_word:
                word = approval.confirmation_word
                raise ApprovalError("confirmation_required", f"Type {word!r} to approve this request.", expected=word)
            if approval.confirmation == "second-reviewer" and not _second_signoff(approval, user, via):
                return approval  # the first of two: recorded, still pending
        status = Approval.Status.APPROVED if approve else Approval.Status.DENIED
        edit_fields = {"edited_input": edited["input"]} if edited is not None else {}
        _resolve(approval, status=status, user=user, via=via, reason=reason, scope=scope, plan_mode=mode, **edit_fields)
        if edited is not None and approval.step is not None:
            step_edit(approval.step.pk, original=approval.step.request, edited=edited)
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
        resolved: ApprovalResolved = {
            "approval": approval.pk,
            "decision": status,
            "reason": reason,
            "scope": scope,
            "mode": mode,
            "by": getattr(user, "username", "") or "",
            "via": via,
            "grant": grant.pk if grant else None,
        }
        if edited is not None:
            resolved.update({"edited": True, "input": approval.request.get("input"), "edited_input": edited["input"],
                             "edited_verdict": edited_verdict.decision if edited_verdict else "",
                             "edited_rule": edited_verdict.rule if edited_verdict else ""})
        _after_resolution(
            approval,
            asleep=approval.run.hibernated_at is not None,  # read (locked) with the approval
            event_payload=resolved,
        )
    if grant is not None:
        grant_settle_pending(grant=grant, user=user)
    return approval


def _edit_refused_or_checked(
    approval: Approval, edited_input: Mapping[str, Any], *, approve: bool, scope: str, batch: bool
) -> tuple[dict[str, Any], core.Verdict]:
    """The edited request and its verdict (`approvals.gate.edits`), or the refusal."""
    if not approve:
        raise ApprovalError("invalid_decision", "Only an approval carries an edited request: deny it with a reason instead.")
    if batch:
        raise ApprovalError("batch_not_allowed", "An edited request is approved on its own card, not in a batch.")
    if scope == "session":
        raise ApprovalError("grant_not_allowed", "An edited request is approved once: “always allow” is not "
                            "offered together with an edit.")
    if approval.confirmation == "second-reviewer":
        raise ApprovalError("edit_not_allowed", "This request needs a second reviewer: both approve the same request, "
                            "so it cannot be edited. Deny it with a reason instead.")
    return edit_checked(approval, edited_input)


def _refuse_shortcuts(approval: Approval, *, scope: str, batch: bool) -> None:
    what = "typed confirmation" if approval.confirmation == "typed" else "a second reviewer"
    if batch:
        raise ApprovalError("batch_not_allowed", f"This request needs {what}: decide it on its own card.")
    if scope == "session":
        raise ApprovalError("grant_not_allowed", f"This request needs {what}: it cannot be allowed for the whole session.")


def _second_signoff(approval: Approval, user: Any, via: str) -> bool:
    """Record `user`'s approval of a second-reviewer request (its run is locked): True when
    it is the second different person's (the request is then approved), False when the
    first's (recorded, the card says "1 of 2"). The same person twice, or the run's starter
    under four eyes, is refused."""
    uid = getattr(user, "pk", None)
    if uid is None:
        raise ApprovalError("second_reviewer_required", "This request needs two reviewers, each signed in.")
    given = list(Signoff.objects.filter(approval=approval).values_list("user_id", flat=True))
    if uid in given:
        raise ApprovalError("second_reviewer_required",
                            "You approved this request already: another reviewer must approve it too.")
    Signoff.objects.create(approval=approval, user=user, via=via)
    if len(given) + 1 >= approval.APPROVALS_REQUIRED:
        return True
    activity_record(run_id=approval.run_id, kind="approval", event=Event.APPROVAL_SIGNED_OFF, payload={
        "approval": approval.pk, "by": getattr(user, "username", "") or "", "via": via,
        "approvals_given": len(given) + 1, "approvals_required": approval.APPROVALS_REQUIRED,
    })
    broadcast.fragment_on_commit(
        [broadcast.INBOX_GROUP, broadcast.run_console_group(approval.run_id)], "approval_changed", approval_id=approval.pk
    )
    return False


def grant_settle_pending(*, grant: Grant, user: Any) -> list[int]:
    """Approve at once every pending request of the grant's session that the new grant
    covers (parallel tool calls, sub-agents, other runs of the session waiting on the same
    thing): each is recorded as decided by the grant, made by `user`. Under four eyes never
    one of a run `user` started. Each in its own transaction, its run locked first as every
    decision does; one decided meanwhile is left as it is. Returns the approvals decided."""
    pending = Approval.objects.filter(run__session_id=grant.session_id, status=Approval.Status.PENDING, kind=Approval.Kind.PERMISSION)
    if grant.approval_id is not None:
        pending = pending.exclude(pk=grant.approval_id)  # decided by the person who made the grant
    candidates = list(pending.order_by("id").values_list("pk", flat=True))
    settled = []
    for approval_id in candidates:
        try:
            with _deciding(approval_id):
                _lock_run_of(approval_id)
                approval = _load_for_decision(approval_id, "approve", "")
                if approval_own_run(run=approval.run, user=user) or approval.step is None or approval.confirmation:
                    continue  # (a request that takes more than Approve is never settled by a grant)
                run = Run.objects.get(pk=approval.run_id)  # with its policy snapshot (a decision defers it)
                compiled = core.compile_policy(run.policy_document, version=run.policy_version)
                verdict = core.evaluate(compiled, approval.step.request, grants=[grant.rule], paths=path_context(run))
                if verdict.decision != "allow" or verdict.grant != grant.rule:
                    continue
                _resolve(approval, status=Approval.Status.APPROVED, user=user, via=Approval.Via.GRANT, grant=grant,
                         reason=f"Allowed by the session grant “{grant.label or grant.rule}”.")
                _after_resolution(approval, asleep=approval.run.hibernated_at is not None, event_payload={
                    "approval": approval.pk, "decision": Approval.Status.APPROVED, "scope": "once",
                    "by": getattr(user, "username", "") or "", "via": Approval.Via.GRANT, "grant": grant.pk,
                })
        except (ApprovalError, core.PolicyError):
            continue  # decided, expired or gone meanwhile; or a policy that no longer compiles: a person decides
        settled.append(approval_id)
    return settled


@dataclass(frozen=True)
class BatchOutcome:
    """One approval of a batch: decided, or the refusal that kept it pending."""

    approval_id: int
    error: ApprovalError | None = None


BATCH_MAX = 100


def approval_decide_each(
    *, items: Sequence[tuple[int, str]], user: Any, approve: bool, reason: str = "", via: str = "console"
) -> list[BatchOutcome]:
    """Decide several approvals the same way, each once and on its own (the console's batch).

    Each (id, hash) goes through `approval_decide` in its own transaction, bound to the hash
    the reviewer saw: a stale, already decided, expired or own-run one is refused and
    reported, the others are decided. A batch never creates a grant (`scope="once"`).
    """
    if len(items) > BATCH_MAX:
        raise ApprovalError("invalid_decision", f"Decide at most {BATCH_MAX} requests at once.")
    outcomes = []
    for approval_id, hash in dict(items).items():  # an id given twice is decided once
        if not hash:
            outcomes.append(BatchOutcome(approval_id, ApprovalError("stale", "No hash: reload and select it again.")))
            continue
        try:
            approval_decide(approval_id=approval_id, user=user, approve=approve, reason=reason, hash=hash, scope="once", via=via,
                            batch=True)
        except ApprovalError as exc:
            outcomes.append(BatchOutcome(approval_id, exc))
        else:
            outcomes.append(BatchOutcome(approval_id))
    return outcomes


def approval_answer(
    *, approval_id: int, user: Any, answers: Mapping[str, Any] | None, hash: str = "", decline: bool = False, via: str = "api",
    other: Mapping[str, Any] | None = None,
) -> Approval:
    """Answer a question (or decline it: the agent then gets a typed "no human answer").

    Some questions may stay unanswered (the agent is told which); `other` gives free text
    beside chosen options where a question allows it. A secret question's answer goes to
    the agent only: the record (approval, activity, step) says `[secret]`."""
    if decline and (answers or other):
        raise ApprovalError("invalid_decision", "Decline the questions or answer them, not both.")
    with _deciding(approval_id):
        approval = _load_for_decision(approval_id, "answer", hash)
        _refuse_own_run(approval, user)
        questions = approval.presentation.get("questions", [])
        if decline:
            record = None
        else:
            try:
                record = core.answers_of(questions, answers or {}, other)
            except core.PolicyError as exc:
                raise ApprovalError("invalid_decision", exc.message) from None
            if not record:
                raise ApprovalError("invalid_decision", "Answer at least one question, or decline.")
            secrets = core.secrets_of(questions, record)
            if secrets:
                SecretAnswer.objects.create(approval_id=approval.pk, answers=secrets)
            record = core.mask_secrets(questions, record)
        _resolve(approval, status=Approval.Status.ANSWERED, user=user, via=via, answers=record)
        _after_resolution(
            approval,
            asleep=approval.run.hibernated_at is not None,  # read (locked) with the approval
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


def approval_expire(*, approval_id: int, owner: str | None = None) -> bool:
    """Mark a pending approval whose deadline passed as expired (once). The run's worker
    names its lease `owner` (fenced); a reviewer's late decision calls it unfenced."""
    row = _STATUS_AND_DEADLINE.first(approval_id)
    if row is None or row[0] != Approval.Status.PENDING or row[1] is None or row[1] > clock.now():
        return False  # not due (the common case: one read, no lock); the locked update re-checks
    with transaction.atomic():
        if owner is not None:
            run_id = Approval.objects.filter(pk=approval_id).values_list("run_id", flat=True).first()
            if run_id is not None:
                fence(run_id, owner)
        else:
            _lock_run_of(approval_id)
        changed = Approval.objects.filter(
            pk=approval_id, status=Approval.Status.PENDING, deadline__lte=clock.now()
        ).update(status=Approval.Status.EXPIRED, decided_via=Approval.Via.TIMEOUT, decided_at=clock.now())
        if changed:
            approval = Approval.objects.get(pk=approval_id)
            _after_resolution(approval, event_payload={"approval": approval_id, "decision": "expired", "via": "timeout"})
    return bool(changed)


def approval_give_up(*, approval_id: int) -> bool:
    """Nobody will read the answer any more (the asker went away): a pending approval's
    deadline becomes now and it expires at once, in one transaction (its run locked first,
    as every writer takes it), recorded and broadcast as any expiry (`approval_expire`), so
    no reviewer decides a request nobody waits for. True when it expired here."""
    with transaction.atomic():
        _lock_run_of(approval_id)
        Approval.objects.filter(pk=approval_id, status=Approval.Status.PENDING).update(deadline=clock.now())
        return approval_expire(approval_id=approval_id)


# Read at every run's end (compiled once: `infra.prepared`).
_OPEN_STEPS: Prepared[int] = Prepared(
    lambda run_id: Step.objects.filter(run_id=run_id, status__in=sorted(OPEN)).values_list("id", flat=True), int
)
_PENDING_OF_RUN: Prepared[int] = Prepared(
    lambda run_id: Approval.objects.filter(run_id=run_id, status=Approval.Status.PENDING).values_list("id", flat=True), int
)


def approvals_detach_for_run(*, run_id: int, cancelled: bool = False) -> None:
    """A finished run's pending approvals can no longer be decided: a cancelled run's
    expire (a late reviewer hears "expired"), any other's are detached ("unavailable").
    Its steps still open end `aborted`: nothing will ever answer or finish them. A secret
    answer no agent took is dropped."""
    SecretAnswer.objects.filter(approval__run_id=run_id).delete()
    for step_id in _OPEN_STEPS.all(run_id):
        step_move(step_id, Step.Status.ABORTED, decided_by="system", told="The run ended before this step was answered.")
    ids = _PENDING_OF_RUN.all(run_id)
    if not ids:
        return
    status = Approval.Status.EXPIRED if cancelled else Approval.Status.CANCELLED
    Approval.objects.filter(pk__in=ids, status=Approval.Status.PENDING).update(
        status=status, decided_via=Approval.Via.SYSTEM, decided_at=clock.now()
    )
    for approval_id in ids:
        broadcast.fragment_on_commit(
            [broadcast.INBOX_GROUP, broadcast.run_console_group(run_id)],
            "approval_removed", approval_id=approval_id,
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
            created: GrantCreated = {"grant": grant.pk, "rule": rule, "label": label, "by": getattr(user, "username", "") or ""}
            activity_record(run_id=run_id, kind="notice", event=Event.GRANT_CREATED, payload=created)
    return grant


REVOKE_PERMISSION = "approvals.change_grant"


def grant_revoke(*, grant: Grant, user: Any = None) -> Grant:
    """Revoke a session grant (once). One permission on every surface: `approvals.change_grant`,
    or being the session's creator (revoking only ever tightens their own session)."""
    if user is not None and not user.has_perm(REVOKE_PERMISSION):
        creator = Grant.objects.filter(pk=grant.pk).values_list("session__created_by_id", flat=True).first()
        if creator is None or creator != getattr(user, "pk", None):
            raise ApprovalError("forbidden", f"Revoking a grant of another person's session needs the permission {REVOKE_PERMISSION}.")
    with transaction.atomic():
        changed = Grant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(revoked_at=clock.now())
        if changed:
            for run_id in Run.objects.filter(session_id=grant.session_id).exclude(status__in=Run.FINISHED).values_list("id", flat=True):
                revoked: GrantRevoked = {"grant": grant.pk, "by": getattr(user, "username", "") or ""}
                activity_record(run_id=run_id, kind="notice", event=Event.GRANT_REVOKED, payload=revoked)
    grant.refresh_from_db()
    return grant
