"""Prepared querysets: compiled once, they give what the ORM gives, or refuse the shape."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from approvals.gate import RUN_UNREAD
from project.prepared import Prepared
from runs.models import AgentSession, Run, Step
from runs.services import run_create, session_create

pytestmark = pytest.mark.django_db


def _runs(user: Any, n: int = 3) -> list[Run]:
    session = session_create(user=user, title="prepared")
    return [run_create(driver="scripted", prompt=f"run {i}", scenario={"steps": [{"message": "hi"}]}, session=session, user=user) for i in range(n)]


def _same(a: Run, b: Run) -> None:
    assert a.pk == b.pk
    assert a.get_deferred_fields() == b.get_deferred_fields()
    loaded = [f.attname for f in Run._meta.concrete_fields if f.attname not in a.get_deferred_fields()]
    assert [getattr(a, name) for name in loaded] == [getattr(b, name) for name in loaded]
    assert a.session.runtime_mode == b.session.runtime_mode
    assert a.session.get_deferred_fields() == b.session.get_deferred_fields()


def test_a_prepared_select_related_read_builds_the_rows_the_orm_builds(reviewer: Any) -> None:
    runs = _runs(reviewer)
    build = lambda run_id: Run.objects.select_related("session").defer(*RUN_UNREAD).filter(pk=run_id)  # noqa: E731
    prepared: Prepared[Run] = Prepared(build, int)
    for run in runs:
        found = prepared.first(run.pk)
        assert found is not None
        _same(found, build(run.pk).get())
        # The related row came with it: reading it costs no statement.
        with CaptureQueriesContext(connection) as queries:
            assert isinstance(found.session, AgentSession)
        assert len(queries) == 0
    assert prepared.first(10**9) is None


def test_a_prepared_read_is_one_statement_with_the_calls_values(reviewer: Any) -> None:
    runs = _runs(reviewer)
    prepared: Prepared[Run] = Prepared(lambda user_id, prompt: Run.objects.filter(created_by_id=user_id, prompt=prompt), int, str)
    prepared.all(reviewer.pk, "run 0")  # compiled here
    with CaptureQueriesContext(connection) as queries:
        assert [r.pk for r in prepared.all(reviewer.pk, "run 2")] == [runs[2].pk]
        assert prepared.all(reviewer.pk + 1, "run 2") == []
    assert len(queries) == 2


def test_prepared_values_lists_give_tuples_and_flat_values(reviewer: Any) -> None:
    run = _runs(reviewer, 1)[0]
    for seq in (1, 2, 3):
        Step.objects.create(run=run, seq=seq, tool="bash", request={}, status=Step.Status.FINISHED)
    last: Prepared[int] = Prepared(lambda run_id: Step.objects.filter(run_id=run_id).order_by("-seq").values_list("seq", flat=True)[:1], int)
    assert last.first(run.pk) == 3
    assert last.first(run.pk + 1) is None
    pairs: Prepared[tuple[int, str]] = Prepared(
        lambda run_id: Step.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "status"), int
    )
    assert pairs.all(run.pk) == [(1, "finished"), (2, "finished"), (3, "finished")]


def test_annotations_are_set_on_the_rows(reviewer: Any) -> None:
    run = _runs(reviewer, 1)[0]
    Step.objects.create(run=run, seq=1, tool="bash", request={}, status=Step.Status.FINISHED)
    counted: Prepared[Run] = Prepared(lambda run_id: Run.objects.annotate(n=Count("steps")).filter(pk=run_id), int)
    found = counted.first(run.pk)
    assert found is not None and found.n == 1  # type: ignore[attr-defined]


@pytest.mark.django_db(transaction=True)
def test_a_prepared_lock_is_refused_outside_a_transaction_even_after_it_compiled(reviewer: Any) -> None:
    run = _runs(reviewer, 1)[0]
    locked: Prepared[Run] = Prepared(lambda run_id: Run.objects.select_for_update().filter(pk=run_id), int)
    with transaction.atomic():
        assert locked.first(run.pk) is not None
    with pytest.raises(transaction.TransactionManagementError):
        locked.first(run.pk)


def test_a_shape_whose_argument_does_not_reach_the_sql_as_given_is_refused(reviewer: Any) -> None:
    # icontains wraps the value in %...%: the call's value would not be the parameter.
    wrapped: Prepared[Run] = Prepared(lambda prompt: Run.objects.filter(prompt__icontains=prompt), str)
    with pytest.raises(ValueError, match="do not reach the SQL"):
        wrapped.all("x")
    # A shape that drops an argument is refused too, not run without it.
    dropped: Prepared[Run] = Prepared(lambda run_id: Run.objects.all(), int)
    with pytest.raises(ValueError, match="do not reach the SQL"):
        dropped.all(1)


def test_arguments_must_have_the_declared_types_and_number(reviewer: Any) -> None:
    prepared: Prepared[Run] = Prepared(lambda run_id: Run.objects.filter(pk=run_id), int)
    with pytest.raises(TypeError):
        prepared.all("1")
    with pytest.raises(TypeError):
        prepared.all(True)  # a bool is not an id
    with pytest.raises(TypeError):
        prepared.all(1, 2)
    with pytest.raises(TypeError):
        Prepared(lambda when: Run.objects.filter(created_at=when), float).all(1.0)


def test_prefetching_shapes_are_refused(reviewer: Any) -> None:
    prefetching: Prepared[Run] = Prepared(lambda run_id: Run.objects.prefetch_related("steps").filter(pk=run_id), int)
    with pytest.raises(ValueError, match="prefetch"):
        prefetching.all(1)
    values: Prepared[dict[str, Any]] = Prepared(lambda run_id: Run.objects.filter(pk=run_id).values("id"), int)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not supported"):
        values.all(1)
