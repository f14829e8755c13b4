"""Who may start a run without the sandbox floor, and which runs this server cannot start.

Called once by `runs.services.run_create`, after the run policy is resolved:

1. `sandbox: unrestricted` (no floor) in the run's or session's run policy needs the
   permission `runs.run_unsandboxed` (403 `sandbox_unrestricted_forbidden`); the
   administrator's ceiling is checked beside it as for every field. A rule policy whose
   own run policy an administrator set to `unrestricted` is their choice, not the starter's.
2. A run that needs a floor (every run but an `unrestricted` one, unless the
   administrator turned the floor off with GATEHOUSE_SANDBOX=off) is refused 400
   `sandbox_unavailable`, with the reason, where this machine cannot build one: never
   silently without a floor. External runs (the hook gateway) run elsewhere: no floor here.
"""

from __future__ import annotations

from typing import Any

from approvals.policy import RunPolicy
from drivers import runfloor
from runs.errors import RunError

UNSANDBOXED_PERMISSION = "runs.run_unsandboxed"


def may_run_unsandboxed(user: Any) -> bool:
    """`user=None` is a trusted internal caller (a management command, a test)."""
    return user is None or bool(user.has_perm(UNSANDBOXED_PERMISSION))


def run_floor_check(*, effective: RunPolicy, requested: RunPolicy | None, descriptor: Any, user: Any) -> None:
    """Refuse the run (`RunError`) as the module docstring says; return when it may start."""
    if getattr(descriptor, "external", False):
        return
    if requested is not None and requested.sandbox == "unrestricted" and not may_run_unsandboxed(user):
        error = RunError(
            "sandbox_unrestricted_forbidden",
            f"sandbox unrestricted runs the agent without the OS sandbox floor; that needs the permission "
            f"{UNSANDBOXED_PERMISSION} (ask an administrator).",
            field="sandbox",
        )
        error.status = 403
        raise error
    reason = runfloor.unavailable_reason({"sandbox": effective.sandbox})
    if reason:
        raise RunError(
            "sandbox_unavailable",
            f"This run needs the OS sandbox floor, which this server cannot build: {reason}. "
            "An administrator can install it, or turn the floor off explicitly with GATEHOUSE_SANDBOX=off.",
            field="sandbox",
            reason=reason,
        )
