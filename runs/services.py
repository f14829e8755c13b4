"""Writes to runs: each function is one transaction that changes rows, appends the
activity, and schedules the doorbell and the console push after commit."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from project import broadcast
from runs import fragments
from runs.models import Activity, AgentSession, Run, Step

logger = logging.getLogger(__name__)

# Activity kinds the drivers may append through their RunContext.
DRIVER_ACTIVITY_KINDS = {"turn", "message", "tool", "usage", "notice"}


class RunError(Exception):
    """A refused write on a run; `code` is stable for API clients."""

    def __init__(self, code: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields


def activity_record(*, run_id: int, kind: str, event: str, payload: Mapping[str, Any] | None = None) -> Activity:
    """Append one activity to the run's log with the next sequence number.

    The UPDATE on the run row allocates the number and, on PostgreSQL, holds the row lock
    until commit, so concurrent appends to one run queue instead of colliding.
    """
    with transaction.atomic():
        Run.objects.filter(pk=run_id).update(last_seq=F("last_seq") + 1)
        seq = Run.objects.values_list("last_seq", flat=True).get(pk=run_id)
        activity = Activity.objects.create(run_id=run_id, seq=seq, kind=kind, event=event, payload=dict(payload or {}))
        activity_id = activity.pk
        broadcast.fragment_on_commit(
            [broadcast.run_console_group(run_id)], lambda: fragments.activity_appended(activity_id)
        )
    return activity


def _prepare_workspace(run_id: int, workspace: str) -> str:
    if workspace:
        try:
            path = Path(workspace).expanduser().resolve()
            is_dir = path.is_dir()
        except (OSError, RuntimeError, ValueError) as exc:  # unknown ~user, name too long, NUL byte
            raise RunError("invalid_workspace", f"workspace {workspace!r} cannot be used: {exc}", field="workspace") from None
        if not is_dir:
            raise RunError("invalid_workspace", f"workspace {workspace!r} is not a directory", field="workspace")
        roots = settings.GATEHOUSE_WORKSPACE_ROOTS
        if roots and not any(path == root or root in path.parents for root in roots):
            allowed = ", ".join(str(root) for root in roots)
            raise RunError("invalid_workspace", f"workspace {workspace!r} is outside the allowed roots ({allowed})", field="workspace")
        return str(path)
    path = settings.GATEHOUSE_WORKSPACES_DIR / f"run-{run_id}"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def _materialised(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The stored run policy keeps the document's shape: guardrails, then `approvals`."""
    guardrails = ("sandbox", "web_search", "browser")
    return {**{k: flat[k] for k in guardrails}, "approvals": {k: v for k, v in flat.items() if k not in guardrails}}


def session_create(*, user: Any = None, title: str = "", run_policy: Mapping[str, Any] | None = None) -> AgentSession:
    return AgentSession.objects.create(title=title, created_by=user, run_policy=run_policy)


def run_create(
    *,
    driver: str,
    prompt: str = "",
    scenario: Mapping[str, Any] | None = None,
    workspace: str = "",
    run_policy: Mapping[str, Any] | None = None,
    policy_name: str = "",
    session: AgentSession | None = None,
    user: Any = None,
) -> Run:
    """Validate, store a queued run, and ring the worker's doorbell after commit.

    1. The driver must exist, its options (scenario) must be valid, and the run policy
       (given, else the session's, else the rule policy's, else the server default;
       the nearer replaces the farther whole) must be one the driver models.
    2. The rule policy is snapshotted on the run, so later edits don't change it.
    """
    from approvals import policy as core
    from approvals.selectors import policy_for_run
    from drivers import registry

    descriptor = registry.descriptor(driver)  # raises RunError for an unknown driver
    registry.validate_options(driver, scenario=scenario)
    policy_row, document = policy_for_run(policy_name)
    session_policy = session.run_policy if session is not None else None
    layers = [
        core.parse_run_policy(run_policy) if run_policy is not None else None,
        core.parse_run_policy(session_policy) if session_policy is not None else None,
        core.parse_run_policy(policy_row.run_policy) if policy_row and policy_row.run_policy is not None else None,
        core.parse_run_policy(settings.GATEHOUSE_DEFAULT_RUN_POLICY)
        if settings.GATEHOUSE_DEFAULT_RUN_POLICY is not None
        else None,
    ]
    effective = core.resolve_run_policy(*layers)
    core.check_capabilities(effective, descriptor)
    compiled = core.compile_policy(document)
    with transaction.atomic():
        if session is None:
            session = session_create(user=user)
        run = Run.objects.create(
            session=session,
            driver=driver,
            prompt=prompt,
            scenario=dict(scenario) if scenario is not None else None,
            workspace="",
            policy=policy_row,
            policy_document=document,
            policy_version=compiled.version,
            run_policy_input=dict(run_policy) if run_policy is not None else None,
            run_policy=_materialised(core.materialise(effective)),
            created_by=user,
        )
        run.workspace = _prepare_workspace(run.pk, workspace)
        run.save(update_fields=["workspace"])
        activity_record(
            run_id=run.pk,
            kind="run",
            event="run.created",
            payload={"driver": driver, "prompt": prompt, "by": getattr(user, "username", "") or ""},
        )
        run_id = run.pk
        transaction.on_commit(lambda: broadcast.send_to_channel_now("drivers", {"type": "run.start", "run_id": run_id}))
        broadcast.fragment_on_commit([broadcast.INBOX_GROUP], lambda: fragments.run_row(run_id))
    return run


