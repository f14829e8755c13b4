"""A policy tried before it is live: one request ("Try it"), the recorded history (dry
run), and the live traffic (shadow agreement). All reads: nothing here writes a row.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, QuerySet

from approvals import policy as core
from approvals.gate.paths import floor_holds, offline_path_context, path_context
from approvals.models import Policy
from approvals.policy.external import replay as external_replay
from runs.models import Step

DRY_RUN_LIMIT = 500
DRY_RUN_MAX = 5000
DECISIONS = ("allow", "deny", "ask", "abort")


@dataclass(frozen=True)
class Tried:
    verdict: core.Verdict
    # how each of the verdict's commands was read (which model, what it recognised), in order
    readings: list[core.Reading | None]


def policy_try(*, document: Mapping[str, Any], request: Mapping[str, Any], workspace: str) -> Tried:
    """The verdict of an (unsaved) rule document on one request, with paths anchored to
    `workspace` as `policy_check` anchors them, and how each command was read (the
    document's own program models applied). Refuses an invalid document or request
    (`PolicyError`, naming the field)."""
    compiled = core.compile_policy(document)
    verdict = core.evaluate(compiled, core.validate_request(request), paths=offline_path_context(workspace))
    return Tried(verdict, [core.reading_of(segment, compiled.programs) for segment in verdict.segments])


# --- Dry run on history ------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangedStep:
    step: int
    run: int
    request: Mapping[str, Any]
    was: str
    now: str
    rule: str

    def to_dict(self) -> dict[str, Any]:
        """The API's shape (issue 10): step, request, was, now, rule."""
        return {"step": self.step, "request": self.request, "was": self.was, "now": self.now, "rule": self.rule}


@dataclass(frozen=True)
class DryRun:
    compared: int
    changed: list[ChangedStep]
    counts: dict[str, int]  # the changed requests by what the draft now decides
    # "policy": the requests this policy decided; "all": every policy's (it decided none yet).
    scope: str = "policy"
    # The draft names an external decision point: its answers are replayed as recorded,
    # never asked again; this many steps recorded none (compared on the rules alone). None:
    # the draft names none.
    external_unrecorded: int | None = None


def _history(policy: Policy | None, limit: int) -> tuple[QuerySet[Step], str]:
    """The last `limit` permission requests the policy's runs recorded (every run's when it
    has none yet), newest first, loaded with what replaying them needs."""
    steps = Step.objects.filter(kind="permission").exclude(rule="request")  # not malformed ones
    scope = "all"
    if policy is not None and steps.filter(run__policy=policy).exists():
        steps, scope = steps.filter(run__policy=policy), "policy"
    rows = (
        steps.select_related("run", "grant")
        .only("id", "seq", "request", "verdict", "external", "run__id", "run__workspace", "run__session_id", "grant__rule")
        .order_by("-id")[:limit]
    )
    return rows, scope


def _denials_before(steps: list[Step]) -> dict[int, list[int]]:
    """run id -> the sorted seqs of its denied steps (what the run's limits counted)."""
    denied: dict[int, list[int]] = {}
    rows = Step.objects.filter(run_id__in={s.run_id for s in steps}, status=Step.Status.DENIED).values_list("run_id", "seq")
    for run_id, seq in rows:
        denied.setdefault(run_id, []).append(seq)
    for seqs in denied.values():
        seqs.sort()
    return denied


def policy_dry_run(*, document: Mapping[str, Any], policy: Policy | None = None, limit: int = DRY_RUN_LIMIT) -> DryRun:
    """What `document` would have decided on recorded requests, against what was decided.

    1. Take the last `limit` permission requests of the policy's runs (all runs' if it has
       decided none yet).
    2. Re-evaluate each as the gate did: its run's workspace, the grant that allowed it (if
       one did), the run's tool calls and denials before it (for `limits`).
    3. When the draft names an external decision point, combine each verdict with the answer
       the step recorded from one (never asking it again: history is replayed as it was).
    4. Return how many were compared, each whose verdict changes (newest first), and the
       changed ones counted by their new verdict.
    """
    if not 1 <= limit <= DRY_RUN_MAX:
        raise core.PolicyError("invalid_request", f"limit must be from 1 to {DRY_RUN_MAX}", field="limit", value=limit)
    compiled = core.compile_policy(document)
    rows, scope = _history(policy, limit)
    steps = list(rows)
    denied = _denials_before(steps) if compiled.max_denials is not None else {}
    changed: list[ChangedStep] = []
    unrecorded = 0
    for step in steps:
        view = core.RunView(tool_calls=step.seq - 1, denials=bisect.bisect_left(denied.get(step.run_id, []), step.seq),
                            floor=floor_holds(step.run))
        grants = [step.grant.rule] if step.grant is not None else []
        try:
            verdict = core.evaluate(compiled, step.request, run_view=view, grants=grants, paths=path_context(step.run))
        except core.PolicyError:
            continue  # a request recorded before today's boundary checks: nothing to compare
        now, rule = verdict.decision, verdict.rule
        if compiled.external is not None:  # the decision point's answer as recorded (issue 30.9)
            replayed = external_replay(now, step.external, compiled.external, protected=verdict.touches_protected)
            unrecorded += replayed is None
            if replayed is not None and replayed.decided:
                now, rule = replayed.decision, "external"
        if now != step.verdict:
            changed.append(ChangedStep(step.pk, step.run_id, step.request, step.verdict, now, rule))
    counts = {decision: 0 for decision in DECISIONS}
    for item in changed:
        counts[item.now] = counts.get(item.now, 0) + 1
    return DryRun(compared=len(steps), changed=changed, counts=counts, scope=scope,
                  external_unrecorded=unrecorded if compiled.external is not None else None)


# --- Shadow agreement ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ShadowAgreement:
    """How a shadow policy's verdicts compared with the live ones on the same steps."""

    compared: int
    agreed: int
    # (live verdict, shadow verdict) -> how many steps, for the disagreements
    pairs: dict[tuple[str, str], int] = field(default_factory=dict)
    disagreements: list[Step] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.agreed / self.compared if self.compared else None


def shadow_agreement(*, shadow: Policy, live: Policy | None = None, recent: int = 50) -> ShadowAgreement:
    """The steps on which `shadow` recorded a verdict (of `live`'s runs, if given): how many
    agreed with the live verdict, and the latest disagreements with their runs."""
    steps = Step.objects.filter(shadow_version__policy=shadow).exclude(shadow_verdict="")
    if live is not None:
        steps = steps.filter(run__policy=live)
    compared = steps.count()
    agreed = steps.filter(shadow_verdict=F("verdict")).count() if compared else 0
    differing = steps.exclude(shadow_verdict=F("verdict"))
    pairs = {
        (row["verdict"], row["shadow_verdict"]): row["n"]
        for row in differing.values("verdict", "shadow_verdict").annotate(n=Count("id")).order_by()
    } if compared > agreed else {}
    latest = list(
        differing.select_related("run").only(
            "id", "seq", "tool", "request", "verdict", "rule", "shadow_verdict", "shadow_rule", "created_at",
            "run__id", "run__policy_id",
        ).order_by("-id")[:recent]
    ) if compared > agreed else []
    return ShadowAgreement(compared=compared, agreed=agreed, pairs=pairs, disagreements=latest)
