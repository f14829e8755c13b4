"""A step's words are the approvals' and the drivers' (issue 31): one vocabulary, no mapping."""

from __future__ import annotations

from typing import get_args

from approvals.models import Approval
from approvals.policy import Decision
from drivers.base import Kind
from runs.models import Step


def test_every_way_an_approval_is_decided_is_a_word_of_the_steps_decided_by() -> None:
    # The hand-out copies `Approval.decided_via` into `Step.decided_by` as it is.
    assert set(Approval.Via.values) <= set(Step.DecidedBy.values)
    assert set(Step.DecidedBy.values) - set(Approval.Via.values) == {"external", "person"}


def test_a_steps_kind_is_a_drivers_request_kind_in_the_approvals_words() -> None:
    assert set(Step.Kind.values) == set(get_args(Kind))
    assert set(Step.Kind.values) <= set(Approval.Kind.values)
    assert {k: Step.Kind(k).label for k in Step.Kind.values} == {k: Approval.Kind(k).label for k in Step.Kind.values}


def test_a_steps_verdict_is_one_of_the_policys_decisions() -> None:
    assert set(Step.Verdict.values) == {d.value for d in Decision}
