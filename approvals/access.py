"""Who may see, start under and decide what: one place, read by every surface (issue 34).

Roles follow Django permissions, so an administrator grants them in the admin:

| role | permission | sees |
|---|---|---|
| administrator | `runs.view_run` or `runs.change_run` (or superuser) | everything |
| reviewer | `approvals.change_approval` | every approval, the runs behind them (and their sessions) |
| session keeper | `runs.change_agentsession` or `runs.override_policy` | every session (to change or join it) |
| run starter | `runs.add_run` | their own runs and sessions, with their approvals and activities |
| anyone else | — | nothing |

A person always sees the runs they started and the sessions they created. The REST API,
both SSE streams, both WebSockets, the console pages and forms all narrow their rows
with the querysets here; a row outside them answers 404, as if it did not exist.

Naming a rule policy for a run is a loosening like any other (`policy_choice_problems`):
allowed when the policy is at least as strict as the default policy
(`approvals.policy.strictness`), when the administrator made it available to the user
(`Policy.available_to_users` / `available_to_groups`), or with `runs.override_policy`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef, Q, QuerySet

from approvals import policy as core
from approvals.models import Approval, Grant, Policy
from approvals.policy.run_policy import confirm_layer, describe_loosening, loosened_fields
from approvals.policy.strictness import loosenings
from approvals.selectors import policy_for_run
from runs.models import Activity, AgentSession, Run

# Who may view or change every run sees every run (as in Django's admin, change implies view).
VIEW_ALL_PERMISSIONS = ("runs.view_run", "runs.change_run")
# Who may change or join others' sessions sees every session (not every run in them).
SEE_SESSIONS_PERMISSIONS = ("runs.view_agentsession", "runs.change_agentsession", "runs.override_policy")
DECIDE_PERMISSION = "approvals.change_approval"
START_PERMISSION = "runs.add_run"
OVERRIDE_PERMISSION = "runs.override_policy"
SEE_POLICIES_PERMISSIONS = ("approvals.view_policy", "approvals.change_policy")


def _user_id(user: Any) -> int | None:
    return getattr(user, "pk", None) if user is not None and getattr(user, "is_authenticated", False) else None


def sees_everything(user: Any) -> bool:
    """An administrator (or `user=None`: a trusted internal caller, a command, a test)."""
    if user is None:
        return True
    return bool(getattr(user, "is_active", False) and any(user.has_perm(p) for p in VIEW_ALL_PERMISSIONS))


def is_reviewer(user: Any) -> bool:
    return bool(user is not None and getattr(user, "is_active", False) and user.has_perm(DECIDE_PERMISSION))


def _has_approvals() -> Exists:
    return Exists(Approval.objects.filter(run_id=OuterRef("pk")))


def runs_visible(user: Any, runs: QuerySet[Run] | None = None) -> QuerySet[Run]:
    """The runs `user` may see: all (administrator), those with an approval (reviewer), and
    always their own."""
    runs = Run.objects.all() if runs is None else runs
    if sees_everything(user):
        return runs
    uid = _user_id(user)
    if uid is None:
        return runs.none()
    if is_reviewer(user):
        return runs.filter(Q(created_by_id=uid) | Q(_has_approvals()))
    return runs.filter(created_by_id=uid)


def run_visible(user: Any, run_id: int) -> bool:
    return runs_visible(user, Run.objects.filter(pk=run_id)).exists()


def sessions_visible(user: Any, sessions: QuerySet[AgentSession] | None = None) -> QuerySet[AgentSession]:
    """The sessions `user` created, and those holding a run they may see."""
    sessions = AgentSession.objects.all() if sessions is None else sessions
    if sees_everything(user) or (getattr(user, "is_active", False) and any(user.has_perm(p) for p in SEE_SESSIONS_PERMISSIONS)):
        return sessions
    uid = _user_id(user)
    if uid is None:
        return sessions.none()
    seen_runs = runs_visible(user).filter(session_id=OuterRef("pk"))
    return sessions.filter(Q(created_by_id=uid) | Q(Exists(seen_runs)))


def approvals_visible(user: Any, approvals: QuerySet[Approval] | None = None) -> QuerySet[Approval]:
    """Every approval for a reviewer or administrator; the approvals of their own runs else."""
    approvals = Approval.objects.all() if approvals is None else approvals
    if sees_everything(user) or is_reviewer(user):
        return approvals
    uid = _user_id(user)
    if uid is None:
        return approvals.none()
    return approvals.filter(run__created_by_id=uid)


def activities_visible(user: Any, run: Run) -> QuerySet[Activity]:
    """A run's activities, if `user` may see the run (else none)."""
    activities = Activity.objects.filter(run=run)
    return activities if run_visible(user, run.pk) else activities.none()


