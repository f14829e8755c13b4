"""Prepared querysets: compiled once, they give what the ORM gives, or refuse the shape."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count, Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals.gate import RUN_UNREAD
from infra.prepared import Prepared, PreparedUpdate
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


def test_an_id_beyond_the_databases_integers_names_no_row(reviewer: Any) -> None:
    # (A path like /api/v1/approvals/299398435349782914400256/answer/ must answer 404, not 500.)
    run = _runs(reviewer, 1)[0]
    read: Prepared[Run] = Prepared(lambda run_id: Run.objects.filter(pk=run_id), int)
    update = PreparedUpdate(lambda run_id, prompt: (Run.objects.filter(pk=run_id), {"prompt": prompt}), int, str)
    for huge in (2**63, -(2**63) - 1, 299398435349782914400256):
        assert read.first(huge) is None
        assert update.run(huge, "changed") == 0
    assert read.first(run.pk) is not None and update.run(run.pk, "changed") == 1


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


# --- PreparedUpdate ------------------------------------------------------------------------


def _orm_claim(run_id: int, owner: str, now: Any, clock_now: Any) -> int:
    """The claim as the ORM compiles it on every call (what `runs.leases.run_claim` was)."""
    from runs import leases

    return (
        leases._workable().filter(pk=run_id).filter(leases._lease_free(now) | Q(owner=owner))
        .filter(leases._awake_or_due(clock_now)).update(owner=owner, heartbeat_at=now)
    )


def _claim_states(reviewer: Any) -> list[tuple[str, Run]]:
    """Runs in every state the claim tells apart: free, held (fresh, stale, by the claimer),
    finished, external, asleep (waiting on a person, decided, past its deadline, cancelled)."""
    from approvals.models import Approval

    now = timezone.now()
    runs = _runs(reviewer, 10)
    states: list[tuple[str, dict[str, Any]]] = [
        ("free", {}), ("held by another", {"owner": "w2", "heartbeat_at": now}),
        ("stale lease", {"owner": "w2", "heartbeat_at": now - timedelta(hours=1)}),
        ("held by the claimer", {"owner": "w1", "heartbeat_at": now}), ("finished", {"status": "completed"}),
        ("external", {"driver": "claude-code-hook"}),
        ("asleep, waiting", {"hibernated_at": now}), ("asleep, decided", {"hibernated_at": now}),
        ("asleep, past its deadline", {"hibernated_at": now}), ("asleep, cancel asked", {"hibernated_at": now, "cancel_requested": True}),
    ]
    for run, (name, fields) in zip(runs, states, strict=True):
        Run.objects.filter(pk=run.pk).update(**fields)
        if name.startswith("asleep"):
            step = Step.objects.create(run=run, seq=1, tool="bash", request={}, status=Step.Status.WAITING)
            deadline = now - timedelta(minutes=1) if "deadline" in name else now + timedelta(hours=1)
            status = Approval.Status.APPROVED if "decided" in name else Approval.Status.PENDING
            Approval.objects.create(run=run, step=step, kind="permission", request={}, hash="h", deadline=deadline, status=status)
    return [(name, run) for run, (name, _) in zip(runs, states, strict=True)]


def test_the_prepared_claim_changes_exactly_the_rows_the_orms_update_changes(reviewer: Any) -> None:
    from runs.leases import run_claim

    expected = {"free": True, "held by another": False, "stale lease": True, "held by the claimer": True, "finished": False,
                "external": False, "asleep, waiting": False, "asleep, decided": True, "asleep, past its deadline": True,
                "asleep, cancel asked": True}
    for name, run in _claim_states(reviewer):
        before = Run.objects.values().get(pk=run.pk)
        with transaction.atomic():
            by_orm = _orm_claim(run.pk, "w1", timezone.now(), timezone.now())
            orm_row = Run.objects.values("owner").get(pk=run.pk)
            transaction.set_rollback(True)
        assert Run.objects.values().get(pk=run.pk) == before
        assert run_claim(run_id=run.pk, owner="w1") is bool(by_orm) is expected[name], name
        after = Run.objects.values().get(pk=run.pk)
        assert after["owner"] == orm_row["owner"], name
        if expected[name]:
            assert after["heartbeat_at"] is not None and after["heartbeat_at"] > timezone.now() - timedelta(seconds=5)


def test_a_prepared_update_is_one_statement_and_takes_datetimes_as_the_backend_stores_them(reviewer: Any) -> None:
    runs = _runs(reviewer, 2)
    when = timezone.now() - timedelta(days=3)
    touch = PreparedUpdate(lambda run_id, owner, at: (Run.objects.filter(pk=run_id), {"owner": owner, "heartbeat_at": at}),
                           int, str, datetime)
    assert touch.run(runs[0].pk, "w1", when) == 1  # compiled here
    with CaptureQueriesContext(connection) as queries:
        assert touch.run(runs[1].pk, "w2", when + timedelta(microseconds=7)) == 1
        assert touch.run(10**9, "w3", when) == 0
    assert len(queries) == 2
    assert Run.objects.get(pk=runs[0].pk).heartbeat_at == when
    assert Run.objects.get(pk=runs[1].pk).heartbeat_at == when + timedelta(microseconds=7)
    older = PreparedUpdate(lambda at: (Run.objects.filter(heartbeat_at__lt=at), {"owner": ""}), datetime)
    assert older.run(when + timedelta(microseconds=1)) == 1  # the first run only: compared as datetimes, not text
    assert Run.objects.get(pk=runs[0].pk).owner == "" and Run.objects.get(pk=runs[1].pk).owner == "w2"


def test_prepared_update_shapes_that_cannot_be_compiled_once_are_refused(reviewer: Any) -> None:
    related = PreparedUpdate(lambda run_id: (Run.objects.filter(pk=run_id), {"session__title": "x"}), int)
    with pytest.raises(Exception):  # noqa: B017 - Django refuses a join in an update's values
        related.run(1)
    dropped = PreparedUpdate(lambda run_id: (Run.objects.all(), {"owner": "x"}), int)
    with pytest.raises(ValueError, match="do not reach the SQL"):
        dropped.run(1)
    touch = PreparedUpdate(lambda at: (Run.objects.filter(heartbeat_at=at), {"owner": "x"}), datetime)
    with pytest.raises(TypeError, match="naive"):
        touch.run(datetime(2026, 1, 1))  # noqa: DTZ001 - the point: a naive datetime is refused
    with pytest.raises(TypeError):
        touch.run("2026-01-01")
