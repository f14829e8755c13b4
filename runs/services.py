"""Writes to runs: each function is one transaction that changes rows, appends the
activity, and schedules the doorbell and the console push after commit."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from approvals import policy as core
from approvals.access import ceiling_of, default_ceiling, policy_choice_problems
from approvals.policy.run_policy import LOOSE_RUNTIME_MODES, describe_loosening, given_fields, loosened_fields
from approvals.policy_versions import policy_latest_version
from approvals.selectors import policy_for_run
from approvals.services import approvals_detach_for_run
from drivers import registry
from drivers.processes import still_running
from infra import broadcast
from repos.git import ref_problem
from repos.models import Repository
from runs.errors import RunError
from runs.events import Event, RunFinished
from runs.floor import run_floor_check
from runs.leases import fence
from runs.models import AgentSession, InteractionMode, Run, RuntimeMode
from runs.timeline import activity_record, run_status_changed, run_wake_on_commit

logger = logging.getLogger(__name__)



# Loosening the administrator's policy (a run policy above the ceiling, a runtime mode that
# approves on its own, another person's session) needs this permission (issue 9).
OVERRIDE_PERMISSION = "runs.override_policy"


def may_override_policy(user: Any) -> bool:
    """`user=None` is a trusted internal caller (a management command, a test); a person
    acting through the console or the API is always passed as the user."""
    return user is None or bool(user.has_perm(OVERRIDE_PERMISSION))


def _needs_override(what: str) -> str:
    return f"{what} needs the permission {OVERRIDE_PERMISSION} (ask an administrator)."


def _prepare_workspace(run_id: int, workspace: str, *, external: bool = False) -> str:
    if external:
        # The agent of an external run works on another machine (the hook gateway): its
        # directory is recorded as that machine names it, never looked up or created here.
        if not workspace.startswith("/") or "\x00" in workspace or len(workspace) > 1024:
            raise RunError("invalid_workspace", f"workspace {workspace!r} must be an absolute path", field="workspace")
        return os.path.normpath(workspace)
    if workspace:
        # 1. Resolve (symlinks, `..`, ~) without failing: non-strict realpath raises for
        #    nothing the filesystem holds (a loop, a dangling link, an unknown ~user, a long
        #    name all just resolve to some path), so no error can describe a directory.
        # 2. The roots: outside them, one answer whatever is there (a run starter must not
        #    learn which directories exist); a link in a root that leads out is outside.
        # 3. Only then, inside a root, is the path looked at.
        if "\x00" in workspace:
            raise RunError("invalid_workspace", f"workspace {workspace!r} must not contain a NUL byte", field="workspace")
        path = Path(os.path.realpath(os.path.expanduser(workspace)))
        roots = settings.GATEHOUSE_WORKSPACE_ROOTS
        if roots and not any(path == root or root in path.parents for root in roots):
            allowed = ", ".join(str(root) for root in roots)
            raise RunError("invalid_workspace", f"workspace {workspace!r} is outside the allowed roots ({allowed})", field="workspace")
        try:
            is_dir = path.is_dir()
        except OSError:  # a name too long, a component that cannot be read
            is_dir = False
        if not is_dir:
            raise RunError("invalid_workspace", f"workspace {workspace!r} is not a directory", field="workspace")
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


def session_joinable(*, session: AgentSession, user: Any) -> bool:
    """A run joins a session (its grants, modes and policy) only if its starter created it,
    or may override the policy. A session no one created (a command's) is no one's."""
    own = session.created_by_id is not None and session.created_by_id == getattr(user, "pk", None)
    return own or may_override_policy(user)


def _refuse_foreign_session(*, session: AgentSession, user: Any) -> None:
    if not session_joinable(session=session, user=user):
        raise RunError(
            "foreign_session", _needs_override(f"Session {session.pk} was created by someone else: joining it"),
            field="session",
        )


def _refuse_loosening(requested: core.RunPolicy, ceiling: core.RunPolicy, *, source: str) -> None:
    """Both compared materialised: a field the request leaves out is the built-in default."""
    wanted, limit = core.materialise(requested), core.materialise(ceiling)
    loose = loosened_fields(wanted, limit)
    if loose:
        given = given_fields(requested)
        reasons = "; ".join(describe_loosening(f, wanted, limit, given=f in given) for f in loose)
        raise RunError(
            "policy_override_forbidden",
            f"{source} loosens the administrator's policy: {reasons}. " + _needs_override("Loosening it"),
            field=loose[0],
            fields=loose,
        )


def _refuse_policy_choice(policy_row: Any, user: Any) -> None:
    """Naming a rule policy looser than the default one is a loosening (issue 34)."""
    problems = policy_choice_problems(policy_row, user)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise RunError(
            "policy_override_forbidden",
            f"The policy {policy_row.name!r} is looser than the administrator's default policy ({shown}). "
            + _needs_override("Naming it") + " An administrator can also make it available to you.",
            field="policy",
            policy=policy_row.name,
            loosenings=problems,
        )


def run_create(
    *,
    driver: str,
    prompt: str = "",
    scenario: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    workspace: str = "",
    run_policy: Mapping[str, Any] | None = None,
    policy_name: str = "",
    session: AgentSession | None = None,
    user: Any = None,
    repository: str = "",
    ref: str = "",
    continues: Run | None = None,
) -> Run:
    """Validate, store a queued run, and ring the worker's doorbell after commit.

    1. The driver must exist, its options (scenario, driver options) must be valid, and the run policy
       (given, else the session's, else the rule policy's, else the server default;
       the nearer replaces the farther whole) must be one the driver models.
    2. A named rule policy must be one `user` may name (`approvals.access.policy_choice_problems`:
       at least as strict as the default policy, made available to them, or they may
       override). Unless `user` may override the policy (`runs.override_policy`): the session must be
       one `user` created, its runtime mode must not approve on its own (auto,
       full-access), and a given or session run policy must not loosen the ceiling (the
       rule policy's run policy, else the server default, else the built-ins), both
       compared materialised. Refusals are 403 `foreign_session` / `policy_override_forbidden`.
    3. The rule policy is snapshotted on the run, so later edits don't change it.
    """
    descriptor = registry.descriptor(driver)  # raises RunError for an unknown driver
    registry.validate_options(driver, scenario=scenario, options=options)
    repository_row = _repository_of(repository, ref, workspace=workspace, external=descriptor.external)
    policy_row, document = policy_for_run(policy_name)
    if policy_name and policy_row is not None:
        _refuse_policy_choice(policy_row, user)
    if session is not None:
        _refuse_foreign_session(session=session, user=user)
    session_policy = session.run_policy if session is not None else None
    requested = core.resolve_run_policy(
        core.parse_run_policy(run_policy) if run_policy is not None else None,
        core.parse_run_policy(session_policy) if session_policy is not None else None,
    ) if run_policy is not None or session_policy is not None else None
    # The administrator's run policy: the ceiling a run or session policy may only tighten.
    ceiling = ceiling_of(policy_row)
    if requested is not None:
        # `approvals.confirm` is inherited class by class: a class the run's or session's
        # policy does not name keeps the ceiling's requirement (naming it weaker loosens).
        requested = core.resolve_run_policy(requested, ceiling)
    effective = requested if requested is not None else ceiling
    core.check_capabilities(effective, descriptor)
    if not may_override_policy(user):
        if session is not None and session.runtime_mode in LOOSE_RUNTIME_MODES:
            raise RunError(
                "policy_override_forbidden",
                _needs_override(f"Starting a run in session {session.pk}, whose runtime_mode is {session.runtime_mode},"),
                field="runtime_mode",
            )
        if requested is not None:
            _refuse_loosening(requested, ceiling, source="The run policy" if run_policy is not None else "The session's run policy")

    run_floor_check(effective=effective, requested=requested, descriptor=descriptor, user=user)
    compiled = core.compile_policy(document)
    ran_under, shadow = _policy_versions_of(policy_row, compiled.version)
    with transaction.atomic():
        if session is None:
            session = session_create(user=user)
        run = Run.objects.create(
            session=session,
            driver=driver,
            prompt=prompt,
            scenario=dict(scenario) if scenario is not None else None,
            options=dict(options or {}),
            workspace="",
            policy=policy_row,
            policy_document=document,
            policy_version=compiled.version,
            ran_under=ran_under,
            shadow_version=shadow,
            run_policy_input=dict(run_policy) if run_policy is not None else None,
            run_policy=_materialised(core.materialise(effective)),
            created_by=user,
            repository=repository_row,
            ref=ref if repository_row is not None else "",
        )
        if repository_row is not None:
            # The worker that takes the run makes its workspace (repos.services.workspace_prepare);
            # a follow-up turn keeps the workspace, branch and base of the run it continues.
            if continues is not None and continues.repository_id == repository_row.pk and continues.workspace:
                run.workspace, run.branch, run.base_commit = continues.workspace, continues.branch, continues.base_commit
                run.save(update_fields=["workspace", "branch", "base_commit"])
        else:
            run.workspace = _prepare_workspace(run.pk, workspace, external=descriptor.external)
            if not descriptor.external:
                registry.check_workspace(driver, workspace=run.workspace, options=options)
            run.save(update_fields=["workspace"])
        activity_record(
            run_id=run.pk,
            kind="run",
            event=Event.RUN_CREATED,
            payload={"driver": driver, "prompt": prompt, "by": getattr(user, "username", "") or ""},
        )
        run_id = run.pk
        transaction.on_commit(lambda: broadcast.send_to_channel_now("drivers", {"type": "run.start", "run_id": run_id}))
        broadcast.fragment_on_commit([broadcast.INBOX_GROUP], "run_row", run_id=run_id)
    return run


def _repository_of(name: str, ref: str, *, workspace: str, external: bool) -> Repository | None:
    """The repository a run names (exactly one of `workspace` and `repository`), and its ref."""
    if not name:
        if ref:
            raise RunError("invalid_repository", "ref applies to a run on a repository: name the repository too", field="ref")
        return None
    if workspace:
        raise RunError("invalid_repository", "name either a workspace or a repository, not both", field="repository")
    if external:
        raise RunError("invalid_repository", "an external run's agent works in its own directory, not on a repository",
                       field="repository")
    row = Repository.objects.filter(name=name).first()
    if row is None:
        raise RunError("invalid_repository", f"no repository named {name!r}", field="repository")
    problem = ref_problem(ref) if ref else ""
    if problem:
        raise RunError("invalid_repository", problem, field="ref")
    return row


def _policy_versions_of(policy_row: Any, digest: str) -> tuple[Any, Any]:
    """The PolicyVersion the run's snapshot is (None for the built-in fallback, or a row
    changed outside `policy_save`), and the version of the policy's shadow, if it has one."""
    if policy_row is None:
        return None, None
    latest = policy_latest_version(policy_row)
    same = latest is not None and latest.version == digest and latest.run_policy == policy_row.run_policy
    shadow = policy_latest_version(policy_row.shadow_policy) if policy_row.shadow_policy_id else None
    return (latest if same else None), shadow


def run_follow_up(*, session: AgentSession, prompt: str, scenario: Mapping[str, Any] | None = None, user: Any = None) -> Run:
    """The next turn of a session (the console's "Continue"): a new run with the session's
    latest run's driver, rule policy, run policy as given and workspace — so Claude Code and
    Codex, whose conversation lives in the session's agent home and belongs to that
    workspace, resume it with `prompt`. `run_create` enforces who may join and loosen."""
    latest = Run.objects.filter(session=session).select_related("policy", "repository").order_by("-id").first()
    if latest is None:
        raise RunError("invalid_session", f"session {session.pk} has no run to continue", field="session")
    on_repository = latest.repository if latest.repository_id else None
    return run_create(
        driver=latest.driver,
        prompt=prompt,
        scenario=scenario,
        workspace="" if on_repository is not None else latest.workspace,
        repository=on_repository.name if on_repository is not None else "",
        ref=latest.ref,
        continues=latest,
        run_policy=latest.run_policy_input,
        policy_name=latest.policy.name if latest.policy else "",
        session=session,
        user=user,
    )


# --- Status ------------------------------------------------------------------------------


def _transition(run_id: int, to: str, *, only_from: tuple[str, ...] | None = None, **fields: Any) -> bool:
    allowed_from = [s for s, targets in Run.ALLOWED_TRANSITIONS.items() if to in targets]
    if only_from is not None:
        allowed_from = [s for s in allowed_from if s in only_from]
    changed = Run.objects.filter(pk=run_id, status__in=allowed_from).update(status=to, **fields)
    if changed:
        run_status_changed(run_id)
    return changed == 1


def run_mark_running(*, run_id: int, resumed: bool = False, owner: str | None = None) -> None:
    """The worker took the run: queued → running (or a resumed run says so). Whether it is
    `waiting` instead follows from its pending approvals (`approvals.gate.run_status_sync`)."""
    with transaction.atomic():
        fence(run_id, owner)
        now = timezone.now()
        first = Run.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
        moved = _transition(run_id, Run.Status.RUNNING)
        if first and moved:
            activity_record(run_id=run_id, kind="run", event=Event.RUN_STARTED, payload={})
        elif resumed:
            # (A decision made while no worker owned it may already have set it running.)
            activity_record(run_id=run_id, kind="run", event=Event.RUN_RESUMED, payload={})


def run_record_process(*, run_id: int, record: Mapping[str, Any], owner: str | None = None) -> None:
    """Remember an agent process of the run (kept while it may still be running)."""
    with transaction.atomic():
        fence(run_id, owner)
        current = Run.objects.values_list("agent_processes", flat=True).get(pk=run_id) or []
        kept = [r for r in current if isinstance(r, dict) and still_running(r)]
        Run.objects.filter(pk=run_id).update(agent_processes=[*kept[-50:], dict(record)])


def run_hibernate(*, run_id: int, owner: str | None = None) -> None:
    """The worker stopped the run's agent while a person decides: the run sleeps (still
    `waiting`, its approvals decidable) and holds no lease; a decision wakes it."""
    with transaction.atomic():
        fence(run_id, owner)
        Run.objects.filter(pk=run_id).update(hibernated_at=timezone.now(), owner="", heartbeat_at=None)
        activity_record(run_id=run_id, kind="run", event=Event.RUN_HIBERNATED,
                        payload={"text": "Asleep: the agent was stopped while a person decides; a decision wakes it."})
        broadcast.fragment_on_commit(
            [broadcast.run_console_group(run_id), broadcast.INBOX_GROUP], "run_status", run_id=run_id
        )


def run_woke(*, run_id: int, owner: str | None = None) -> None:
    """A worker took a sleeping run back: it says so, once."""
    with transaction.atomic():
        fence(run_id, owner)
        if Run.objects.filter(pk=run_id, hibernated_at__isnull=False).update(hibernated_at=None):
            activity_record(run_id=run_id, kind="run", event=Event.RUN_WOKE, payload={})


def run_forget_processes(*, run_id: int, owner: str | None = None) -> None:
    with transaction.atomic():
        fence(run_id, owner)
        Run.objects.filter(pk=run_id).update(agent_processes=[])


def run_save_agent_state(*, run_id: int, state: Mapping[str, Any], owner: str | None = None) -> None:
    """What the driver needs to resume the agent's own conversation (its session id): kept
    on the run (a restart resumes it) and on its session, per driver (a follow-up run in
    the session continues the same conversation)."""
    with transaction.atomic():
        fence(run_id, owner)
        run = Run.objects.select_for_update().select_related("session").get(pk=run_id)
        Run.objects.filter(pk=run_id).update(agent_state=dict(state))
        session = AgentSession.objects.select_for_update().get(pk=run.session_id)
        AgentSession.objects.filter(pk=session.pk).update(agent_state={**(session.agent_state or {}), run.driver: dict(state)})


def run_finish(
    *,
    run_id: int,
    status: str,
    failure_reason: str = "",
    detail: str = "",
    text: str = "",
    usage: Mapping[str, Any] | None = None,
    owner: str | None = None,
) -> bool:
    """End the run (once). Pending approvals of the run can no longer be decided."""
    with transaction.atomic():
        fence(run_id, owner)
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
        payload: RunFinished = {"status": status}
        if failure_reason:
            payload["failure_reason"] = failure_reason
        if detail:
            payload["detail"] = detail
        activity_record(run_id=run_id, kind="run", event=Event(f"run.{status}"), payload=payload)
    return True


def run_cancel(*, run: Run, user: Any = None) -> Run:
    """Ask the run to stop; its worker ends it `cancelled` (a queued run ends at once).
    Its starter may; anyone else needs `runs.change_run`."""
    if user is not None and run.created_by_id != getattr(user, "pk", None) and not user.has_perm("runs.change_run"):
        raise RunError("forbidden", f"You did not start run {run.pk}: cancelling another person's run needs the permission runs.change_run.")
    with transaction.atomic():
        if run.is_finished:
            raise RunError("already_finished", f"run {run.pk} already {run.status}")
        Run.objects.filter(pk=run.pk).update(cancel_requested=True)
        activity_record(
            run_id=run.pk, kind="run", event=Event.RUN_CANCEL_REQUESTED, payload={"by": getattr(user, "username", "")}
        )
        run_id = run.pk
        broadcast.send_on_commit(broadcast.run_group(run_id), {"type": "run.cancel", "run_id": run_id})
        run_wake_on_commit(run_id=run_id)
        if run.status == Run.Status.QUEUED and not run.owner:
            run_finish(run_id=run.pk, status=Run.Status.CANCELLED)
    run.refresh_from_db()
    return run


# --- Sessions ------------------------------------------------------------------------------


_UNCHANGED: Any = object()


def session_set_run_policy(*, session: AgentSession, run_policy: Mapping[str, Any] | None, user: Any = None,
                           seen_from_run: int | None = None) -> AgentSession:
    """Set (or, with None, clear) the session's run policy: the layer between a run's own and
    the administrator's (issue 30). Validated like a run's (`invalid_policy` naming the
    field); unless `user` may override, it may only tighten the administrator's default
    ceiling (each run of the session is checked against its own policy's ceiling when it
    starts); another person's session needs `runs.change_agentsession`. Applies to the
    session's next runs; recorded on its open runs."""
    session_run_policy_check(session=session, run_policy=run_policy, user=user)
    value = dict(run_policy) if run_policy is not None else None
    if value == session.run_policy:
        return session
    with transaction.atomic():
        AgentSession.objects.filter(pk=session.pk).update(run_policy=value)
        _record_on_open_runs(session, seen_from_run, Event.SESSION_RUN_POLICY_CHANGED, {
            "run_policy": value, "by": getattr(user, "username", "") or "", "applies": "from the session's next run"})
    session.refresh_from_db()
    return session


def session_run_policy_check(*, session: AgentSession, run_policy: Mapping[str, Any] | None, user: Any = None) -> None:
    """Refuse a session run policy `user` may not set (RunError) or that is invalid (PolicyError)."""
    _refuse_foreign_change(session, user)
    parsed = core.parse_run_policy(run_policy) if run_policy is not None else None  # PolicyError: 400 invalid_policy
    if parsed is not None and not may_override_policy(user):
        ceiling = default_ceiling()
        _refuse_loosening(core.resolve_run_policy(parsed, ceiling), ceiling, source="The session's run policy")


def _refuse_foreign_change(session: AgentSession, user: Any) -> None:
    if user is not None and session.created_by_id != getattr(user, "pk", None) and not user.has_perm("runs.change_agentsession"):
        raise RunError("foreign_session", f"Session {session.pk} was created by someone else: changing it needs "
                       "the permission runs.change_agentsession.", field="session")


def _record_on_open_runs(session: AgentSession, seen_from_run: int | None, event: Event, payload: Mapping[str, Any]) -> None:
    """A change to a session is recorded on its open runs and on the run it was made from."""
    run_ids = set(Run.objects.filter(session=session).exclude(status__in=Run.FINISHED).values_list("id", flat=True))
    if seen_from_run is not None and Run.objects.filter(pk=seen_from_run, session=session).exists():
        run_ids.add(seen_from_run)
    for run_id in sorted(run_ids):
        activity_record(run_id=run_id, kind="notice", event=event, payload=payload)


def session_set_modes(
    *,
    session: AgentSession,
    runtime_mode: str | None = None,
    interaction_mode: str | None = None,
    run_policy: Mapping[str, Any] | None = _UNCHANGED,
    user: Any = None,
    seen_from_run: int | None = None,
) -> AgentSession:
    """Change a session's durable modes; applied from the next turn, recorded on the
    session's open runs and on the run it was changed from (so it is never untraced).
    Switching to `auto` or `full-access` needs `runs.override_policy` (403), and another
    person's session needs `runs.change_agentsession` (403 `foreign_session`). Who set the
    modes is kept: under four eyes, a mode approves nothing for that person's own runs.
    `run_policy` (None clears it) is set with `session_set_run_policy`'s rules."""
    _refuse_foreign_change(session, user)
    if runtime_mode is not None and runtime_mode not in RuntimeMode.values:
        raise RunError("invalid_mode", f"unknown runtime mode {runtime_mode!r}", field="runtime_mode")
    if interaction_mode is not None and interaction_mode not in InteractionMode.values:
        raise RunError("invalid_mode", f"unknown interaction mode {interaction_mode!r}", field="interaction_mode")
    if (
        runtime_mode in LOOSE_RUNTIME_MODES
        and runtime_mode != session.runtime_mode
        and not may_override_policy(user)
    ):
        # These modes approve asks on their own, whatever the administrator's policy says.
        raise RunError(
            "policy_override_forbidden", _needs_override(f"runtime_mode {runtime_mode} (it approves asks on its own)"), field="runtime_mode"
        )
    with transaction.atomic():
        if run_policy is not _UNCHANGED:  # (refused whole with the modes: one transaction)
            session = session_set_run_policy(session=session, run_policy=run_policy, user=user, seen_from_run=seen_from_run)
        changes: dict[str, str] = {}
        if runtime_mode is not None and runtime_mode != session.runtime_mode:
            changes["runtime_mode"] = runtime_mode
        if interaction_mode is not None and interaction_mode != session.interaction_mode:
            changes["interaction_mode"] = interaction_mode
        if not changes:
            return session
        AgentSession.objects.filter(pk=session.pk).update(**changes, modes_set_by=user if getattr(user, "pk", None) else None)
        _record_on_open_runs(session, seen_from_run, Event.SESSION_MODES_CHANGED,
                             {**changes, "by": getattr(user, "username", "") or "", "applies": "from the next turn"})
    session.refresh_from_db()
    return session
