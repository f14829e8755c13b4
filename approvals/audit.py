"""The audit export: every decision the gate made, as rows an auditor can keep (issue 32.6).

One row per step (one tool request of a run): the request as the policy evaluated it, the
policy's verdict and rule, the outcome and who or what decided it (`Step.decided_by`:
policy, grant, mode, external, console, api, person, timeout, system), the person who
decided its approval and the approval's `hash` (what they were shown), and the policy
version it was decided under. Only the runs a user may see (`approvals.access.runs_visible`)
are exported, in step id order, read with `iterator()` in chunks: the export of a year
holds one chunk in memory at a time.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Exists, OuterRef, Prefetch, QuerySet

from approvals.access import runs_visible
from approvals.metrics import STEP_OUTCOMES
from approvals.models import Approval
from runs.models import Run, Step

EXPORT_FORMATS = ("jsonl", "csv")
OUTCOMES = ("allow", "deny", "abort", "answer", "pending")
CHUNK_ROWS = 500  # rows read per query, and written per chunk of the response

# The columns of a row, in order (the CSV header).
COLUMNS = (
    "at", "run", "session", "step", "tool_call_id", "kind", "subtype", "tool", "request", "side_effect_class",
    "verdict", "rule", "reason", "outcome", "status", "decided_by", "reviewer", "decided_at", "grant",
    "approval", "approval_status", "attempt", "hash", "denial_reason", "policy", "policy_version",
    "policy_version_number", "external",
)
# Cells a spreadsheet would read as a formula (agent text can start with anything):
# written with a leading apostrophe in the CSV, never in JSON lines.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class ExportFilter:
    """What to export; every field optional. `since` inclusive, `until` exclusive (step times)."""

    since: datetime | None = None
    until: datetime | None = None
    run_id: int | None = None
    session_id: int | None = None
    policy_id: int | None = None
    reviewer: str = ""  # a username: the steps whose approval this person decided
    outcome: str = ""  # one of OUTCOMES


def decisions_for_export(user: Any, wanted: ExportFilter) -> QuerySet[Step]:
    """The steps `user` may see that `wanted` selects, oldest first, with what a row needs."""
    steps = Step.objects.filter(run__in=runs_visible(user))
    if wanted.since is not None:
        steps = steps.filter(created_at__gte=wanted.since)
    if wanted.until is not None:
        steps = steps.filter(created_at__lt=wanted.until)
    if wanted.run_id is not None:
        steps = steps.filter(run_id=wanted.run_id)
    if wanted.session_id is not None:
        steps = steps.filter(run__session_id=wanted.session_id)
    if wanted.policy_id is not None:
        steps = steps.filter(run__policy_id=wanted.policy_id)
    if wanted.reviewer:
        decided = Approval.objects.filter(step_id=OuterRef("pk"), decided_by__username=wanted.reviewer)
        steps = steps.filter(Exists(decided))
    if wanted.outcome == "pending":
        steps = steps.exclude(status__in=list(STEP_OUTCOMES))
    elif wanted.outcome:
        steps = steps.filter(status__in=[s for s, o in STEP_OUTCOMES.items() if o == wanted.outcome])
    approvals = Approval.objects.select_related("decided_by").only(
        "id", "step_id", "status", "attempt", "hash", "reason", "decided_at", "decided_by__username",
    ).order_by("attempt", "id")
    return (
        steps.select_related("run", "run__policy", "decided_under")
        .only(
            "id", "seq", "tool", "kind", "subtype", "tool_call_id", "request", "verdict", "rule", "reason",
            "side_effect_class", "policy_version", "grant_id", "external", "status", "decided_by", "created_at",
            "run__id", "run__session_id", "run__policy__name", "decided_under__number",
        )
        .prefetch_related(Prefetch("approvals", queryset=approvals))
        .order_by("id")
    )


def export_row(step: Step) -> dict[str, Any]:
    """One decision: the step, its last approval (a retried request has several), its policy."""
    approvals = list(step.approvals.all())
    approval = approvals[-1] if approvals else None
    run: Run = step.run
    return {
        "at": step.created_at,
        "run": step.run_id,
        "session": run.session_id,
        "step": step.seq,
        "tool_call_id": step.tool_call_id,
        "kind": step.kind,
        "subtype": step.subtype,
        "tool": step.tool,
        "request": step.request,
        "side_effect_class": step.side_effect_class,
        "verdict": step.verdict,
        "rule": step.rule,
        "reason": step.reason,
        "outcome": STEP_OUTCOMES.get(step.status, "pending"),
        "status": step.status,
        "decided_by": step.decided_by,
        "reviewer": approval.decided_by.username if approval is not None and approval.decided_by is not None else None,
        "decided_at": approval.decided_at if approval is not None else None,
        "grant": step.grant_id,
        "approval": approval.pk if approval is not None else None,
        "approval_status": approval.status if approval is not None else None,
        "attempt": approval.attempt if approval is not None else None,
        "hash": approval.hash if approval is not None else None,
        "denial_reason": approval.reason if approval is not None and approval.reason else None,
        "policy": run.policy.name if run.policy is not None else None,
        "policy_version": step.policy_version,
        "policy_version_number": step.decided_under.number if step.decided_under is not None else None,
        "external": step.external,
    }


def _json(value: Any) -> str:
    return json.dumps(value, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        text = _json(value)
    elif isinstance(value, datetime):
        text = value.isoformat()
    else:
        text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _chunks(steps: QuerySet[Step], write: Any) -> Iterator[bytes]:
    buffer: list[str] = []
    for step in steps.iterator(chunk_size=CHUNK_ROWS):
        buffer.append(write(export_row(step)))
        if len(buffer) >= CHUNK_ROWS:
            yield "".join(buffer).encode()
            buffer = []
    if buffer:
        yield "".join(buffer).encode()


def export_jsonl(steps: QuerySet[Step]) -> Iterator[bytes]:
    """JSON lines: one object per decision, keys as in COLUMNS."""
    return _chunks(steps, lambda row: json.dumps(row, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False) + "\n")


def _csv_line(values: Iterable[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(values)
    return out.getvalue()


def export_csv(steps: QuerySet[Step]) -> Iterator[bytes]:
    """CSV (RFC 4180): a header, then one line per decision; JSON values as compact JSON text."""
    yield _csv_line(COLUMNS).encode()
    yield from _chunks(steps, lambda row: _csv_line(_cell(row[c]) for c in COLUMNS))
