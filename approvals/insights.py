"""What the record of decisions says about a policy (issue 32, item 1): reads only.

The shapes and the rules they suggest are the policy core's (approvals/policy/insights.py);
this module reads the approvals of one policy's runs over a window and measures each
suggested rule on the recorded history with the dry run (approvals/policy_replay.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Count
from django.utils import timezone

from approvals import policy as core
from approvals.models import Approval, Policy
from approvals.policy import insights as learn
from approvals.policy_replay import policy_dry_run
from runs.models import Run

DEFAULT_DAYS = 30
MAX_DAYS = 366
MAX_SUGGESTIONS = 20
PERSON_VIAS = (Approval.Via.CONSOLE, Approval.Via.API, Approval.Via.LINK)  # a one-tap link is a person too


def records(policy: Policy, *, days: int = DEFAULT_DAYS) -> list[learn.Record]:
    """The permission requests of the policy's runs asked of anyone in the last `days` days."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        Approval.objects.filter(run__policy=policy, kind=Approval.Kind.PERMISSION, created_at__gte=since)
        .select_related("step")
        .only("status", "decided_via", "decided_by_id", "created_at", "decided_at", "suggested_grant", "suggested_grant_label",
              "step__side_effect_class", "step__verdict")
        .order_by("id")
    )
    out = []
    for row in rows.iterator(chunk_size=500):
        by_person = row.decided_via in PERSON_VIAS
        outcome = row.status if row.status in (Approval.Status.APPROVED, Approval.Status.DENIED) else str(row.status)
        seconds = (row.decided_at - row.created_at).total_seconds() if row.decided_at and by_person else None
        shape = row.suggested_grant if isinstance(row.suggested_grant, Mapping) else None
        out.append(learn.Record(
            shape=shape,
            side_effect_class=(row.step.side_effect_class if row.step else "") or "",
            outcome=outcome if by_person or outcome != "approved" else "approved-by-" + str(row.decided_via),
            reviewer=row.decided_by_id if by_person else None,
            seconds=seconds,
            # a grant for exactly one command (code given on the command line): never a rule
            exact=row.suggested_grant_label.startswith("Always allow exactly"),
        ))
    return out


@dataclass
class Suggested:
    section: str
    rule: str
    up_to: str | None  # a command rule's bound (the most severe class approved)
    approved: int
    denied: int
    reviewers: int
    median_seconds: float | None
    would_allow: int
    loosens_denied: int  # past requests denied or aborted that it would allow: always 0
    compared: int
    examples: list[Mapping[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"section": self.section, "rule": self.rule, "up_to": self.up_to, "approved": self.approved, "denied": self.denied,
                "reviewers": self.reviewers, "median_seconds": self.median_seconds, "would_allow": self.would_allow,
                "compared": self.compared}


def suggestions(policy: Policy, *, days: int = DEFAULT_DAYS, threshold: int = learn.DEFAULT_THRESHOLD,
                measured: bool = True) -> list[Suggested]:
    """The rules to offer, each with what it would have allowed on the recorded history."""
    out = []
    for found in learn.suggest(records(policy, days=days), threshold)[:MAX_SUGGESTIONS]:
        would, loosened, compared = 0, 0, 0
        examples: list[Mapping[str, Any]] = []
        if measured:
            document = learn.with_rule(policy.document, found.section, found.rule, found.up_to)
            dry = policy_dry_run(document=document, policy=policy)
            compared = dry.compared
            for change in dry.changed:
                if change.now == "allow":
                    would += 1
                    loosened += change.was in ("deny", "abort")
                    if len(examples) < 5:
                        examples.append(change.request)
        out.append(Suggested(found.section, found.rule, found.up_to, found.approved, found.denied, len(found.reviewers),
                             found.median_seconds, would, loosened, compared, examples))
    return out


@dataclass
class Insights:
    policy: Policy
    days: int
    asked: int
    decided_by_person: int
    median_seconds: float | None
    runs: int
    prompts_per_run: float
    by_class: list[dict[str, Any]]
    by_shape: list[dict[str, Any]]
    suggested: list[Suggested]
    rubber_stamps: list[learn.Suggestion]


def insights(policy: Policy, *, days: int = DEFAULT_DAYS, threshold: int = learn.DEFAULT_THRESHOLD) -> Insights:
    found = records(policy, days=days)
    seconds = [r.seconds for r in found if r.seconds is not None]
    since = timezone.now() - timedelta(days=days)
    runs = Run.objects.filter(policy=policy, created_at__gte=since).aggregate(n=Count("id"))["n"] or 0
    return Insights(
        policy=policy,
        days=days,
        asked=len(found),
        decided_by_person=sum(1 for r in found if r.reviewer is not None),
        median_seconds=statistics.median(seconds) if seconds else None,
        runs=runs,
        prompts_per_run=(len(found) / runs) if runs else 0.0,
        by_class=learn.rates_by(found, "class"),
        by_shape=learn.rates_by(found, "shape")[:50],
        suggested=suggestions(policy, days=days, threshold=threshold),
        rubber_stamps=learn.rubber_stamps(found),
    )


def parse_window(raw_days: Any, raw_threshold: Any) -> tuple[int, int]:
    """`days` and `threshold` query parameters (PolicyError naming the bad one)."""
    values = []
    for name, raw, default, top in (("days", raw_days, DEFAULT_DAYS, MAX_DAYS),
                                    ("threshold", raw_threshold, learn.DEFAULT_THRESHOLD, 10_000)):
        if raw in (None, ""):
            values.append(default)
            continue
        try:
            value = int(str(raw))
        except ValueError:
            raise core.PolicyError("invalid_request", f"{name} must be a whole number", field=name, value=raw) from None
        if not 1 <= value <= top:
            raise core.PolicyError("invalid_request", f"{name} must be from 1 to {top}", field=name, value=raw)
        values.append(value)
    return values[0], values[1]
