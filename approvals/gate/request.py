"""Recording and deciding one tool request: the gate every driver's request passes."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db import transaction

from approvals import policy as core
from approvals.models import Grant
from approvals.selectors import grants_for_run
from drivers.base import GateAnswer
from drivers.registry import external_names
from infra.prepared import Prepared
from runs.events import Event, ToolRequested
from runs.leases import LeaseLost
from runs.models import Run, Step
from runs.selectors import runtime_mode_for
from runs.timeline import activity_record

from .asking import approval_open, routing_for
from .counts import run_view
from .external import Consulted, ExternalQuestion, consult_about, external_apply, point_of, question_about
from .handout import handed_out
from .lifecycle import step_record
from .paths import floor_holds, path_context
from .shadow import shadow_verdict

S = Step.Status


def _verdict(run: Run, request: dict[str, Any], kind: str) -> tuple[core.Verdict, list[Grant] | None, core.RunView | None]:
    """The policy's verdict, with the session's grants. The run's counts are read only when
    the policy has limits, the grants only when the policy asks (a grant only narrows an
    ask): an allowed or denied request costs no query for either. Also returns the grants
    and counts read (None when not read), for the shadow policy."""
    if kind != "permission":
        verdict = core.Verdict(decision=core.Decision.ASK, reason=f"A {kind.replace('_', ' ')} needs a person.", rule=f"approvals.{kind}")
        return verdict, [], None
    try:
        compiled = core.compile_policy(run.policy_document, version=run.policy_version)
    except core.PolicyError as exc:
        # A snapshot that compiled when the run started but not under this server's rules
        # (an upgrade refuses a pattern that can never match): fail closed, and say why.
        where = f"{exc.field}: " if exc.field else ""
        reason = (f"The run's policy no longer compiles ({where}{exc.message}); nothing is allowed under it. "
                  "Fix the policy and start the run again.")
        return core.Verdict(decision=core.Decision.DENY, reason=reason, rule="policy"), [], None
    limited = compiled.max_tool_calls is not None or compiled.max_denials is not None
    counted = run_view(run.pk) if limited else None
    view = dataclasses.replace(counted or core.RunView(), floor=floor_holds(run))
    paths = path_context(run)
    verdict = core.evaluate(compiled, request, run_view=view, paths=paths)
    grants: list[Grant] | None = None
    if verdict.decision == "ask":
        grants = list(grants_for_run(run))
        if grants:
            verdict = core.evaluate(compiled, request, run_view=view, grants=[g.rule for g in grants], paths=paths)
    return verdict, grants, counted


# What the gate reads of a run: the policy, workspace and routing, with its session (never
# the large JSON: `Run.LARGE_FIELDS`).
RUN_UNREAD = (*Run.LARGE_FIELDS, "session__agent_state", "session__run_policy")


# The gate's reads, compiled once (`infra.prepared`): every tool request makes them.
_RUN: Prepared[Run] = Prepared(lambda run_id: Run.objects.select_related("session").defer(*RUN_UNREAD).filter(pk=run_id), int)
_FENCED_RUN: Prepared[Run] = Prepared(
    lambda run_id, owner: (
        Run.objects.select_related("session").defer(*RUN_UNREAD).select_for_update(of=("self",))
        .filter(pk=run_id, owner=owner).exclude(status__in=Run.FINISHED)
    ),
    int, str,
)
_LAST_SEQ: Prepared[int] = Prepared(
    lambda run_id: Step.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True)[:1], int
)


def _locked_run(run_id: int, owner: str | None) -> Run:
    """The run, fenced: a worker's request is refused unless it still holds the lease (the
    run row stays locked until commit on PostgreSQL, as `runs.leases.fence` does)."""
    if owner is None:
        run = _RUN.first(run_id)
        if run is None:
            raise Run.DoesNotExist(f"no run {run_id}")
        return run
    run = _FENCED_RUN.first(run_id, owner)
    if run is None:
        raise LeaseLost(run_id, owner)
    return run


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
    owner: str | None = None,
    tool_call_id: str = "",
    consulted: Consulted | None = None,
) -> GateAnswer:
    """Record one tool request and decide it, in one transaction.

    1. Refuse the write unless `owner` still holds the run (the fence).
    2. Validate the canonical request at the boundary (a bad one is denied, not stored half).
    3. Evaluate the run's rule policy with the session's grants and the run so far.
    4. Let the session's runtime mode approve an `ask` it covers.
    5. Route what is still `ask` per the run policy: a pending approval, or auto-approve /
       auto-deny recorded as decided by the policy.
    6. Hand the decision out (the step is recorded `executing`, `answered`, `denied`...).

    Between 4 and 5, the policy's external decision point (if it names one) has its say:
    `consulted`, its answer asked before the transaction (`external_question`, then
    `external_ask` off the database thread: the worker's run context does), else asked here.
    """
    with transaction.atomic():
        run = _locked_run(run_id, owner)
        return _gate(run, tool=tool, input=input, cwd=cwd, kind=kind, subtype=subtype, presentation=presentation,
                     runtime_mode=runtime_mode, tool_call_id=tool_call_id, consulted=consulted)


def external_question(run_id: int, *, tool: str, input: Mapping[str, Any], cwd: str, kind: str = "permission",
                      subtype: str = "tool", tool_call_id: str = "") -> ExternalQuestion | None:
    """What the run's external decision point is to be asked about this request (None: its
    policy names none, or the request is not one it is asked about), read outside the
    gate's transaction so that the asking (`external_ask`) holds no lock: SQLite's IMMEDIATE
    transaction would hold every writer while it thinks. The answer is about the verdict
    read here; `external_apply` lets it loosen only that one."""
    if kind != "permission":
        return None
    run = _RUN.first(run_id)
    point = point_of(run) if run is not None else None
    if run is None or point is None:
        return None
    try:
        request = core.validate_request({"tool": tool, "input": dict(input), "cwd": cwd})
    except core.PolicyError:
        return None  # denied as malformed, never asked about
    verdict, _, _ = _verdict(run, request, kind)
    return question_about(run, point, request=request, verdict=verdict, kind=kind, subtype=subtype,
                          tool_call_id=str(tool_call_id or "")[:200])


def gate_request_in(
    run: Run,
    *,
    tool: str,
    input: Mapping[str, Any],
    cwd: str,
    kind: str = "permission",
    subtype: str = "tool",
    presentation: Mapping[str, Any] | None = None,
    tool_call_id: str = "",
    latest_deadline: datetime | None = None,
) -> GateAnswer:
    """`gate_request` inside the caller's transaction, for a run the caller read in it
    (with its session, deferring `RUN_UNREAD`). Not fenced: for external runs, which no
    worker owns (the hook gateway reads its session, run and all in one transaction).
    `latest_deadline`: an approval it opens expires then at the latest (the hook's wait)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("gate_request_in needs the caller's transaction")
    if run.driver not in external_names():
        # A worker's run is gated through `gate_request`, fenced by its lease: never around it.
        raise RuntimeError(f"gate_request_in is for external runs; run {run.pk} ({run.driver}) is a worker's")
    return _gate(run, tool=tool, input=input, cwd=cwd, kind=kind, subtype=subtype, presentation=presentation,
                 tool_call_id=tool_call_id, latest_deadline=latest_deadline)


def _gate(
    run: Run,
    *,
    tool: str,
    input: Mapping[str, Any],
    cwd: str,
    kind: str,
    subtype: str,
    presentation: Mapping[str, Any] | None,
    runtime_mode: str = "",
    tool_call_id: str = "",
    consulted: Consulted | None = None,
    latest_deadline: datetime | None = None,
) -> GateAnswer:
    presentation = dict(presentation or {})
    tool_call_id = str(tool_call_id or "")[:200]
    run_id = run.pk
    grants: list[Grant] | None = []
    shadow: core.Verdict | None = None
    point = None
    try:
        request = core.validate_request({"tool": tool, "input": dict(input), "cwd": cwd})
    except core.PolicyError as exc:
        request = {"tool": str(tool)[:128], "input": {}, "cwd": cwd}
        verdict = core.Verdict(decision=core.Decision.DENY, reason=f"Malformed request: {exc.message}", rule="request")
    else:
        verdict, grants, view = _verdict(run, request, kind)
        point = point_of(run) if kind == "permission" else None
        if run.shadow_version_id is not None and kind == "permission":
            shadow = shadow_verdict(run, request, view=view, grants=grants)
    decision, decided_by = verdict.decision, "policy"
    grant_row = None
    if verdict.grant is not None:
        decided_by = "grant"
        grant_row = next((g for g in grants or [] if g.rule == verdict.grant), None)
    if decision == "ask" and kind == "permission":
        decision, decided_by = core.apply_runtime_mode(
            verdict, mode=runtime_mode or runtime_mode_for(run), request=request, workspace=run.workspace,
            paths=path_context(run),
        )
    external = None
    if point is not None:  # the administrator's decision point has its say (issue 30.9)
        if consulted is None or consulted.point != point:
            consulted = consult_about(run, point, request=request, verdict=verdict, kind=kind, subtype=subtype,
                                      tool_call_id=tool_call_id)
        external = external_apply(consulted, verdict=verdict, decision=decision)
        decision, verdict = external.decision, external.verdict
        decided_by = external.decided_by or decided_by
        if external.decided:
            grant_row = None  # a grant allowed it, the decision point did not: the grant decided nothing
    routing = routing_for(run, kind) if decision == "ask" else ""
    if routing == "auto-approve" and external is not None and external.person:
        routing = "ask"  # the decision point asks a person (or failed): only a person answers
    if routing == "auto-approve":
        decision, decided_by = core.Decision.ALLOW, "policy"
    elif routing == "auto-deny":
        decision, decided_by = core.Decision.DENY, "policy"
    reason = verdict.reason
    if kind == "question" and decision == "deny":
        reason = "No human answer: questions are declined by the run policy."
    if decision == "abort":
        reason = "policy_abort"  # the sentence is on the step; the run fails with the code
    # Decided at once: the step is inserted where the hand-out leaves it (one INSERT).
    path, moved = ((S.WAITING,), {}) if decision == "ask" else handed_out(
        kind, outcome=decision, reason=reason, decided_by=decided_by  # type: ignore[arg-type]
    )
    seq = (_LAST_SEQ.first(run_id) or 0) + 1
    step = step_record(
        *path,
        run=run,
        seq=seq,
        tool=request["tool"],
        kind=kind,
        subtype=subtype,
        tool_call_id=tool_call_id,
        request=request,
        presentation=presentation,
        verdict=verdict.decision,
        rule=verdict.rule,
        reason=verdict.reason,
        segments=[s.to_dict() for s in verdict.segments],
        side_effect_class=verdict.side_effect_class or "",
        policy_version=run.policy_version,
        decided_under_id=run.ran_under_id,
        shadow_verdict=shadow.decision if shadow is not None else "",
        shadow_rule=(shadow.rule or "")[:200] if shadow is not None else "",
        shadow_version_id=run.shadow_version_id if shadow is not None else None,
        grant=grant_row,
        external=external.record if external is not None else None,
        **moved,
    )
    payload: ToolRequested = {
        "step": seq,
        "tool": request["tool"],
        "tool_call_id": tool_call_id,
        "kind": kind,
        "input": request["input"],
        "verdict": verdict.decision,
        "decision": decision,
        "decided_by": decided_by if decision != "ask" else "",
        "rule": verdict.rule,
        "reason": verdict.reason,
        "grant": grant_row.pk if grant_row else None,
    }
    if external is not None:
        payload["external"] = external.record
    activity_record(run_id=run_id, kind="tool", event=Event.TOOL_REQUESTED, payload=payload)
    if decision == "ask":
        approval = approval_open(
            run=run, step=step, kind=kind, subtype=subtype, request=request, presentation=presentation, verdict=verdict,
            latest_deadline=latest_deadline,
        )
        return GateAnswer(step_id=step.pk, outcome="wait", approval_id=approval.pk)
    return GateAnswer(step_id=step.pk, outcome=decision, reason=reason, decided_by=decided_by)  # type: ignore[arg-type]  # a verdict, never "wait" here
