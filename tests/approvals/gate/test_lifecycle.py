"""The step lifecycle table: every allowed move works, every other move is refused."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from approvals.gate import ALLOWED_MOVES, OPEN, TERMINAL, StepMoveRefused, can_move, step_move
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
