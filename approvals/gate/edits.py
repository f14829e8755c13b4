"""Edit before approve (issue 32.3): an edited request, evaluated again in its run.

The reviewer is the person the policy asked, so an edit the policy would ask about is
theirs to approve; an edit the policy would deny or abort (a deny rule, a protected path,
the floor's closed world, a class rule) is refused. Neither the run's grants (they only
narrow an ask) nor its counts (the edit is the same tool call, counted once) change that.
The edit also never takes less than the original: if the edited request's class needs a
typed confirmation or a second reviewer the original did not, it is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from approvals import policy as core
from approvals.errors import ApprovalError
from approvals.models import Approval
from drivers import registry
from runs.errors import RunError
from runs.models import Run, Step

from .paths import floor_holds, path_context


def edits_offered(driver: str, tool: str) -> bool:
    """Whether the run's driver can hand its agent an edited request of this tool."""
    try:
        return tool in registry.descriptor(driver).edits
    except RunError:  # a driver this server no longer knows
        return False


def approval_editable(approval: Approval) -> bool:
    """Whether the card offers Edit and the API takes `edited_input`: a pending permission
    of an editable tool, on a driver that can carry the edit, that needs no second reviewer.
    (Reads `approval.run`: load it with the approval.)"""
    tool = str(approval.request.get("tool") or "")
    return (approval.is_pending and approval.kind == Approval.Kind.PERMISSION and tool in core.EDITABLE_KEYS
            and approval.confirmation != "second-reviewer" and edits_offered(approval.run.driver, tool))


def edit_checked(approval: Approval, edited_input: Any) -> tuple[dict[str, Any], core.Verdict]:
    """The edited request and the policy's verdict on it, or a refusal: edit_unsupported
    (the driver cannot carry it), invalid_edit (the keys), edit_denied (with the `rule`)."""
    run = Run.objects.get(pk=approval.run_id)  # with its policy snapshot (a decision defers it)
    tool = str(approval.request.get("tool") or "")
    if approval.kind != Approval.Kind.PERMISSION or not edits_offered(run.driver, tool):
        raise ApprovalError("edit_unsupported", f"The {run.driver} driver cannot hand an edited {tool or approval.kind} "
                          "request to its agent: approve it as it is, or deny it with a reason.")
    try:
        edited = core.edited_request(approval.request, edited_input)
    except core.PolicyError as exc:
        raise ApprovalError("invalid_edit", exc.message, field=exc.field or "edited_input") from None
    try:
        compiled = core.compile_policy(run.policy_document, version=run.policy_version)
    except core.PolicyError:
        raise ApprovalError("edit_denied", "The run's policy no longer compiles: nothing edited is allowed under it.",
                          rule="policy") from None
    verdict = core.evaluate(compiled, edited, run_view=core.RunView(floor=floor_holds(run)), paths=path_context(run))
    if verdict.decision in ("deny", "abort"):
        raise ApprovalError("edit_denied", f"The policy would refuse the edited request: {verdict.reason}",
                          rule=verdict.rule or "")
    needed = core.confirmation_for(core.confirm_requirements(run.run_policy or {}), edited, verdict)
    if needed[0] and needed != (approval.confirmation, approval.confirmation_word):
        what = "typed confirmation" if needed[0] == "typed" else "a second reviewer"
        raise ApprovalError("edit_denied", f"The edited request needs {what}, which this card does not ask for: "
                          "deny it, and let the agent ask for it.", rule="approvals.confirm")
    return edited, verdict


def step_edit(step_id: int, *, original: Mapping[str, Any], edited: Mapping[str, Any]) -> None:
    """Record the edit on the waiting step: `request` is what runs, `original_request` what
    the agent asked (in the decision's transaction, its run locked)."""
    Step.objects.filter(pk=step_id, original_request__isnull=True).update(request=dict(edited), original_request=dict(original))


def edited_input_of(step: Step) -> dict[str, Any] | None:
    """The input a step runs with when a reviewer edited it, else None (a replay or a
    re-check hands the agent the edited input again)."""
    if step.original_request is None:
        return None
    return dict(step.request.get("input") or {})