# --- Lease -------------------------------------------------------------------------------


def _lease_free(now: Any) -> Q:
    return Q(owner="") | Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=now - timedelta(seconds=settings.GATEHOUSE_LEASE_TTL_S))


def run_claim(*, run_id: int, owner: str) -> bool:
    """Take the run's lease if it is free (compare-and-set); True when this worker owns it."""
    now = timezone.now()
    claimed = (
        Run.objects.filter(pk=run_id)
        .exclude(status__in=Run.FINISHED)
        .filter(_lease_free(now) | Q(owner=owner))
        .update(owner=owner, heartbeat_at=now)
    )
    return claimed == 1


def runs_claimable() -> list[int]:
    """Unfinished runs whose lease is free: never started, or their worker is gone."""
    now = timezone.now()
    return list(
        Run.objects.exclude(status__in=Run.FINISHED).filter(_lease_free(now)).order_by("id").values_list("id", flat=True)
    )


def runs_leased() -> list[tuple[int, str]]:
    """Unfinished runs that some worker holds: (run id, owner)."""
    return list(Run.objects.exclude(status__in=Run.FINISHED).exclude(owner="").values_list("id", "owner"))


def run_heartbeat(*, run_id: int, owner: str) -> tuple[bool, bool]:
    """Renew the lease; returns (still owned, cancel requested)."""
    owned = Run.objects.filter(pk=run_id, owner=owner).update(heartbeat_at=timezone.now()) == 1
    cancel = Run.objects.filter(pk=run_id, cancel_requested=True).exists()
    return owned, cancel


def run_release(*, run_id: int, owner: str) -> None:
    Run.objects.filter(pk=run_id, owner=owner).update(owner="", heartbeat_at=None)


# --- Status ------------------------------------------------------------------------------


def _transition(run_id: int, to: str, **fields: Any) -> bool:
    allowed_from = [s for s, targets in Run.ALLOWED_TRANSITIONS.items() if to in targets]
    changed = Run.objects.filter(pk=run_id, status__in=allowed_from).update(status=to, **fields)
    if changed:
        broadcast.fragment_on_commit(
            [broadcast.run_console_group(run_id), broadcast.INBOX_GROUP], lambda: fragments.run_status(run_id)
        )
    return changed == 1


def run_mark_running(*, run_id: int, resumed: bool = False) -> None:
    with transaction.atomic():
        now = timezone.now()
        first = Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
        if _transition(run_id, Run.Status.RUNNING):
            if first:
                activity_record(run_id=run_id, kind="run", event="run.started", payload={})
            elif resumed:
                activity_record(run_id=run_id, kind="run", event="run.resumed", payload={})


def run_mark_waiting(*, run_id: int) -> None:
    _transition(run_id, Run.Status.WAITING)


