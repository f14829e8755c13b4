"""The hand-out: what the step records and what the driver is told are the same decision.

Each test pins down one thing a mutant of approvals/gate/handout.py changed without any
other test failing (docs/benchmarks.md, "Mutation testing")."""

from __future__ import annotations

from typing import Any

import pytest

from approvals.gate.handout import hand_out, handed_out
from approvals.models import Approval
from runs.models import Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

S = Step.Status


@pytest.fixture
def run(reviewer: Any) -> Any:
    return run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)


def _step(run: Any, kind: str = Approval.Kind.PERMISSION, status: str = S.WAITING) -> Step:
    seq = Step.objects.filter(run=run).count() + 1
    return Step.objects.create(
        run=run,
        seq=seq,
        tool="bash",
        kind=kind,
        status=status,
        verdict="ask",
        request={"tool": "bash", "input": {"command": "make deploy"}},
    )


def test_an_allowed_permission_executes_from_its_hand_out_and_the_driver_runs_the_reviewers_edit(run: Any) -> None:
    step = _step(run)
    edited = {"command": "make deploy --dry-run"}
    told = hand_out(
        step, outcome="allow", reason="looks fine", decided_by="alice", approval_id=7, scope="session", updated_input=edited
    )
    step.refresh_from_db()
    assert (step.status, step.decided_by, step.started_at is not None, step.finished_at) == (S.EXECUTING, "alice", True, None)
    assert (told.step_id, told.outcome, told.reason, told.decided_by) == (step.pk, "allow", "looks fine", "alice")
    assert (told.approval_id, told.scope, told.timed_out) == (7, "session", False)
    assert told.updated_input == edited  # the edited input is what the agent runs


@pytest.mark.parametrize(("outcome", "status"), [("deny", S.DENIED), ("abort", S.ABORTED)])
def test_a_refusal_records_what_the_agent_was_told_and_never_hands_out_an_edited_input(
    run: Any, outcome: str, status: str
) -> None:
    step = _step(run)
    told = hand_out(
        step,
        outcome=outcome,
        reason="not on a Friday",
        decided_by="alice",
        timed_out=True,
        updated_input={"command": "make deploy --dry-run"},
    )
    step.refresh_from_db()
    assert (step.status, step.told, step.decided_by, step.finished_at is not None) == (status, "not on a Friday", "alice", True)
    assert (told.outcome, told.reason, told.timed_out, told.updated_input) == (outcome, "not on a Friday", True, None)


@pytest.mark.parametrize("kind", [Approval.Kind.QUESTION, Approval.Kind.PLAN_REVIEW])
def test_an_answered_question_or_plan_records_the_answers_and_tells_the_agent_its_own_version(run: Any, kind: str) -> None:
    step = _step(run, kind=kind)
    recorded = {"q1": "the secret"}
    told_answers = {"q1": "(a secret answer, given to the agent only)"}
    told = hand_out(
        step,
        outcome="answer" if kind == Approval.Kind.QUESTION else "allow",
        decided_by="alice",
        answers=recorded,
        plan_mode="acceptEdits",
        told_answers=told_answers,
    )
    step.refresh_from_db()
    assert (step.status, step.answers, step.plan_mode, step.decided_by) == (S.ANSWERED, recorded, "acceptEdits", "alice")
    assert (told.answers, told.plan_mode) == (told_answers, "acceptEdits")


def test_without_answers_of_its_own_the_agent_is_told_the_recorded_answers(run: Any) -> None:
    step = _step(run, kind=Approval.Kind.QUESTION)
    told = hand_out(step, outcome="answer", decided_by="alice", answers={"q1": "yes"})
    step.refresh_from_db()
    assert step.answers == {"q1": "yes"}
    assert told.answers == {"q1": "yes"}


def test_by_default_a_hand_out_is_the_policy_s_once_with_nothing_more_said(run: Any) -> None:
    allowed, denied, answered = _step(run), _step(run), _step(run, kind=Approval.Kind.QUESTION)
    told = hand_out(allowed, outcome="allow")
    assert (told.reason, told.decided_by, told.approval_id, told.scope, told.plan_mode) == ("", "policy", None, "once", "")
    hand_out(denied, outcome="deny")
    hand_out(answered, outcome="answer", answers={"q1": "yes"})
    for step in (allowed, denied, answered):
        step.refresh_from_db()
    assert (allowed.decided_by, denied.decided_by, denied.told, answered.plan_mode) == ("policy", "policy", "", "")


def test_a_pending_approval_or_an_unknown_outcome_is_never_handed_out() -> None:
    with pytest.raises(ValueError, match="^a pending approval is not handed out$"):
        handed_out(Approval.Kind.PERMISSION, outcome="wait")
    with pytest.raises(ValueError, match="^unknown outcome 'maybe'$"):
        handed_out(Approval.Kind.PERMISSION, outcome="maybe")  # type: ignore[arg-type]
    assert handed_out(Approval.Kind.PERMISSION, outcome="allow") == ((S.ALLOWED, S.EXECUTING), {"decided_by": "policy"})
    assert handed_out(Approval.Kind.QUESTION, outcome="answer") == (
        (S.ANSWERED,),
        {"decided_by": "policy", "answers": None, "plan_mode": ""},
    )
    assert handed_out(Approval.Kind.PERMISSION, outcome="deny", reason="no") == (
        (S.DENIED,),
        {"decided_by": "policy", "told": "no"},
    )
    assert handed_out(Approval.Kind.PERMISSION, outcome="abort") == ((S.ABORTED,), {"decided_by": "policy", "told": ""})
