"""The step lifecycle table: every allowed move works, every other move is refused."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from approvals.gate import ALLOWED_MOVES, OPEN, TERMINAL, StepMoveRefused, can_move, step_move
from approvals.gate.lifecycle import step_record
from runs.models import Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

S = Step.Status
STATES = [choice for choice, _ in S.choices]

# The lifecycle as the issue states it, written out once more by hand: the table in
# approvals/gate/lifecycle.py must say exactly this.
EXPECTED = {
    (S.REQUESTED, S.WAITING), (S.REQUESTED, S.ALLOWED), (S.REQUESTED, S.DENIED), (S.REQUESTED, S.ABORTED),
    (S.REQUESTED, S.ANSWERED),
    (S.WAITING, S.ALLOWED), (S.WAITING, S.DENIED), (S.WAITING, S.ABORTED), (S.WAITING, S.ANSWERED),
    (S.ALLOWED, S.EXECUTING), (S.ALLOWED, S.ABORTED),
    (S.EXECUTING, S.FINISHED), (S.EXECUTING, S.WAITING), (S.EXECUTING, S.ABORTED),
}


def test_the_table_is_the_documented_lifecycle() -> None:
    table = {(a, b) for a, moves in ALLOWED_MOVES.items() for b in moves}
    assert table == EXPECTED
    assert set(ALLOWED_MOVES) == set(STATES)
    assert TERMINAL == {S.FINISHED, S.DENIED, S.ABORTED, S.ANSWERED}
    assert OPEN == {S.REQUESTED, S.WAITING, S.ALLOWED, S.EXECUTING}


@pytest.fixture
def step(reviewer: Any) -> Any:
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    return Step.objects.create(run=run, seq=1, tool="bash", request={"tool": "bash", "input": {"command": "ls"}}, verdict="allow")


@pytest.mark.parametrize(("frm", "to"), sorted(itertools.product(STATES, STATES)))
def test_each_move_is_allowed_or_refused_by_the_table(step: Any, frm: str, to: str) -> None:
    Step.objects.filter(pk=step.pk).update(status=frm)
    if (frm, to) in EXPECTED:
        assert can_move(frm, to)
        step_move(step.pk, to)
        assert Step.objects.get(pk=step.pk).status == to
    else:
        assert not can_move(frm, to)
        with pytest.raises(StepMoveRefused):
            step_move(step.pk, to)
        assert Step.objects.get(pk=step.pk).status == frm  # nothing changed


def test_a_move_is_a_compare_and_set_on_where_the_caller_thinks_the_step_is(step: Any) -> None:
    Step.objects.filter(pk=step.pk).update(status=S.WAITING)
    with pytest.raises(StepMoveRefused):
        step_move(step.pk, S.FINISHED, frm=S.EXECUTING)  # it is waiting, not executing
    step_move(step.pk, S.ALLOWED, S.EXECUTING)  # decided and handed out at once
    row = Step.objects.get(pk=step.pk)
    assert row.status == S.EXECUTING and row.started_at is not None
    step_move(step.pk, S.FINISHED, frm=S.EXECUTING)
    row = Step.objects.get(pk=step.pk)
    assert row.status == S.FINISHED and row.finished_at is not None


def test_a_path_through_states_must_follow_the_table(step: Any) -> None:
    Step.objects.filter(pk=step.pk).update(status=S.WAITING)
    with pytest.raises(StepMoveRefused):
        step_move(step.pk, S.DENIED, S.EXECUTING)
    assert Step.objects.get(pk=step.pk).status == S.WAITING


def test_a_finished_step_can_never_move_again(step: Any) -> None:
    Step.objects.filter(pk=step.pk).update(status=S.FINISHED)
    for to in STATES:
        with pytest.raises(StepMoveRefused):
            step_move(step.pk, to)


def test_a_step_decided_at_once_is_inserted_where_its_moves_leave_it(reviewer: Any) -> None:
    from approvals.gate.lifecycle import step_record

    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    fields = {"run": run, "tool": "bash", "request": {"tool": "bash", "input": {"command": "ls"}}, "verdict": "allow"}
    executing = step_record(S.ALLOWED, S.EXECUTING, seq=1, decided_by="policy", **fields)
    assert (executing.status, executing.started_at is not None, executing.finished_at) == (S.EXECUTING, True, None)
    denied = step_record(S.DENIED, seq=2, told="no", **fields)
    assert (denied.status, denied.finished_at is not None) == (S.DENIED, True)
    # the same table as step_move: requested cannot jump to executing or finished
    for path in ((S.EXECUTING,), (S.FINISHED,), (S.ALLOWED, S.FINISHED)):
        with pytest.raises(StepMoveRefused):
            step_record(*path, seq=3, **fields)
    assert Step.objects.filter(run=run).count() == 2


# --- what a refusal says (mutation testing found these unchecked: docs/benchmarks.md) --------


def test_a_refused_move_says_which_step_where_it_is_and_where_it_was_going(step: Any) -> None:
    Step.objects.filter(pk=step.pk).update(status=S.FINISHED)
    with pytest.raises(StepMoveRefused) as refused:
        step_move(step.pk, S.ALLOWED)
    assert (refused.value.step_id, refused.value.to, refused.value.found) == (step.pk, S.ALLOWED, S.FINISHED)
    assert str(refused.value) == f"step {step.pk}: cannot move to allowed from finished"


def test_a_move_of_a_step_that_does_not_exist_is_refused_from_nowhere(step: Any) -> None:
    missing = step.pk + 1000
    with pytest.raises(StepMoveRefused) as refused:
        step_move(missing, S.ALLOWED)
    assert (refused.value.step_id, refused.value.to, refused.value.found) == (missing, S.ALLOWED, None)
    assert str(refused.value) == f"step {missing}: cannot move to allowed from nowhere (no such step)"


def test_a_path_against_the_table_is_refused_naming_the_step_and_the_move(step: Any) -> None:
    with pytest.raises(StepMoveRefused) as refused:
        step_move(step.pk, S.FINISHED, S.ALLOWED)
    assert (refused.value.step_id, refused.value.to, refused.value.found) == (step.pk, S.ALLOWED, S.FINISHED)
    with pytest.raises(StepMoveRefused) as refused:
        step_record(S.FINISHED, run=step.run, seq=2, tool="bash", request={}, verdict="allow")
    assert (refused.value.step_id, refused.value.to, refused.value.found) == (0, S.FINISHED, S.REQUESTED)
    assert not Step.objects.filter(seq=2).exists()


def test_an_empty_path_is_refused_with_why(step: Any) -> None:
    with pytest.raises(ValueError, match="^a step move needs at least one state$"):
        step_move(step.pk)


def test_a_state_outside_the_table_leads_nowhere() -> None:
    assert not can_move("nowhere", S.ALLOWED)


def test_where_a_move_may_start_is_narrowed_never_widened(step: Any) -> None:
    # `frm` naming a state the table does not move from is no licence: finished stays finished.
    Step.objects.filter(pk=step.pk).update(status=S.FINISHED)
    with pytest.raises(StepMoveRefused):
        step_move(step.pk, S.ALLOWED, frm=S.FINISHED)
    assert Step.objects.get(pk=step.pk).status == S.FINISHED
    # A set of states narrows as one state does: waiting is among them, so the move is made.
    Step.objects.filter(pk=step.pk).update(status=S.WAITING)
    step_move(step.pk, S.ALLOWED, frm=frozenset({S.WAITING, S.REQUESTED}))
    assert Step.objects.get(pk=step.pk).status == S.ALLOWED
    Step.objects.filter(pk=step.pk).update(status=S.WAITING)
    with pytest.raises(StepMoveRefused):
        step_move(step.pk, S.ALLOWED, frm=frozenset({S.REQUESTED}))


def test_a_move_named_for_a_run_moves_only_that_runs_step(step: Any, reviewer: Any) -> None:
    other = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    Step.objects.filter(pk=step.pk).update(status=S.WAITING)
    with pytest.raises(StepMoveRefused):
        step_move(step.pk, S.ALLOWED, run_id=other.pk)
    step_move(step.pk, S.ALLOWED, run_id=step.run_id)
    assert Step.objects.get(pk=step.pk).status == S.ALLOWED