def run_finish(
    *, run_id: int, status: str, failure_reason: str = "", detail: str = "", text: str = "", usage: Mapping[str, Any] | None = None
) -> bool:
    """End the run (once). Pending approvals of the run can no longer be decided."""
    from approvals.services import approvals_detach_for_run

    with transaction.atomic():
        fields: dict[str, Any] = {"finished_at": timezone.now(), "owner": "", "heartbeat_at": None}
        if failure_reason:
            fields["failure_reason"] = failure_reason[:64]
            fields["failure_detail"] = detail
        if text:
            fields["result_text"] = text
        if usage:
            fields["usage"] = dict(usage)
        if not _transition(run_id, status, **fields):
            return False
        approvals_detach_for_run(run_id=run_id, cancelled=status == Run.Status.CANCELLED)
        payload: dict[str, Any] = {"status": status}
        if failure_reason:
            payload["failure_reason"] = failure_reason
        if detail:
            payload["detail"] = detail
        activity_record(run_id=run_id, kind="run", event=f"run.{status}", payload=payload)
    return True


def run_cancel(*, run: Run, user: Any = None) -> Run:
    """Ask the run to stop; its worker ends it `cancelled` (a queued run ends at once)."""
    with transaction.atomic():
        if run.is_finished:
            raise RunError("already_finished", f"run {run.pk} already {run.status}")
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        activity_record(
            run_id=run.pk, kind="run", event="run.cancel_requested", payload={"by": getattr(user, "username", "")}
        )
        run_id = run.pk
        broadcast.send_on_commit(broadcast.run_group(run_id), {"type": "run.cancel", "run_id": run_id})
        if run.status == Run.Status.QUEUED and not run.owner:
            run_finish(run_id=run.pk, status=Run.Status.CANCELLED)
    run.refresh_from_db()
    return run


# --- Steps -------------------------------------------------------------------------------


def _bounded(text: str) -> str:
    limit = settings.GATEHOUSE_OUTPUT_LIMIT
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not kept]"


def step_finish(*, run_id: int, step_id: int, output: str = "", exit_code: int | None = None, error: str = "") -> None:
    """Record what an allowed step did. Only an allowed, unfinished step of this run changes."""
    with transaction.atomic():
        changed = Step.objects.filter(pk=step_id, run_id=run_id, status=Step.Status.ALLOWED).update(
            status=Step.Status.FINISHED,
            output=_bounded(output),
            exit_code=exit_code,
            error=_bounded(error),
            finished_at=timezone.now(),
        )
        if not changed:
            return
        step = Step.objects.get(pk=step_id)
        activity_record(
            run_id=run_id,
            kind="tool",
            event="tool.finished",
            payload={
                "step": step.seq,
                "tool": step.tool,
                "output": step.output,
                "exit_code": exit_code,
                "error": step.error,
            },
        )


# --- Sessions ------------------------------------------------------------------------------


def session_set_modes(
    *,
    session: AgentSession,
    runtime_mode: str | None = None,
    interaction_mode: str | None = None,
    user: Any = None,
    seen_from_run: int | None = None,
) -> AgentSession:
    """Change a session's durable modes; applied from the next turn, recorded on the
    session's open runs and on the run it was changed from (so it is never untraced)."""
    from runs.models import InteractionMode, RuntimeMode

    if runtime_mode is not None and runtime_mode not in RuntimeMode.values:
        raise RunError("invalid_mode", f"unknown runtime mode {runtime_mode!r}", field="runtime_mode")
    if interaction_mode is not None and interaction_mode not in InteractionMode.values:
        raise RunError("invalid_mode", f"unknown interaction mode {interaction_mode!r}", field="interaction_mode")
    with transaction.atomic():
        changes: dict[str, str] = {}
        if runtime_mode is not None and runtime_mode != session.runtime_mode:
            changes["runtime_mode"] = runtime_mode
        if interaction_mode is not None and interaction_mode != session.interaction_mode:
            changes["interaction_mode"] = interaction_mode
        if not changes:
            return session
        AgentSession.objects.filter(pk=session.pk).update(**changes)
        run_ids = set(Run.objects.filter(session=session).exclude(status__in=Run.FINISHED).values_list("id", flat=True))
        if seen_from_run is not None and Run.objects.filter(pk=seen_from_run, session=session).exists():
            run_ids.add(seen_from_run)
        for run_id in sorted(run_ids):
            activity_record(
                run_id=run_id, kind="notice", event="session.modes_changed",
                payload={**changes, "by": getattr(user, "username", "") or "", "applies": "from the next turn"},
            )
    session.refresh_from_db()
    return session