def grants_visible(user: Any, grants: QuerySet[Grant] | None = None) -> QuerySet[Grant]:
    grants = Grant.objects.all() if grants is None else grants
    if sees_everything(user):
        return grants
    return grants.filter(session__in=sessions_visible(user))


def approval_scope(user: Any) -> tuple[bool, int | None]:
    """For a live inbox: (sees every approval, else the starter id whose runs' it sees)."""
    return (sees_everything(user) or is_reviewer(user)), _user_id(user)


def run_facets_visible(user: Any, facets: dict[str, Any]) -> bool:
    """Whether a pushed run row (its facets: `started_by_id`, `has_approvals`) is one
    `runs_visible(user)` holds, without a query per push."""
    if sees_everything(user):
        return True
    uid = _user_id(user)
    if uid is None:
        return False
    return facets.get("started_by_id") == uid or (bool(facets.get("has_approvals")) and is_reviewer(user))


# --- Policies: which a person may see and name ---------------------------------------------


def default_ceiling() -> core.RunPolicy:
    """The run policy the administrator's default policy gives a run (the default ceiling)."""
    return _ceiling_of(policy_for_run("")[0])


def ceiling_of(row: Policy | None) -> core.RunPolicy:
    """The run policy an administrator attached: the rule policy's, else the server default.
    Its `approvals.confirm` is inherited class by class from those and, last, from the
    default policy's: friction the default policy asks for holds under every policy that
    does not name the class (`resolve_run_policy`)."""
    default_row = row if row is not None and row.is_default else policy_for_run("")[0]
    floor = None
    if default_row is not None and default_row.run_policy is not None and default_row is not row:
        floor = confirm_layer(core.parse_run_policy(default_row.run_policy))
    return core.resolve_run_policy(
        core.parse_run_policy(row.run_policy) if row is not None and row.run_policy is not None else None,
        core.parse_run_policy(settings.GATEHOUSE_DEFAULT_RUN_POLICY)
        if settings.GATEHOUSE_DEFAULT_RUN_POLICY is not None else None,
        floor,
    )


_ceiling_of = ceiling_of


def policy_loosenings(policy: Policy) -> list[str]:
    """How naming `policy` would loosen what the default policy decides: its rules
    (`strictness.loosenings`) and its run policy (the ceiling a run's own may not pass)."""
    default_row, default_document = policy_for_run("")
    if default_row is not None and default_row.pk == policy.pk:
        return []
    try:
        found = loosenings(policy.document, default_document)
    except core.PolicyError as exc:  # a stored document that no longer compiles: never "as strict"
        return [f"the policy does not compile ({exc.message})"]
    mine, theirs = core.materialise(_ceiling_of(policy)), core.materialise(_ceiling_of(default_row))
    found += [f"run_policy: {describe_loosening(f, mine, theirs, given=True)}" for f in loosened_fields(mine, theirs)]
    return found


def policy_available_to(policy: Policy, user: Any) -> bool:
    """The administrator made the policy available to `user` (directly or through a group)."""
    uid = _user_id(user)
    if uid is None:
        return False
    if policy.available_to_users.filter(pk=uid).exists():
        return True
    return policy.available_to_groups.filter(user__pk=uid).exists()


def policy_choice_problems(policy: Policy, user: Any) -> list[str]:
    """Why `user` may not name `policy` for a run (empty: they may)."""
    if user is None or user.has_perm(OVERRIDE_PERMISSION) or policy_available_to(policy, user):
        return []
    return policy_loosenings(policy)


def policies_usable(user: Any) -> list[Policy]:
    """The policies `user` may name for a run (the console's choices), by name."""
    rows = list(Policy.objects.order_by("name"))
    return [row for row in rows if not policy_choice_problems(row, user)]


def policies_visible(user: Any) -> QuerySet[Policy]:
    """Every policy for those who may view or change policies; the usable ones otherwise."""
    if user is None or any(user.has_perm(p) for p in SEE_POLICIES_PERMISSIONS) or sees_everything(user):
        return Policy.objects.all()
    if _user_id(user) is None or not user.has_perm(START_PERMISSION):
        return Policy.objects.none()
    return Policy.objects.filter(pk__in=[p.pk for p in policies_usable(user)])


__all__ = [
    "activities_visible", "approval_scope", "approvals_visible", "grants_visible", "is_reviewer", "policies_usable",
    "policies_visible", "policy_choice_problems", "policy_loosenings", "run_facets_visible", "run_visible",
    "runs_visible", "sees_everything", "sessions_visible",
]
