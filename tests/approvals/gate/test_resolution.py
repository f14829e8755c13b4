"""A waiting run's poll of its approval: cheap while pending, fenced, and one hand-out."""

from __future__ import annotations

from typing import Any

import pytest

from approvals.gate import gate_request, gate_resolution
from approvals.models import Approval, Policy
from approvals.services import approval_decide, policy_save
from runs.leases import LeaseLost, RunHeld, run_claim
from runs.models import Run, Step
from runs.services import run_create, run_mark_running

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(reviewer: Any) -> tuple[int, int]:
    """(run id, approval id): a run owned by worker `w1`, waiting on one approval."""
    policy_save(policy=Policy(name="ask-all", document={"default": "ask"}))
    run = run_create(driver="scripted", prompt="poll", scenario={"steps": [{"message": "m"}]}, policy_name="ask-all", user=reviewer)
    assert run_claim(run_id=run.pk, owner="w1")
    run_mark_running(run_id=run.pk, owner="w1")
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": "date"}, cwd="/tmp", owner="w1")
    assert outcome.outcome == "wait" and outcome.approval_id is not None
    return run.pk, outcome.approval_id


def test_a_pending_poll_is_one_statement_and_the_hand_out_two(
    waiting: tuple[int, int], admin_user: Any, django_assert_num_queries: Any
) -> None:
    run_id, approval_id = waiting
    framing = 2  # the transaction's own two (a savepoint and its release, inside the test's)
    with django_assert_num_queries(1 + framing):
        assert gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1") is None
    hash = Approval.objects.get(pk=approval_id).hash
    approval_decide(approval_id=approval_id, user=admin_user, approve=True, hash=hash)
    # The approval with its run (locked) and step, and the step's move.
    with django_assert_num_queries(2 + framing):
        outcome = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1")
    assert outcome is not None and outcome.outcome == "allow"
    assert Step.objects.get(pk=outcome.step_id).status == Step.Status.EXECUTING
    assert Run.objects.get(pk=run_id).status == Run.Status.RUNNING


def test_the_poll_is_fenced_by_the_lease_on_the_row_it_reads(waiting: tuple[int, int], admin_user: Any) -> None:
    run_id, approval_id = waiting
    approval_decide(approval_id=approval_id, user=admin_user, approve=True, hash=Approval.objects.get(pk=approval_id).hash)
    with pytest.raises(LeaseLost):
        gate_resolution(approval_id=approval_id, retry_supported=False, owner="w2")
    Run.objects.filter(pk=run_id).update(status=Run.Status.CANCELLED)
    with pytest.raises(LeaseLost):  # a finished run is no one's to write to
        gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1")
    step = Approval.objects.select_related("step").get(pk=approval_id).step
    assert step is not None and step.status == Step.Status.WAITING  # nothing was handed out


@pytest.mark.parametrize("woken", [False, True])
def test_a_run_a_worker_holds_is_not_handed_out_to_no_owner(waiting: tuple[int, int], admin_user: Any, woken: bool) -> None:
    """`owner` None (the hook gateway's external runs, which no worker may claim) writes
    unfenced: it must not settle a step the worker holding the run waits on."""
    run_id, approval_id = waiting
    with pytest.raises(RunHeld):  # pending: not even read for no one
        gate_resolution(approval_id=approval_id, retry_supported=False, woken=woken)
    approval_decide(approval_id=approval_id, user=admin_user, approve=True, hash=Approval.objects.get(pk=approval_id).hash)
    with pytest.raises(RunHeld):
        gate_resolution(approval_id=approval_id, retry_supported=False, woken=woken)
    step = Approval.objects.select_related("step").get(pk=approval_id).step
    assert step is not None and step.status == Step.Status.WAITING  # nothing was handed out
    # Released (hibernated, or its worker stopped) the run is no one's: an unowned caller
    # may settle it, as the hook gateway settles its own runs.
    Run.objects.filter(pk=run_id).update(owner="", heartbeat_at=None)
    outcome = gate_resolution(approval_id=approval_id, retry_supported=False, woken=woken)
    assert outcome is not None and outcome.outcome == "allow" and outcome.step_id == step.pk


def test_the_run_waits_while_any_approval_is_pending_and_a_finished_run_is_left_alone(
    waiting: tuple[int, int], admin_user: Any
) -> None:
    from approvals.gate import run_status_sync

    run_id, first = waiting
    second = gate_request(run_id=run_id, tool="bash", input={"command": "uname"}, cwd="/tmp", owner="w1").approval_id
    assert second is not None and Run.objects.get(pk=run_id).status == Run.Status.WAITING

    def decide(approval_id: int) -> None:
        approval_decide(approval_id=approval_id, user=admin_user, approve=True, hash=Approval.objects.get(pk=approval_id).hash)

    decide(first)
    assert Run.objects.get(pk=run_id).status == Run.Status.WAITING  # the second one is still asked
    decide(second)
    assert Run.objects.get(pk=run_id).status == Run.Status.RUNNING
    Run.objects.filter(pk=run_id).update(status=Run.Status.COMPLETED)
    gate_request(run_id=run_id, tool="bash", input={"command": "id"}, cwd="/tmp")  # a pending one on a finished run
    run_status_sync(run_id=run_id)
    assert Run.objects.get(pk=run_id).status == Run.Status.COMPLETED


def test_a_denied_attempt_that_was_asked_again_is_never_handed_out_twice(reviewer: Any, admin_user: Any) -> None:
    """on_reject=retry: the denial opens attempt 2. Polling the first attempt again (a driver
    that re-reads it, a resumed worker) answers from the record: no third attempt, no hand-out."""
    policy_save(policy=Policy(name="ask-retry", document={"default": "ask"}))
    run = run_create(driver="scripted", prompt="retry", scenario={"steps": [{"message": "m"}]}, policy_name="ask-retry",
                     run_policy={"approvals": {"on_reject": "retry", "max_retries": 3}}, user=reviewer)
    assert run_claim(run_id=run.pk, owner="w1")
    run_mark_running(run_id=run.pk, owner="w1")
    first = gate_request(run_id=run.pk, tool="bash", input={"command": "date"}, cwd="/tmp", owner="w1").approval_id
    assert first is not None
    approval_decide(approval_id=first, user=admin_user, approve=False, reason="no", hash=Approval.objects.get(pk=first).hash)
    asked = gate_resolution(approval_id=first, retry_supported=True, owner="w1")
    assert asked is not None and asked.outcome == "wait" and asked.approval_id not in (None, first)
    again = gate_resolution(approval_id=first, retry_supported=True, owner="w1")
    assert Approval.objects.filter(run_id=run.pk).count() == 2  # attempt 1 (denied) and 2 (pending)
    assert again is not None and (again.outcome, again.approval_id) == ("wait", asked.approval_id)  # on attempt 2, never allowed
    step = Step.objects.get(pk=asked.step_id)
    assert step.status == Step.Status.WAITING


# -- the hand-out when the doorbell rang: one statement for an approved permission ------------


def _decided(waiting: tuple[int, int], user: Any, *, approve: bool = True) -> int:
    run_id, approval_id = waiting
    approval_decide(approval_id=approval_id, user=user, approve=approve, hash=Approval.objects.get(pk=approval_id).hash)
    return approval_id


def test_a_woken_worker_hands_out_an_approved_permission_in_one_statement(
    waiting: tuple[int, int], admin_user: Any, django_assert_num_queries: Any
) -> None:
    approval_id = _decided(waiting, admin_user)
    with django_assert_num_queries(1):  # no transaction of its own: one UPDATE, fenced
        outcome = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
    assert outcome is not None and outcome.outcome == "allow" and outcome.approval_id == approval_id
    step = Step.objects.get(pk=outcome.step_id)
    assert (step.status, step.decided_by) == (Step.Status.EXECUTING, "api") and step.started_at is not None


def test_a_woken_worker_that_lost_the_lease_or_whose_run_finished_hands_out_nothing(
    waiting: tuple[int, int], admin_user: Any
) -> None:
    run_id, approval_id = waiting
    _decided(waiting, admin_user)
    with pytest.raises(LeaseLost):
        gate_resolution(approval_id=approval_id, retry_supported=False, owner="w2", woken=True)
    Run.objects.filter(pk=run_id).update(status=Run.Status.CANCELLED)
    with pytest.raises(LeaseLost):
        gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
    step = Approval.objects.select_related("step").get(pk=approval_id).step
    assert step is not None and step.status == Step.Status.WAITING


def test_a_woken_worker_still_waits_on_a_pending_approval_and_follows_a_denial(
    waiting: tuple[int, int], admin_user: Any
) -> None:
    run_id, approval_id = waiting
    # The doorbell rang for another approval of the run: this one is still pending.
    assert gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True) is None
    _decided(waiting, admin_user, approve=False)
    outcome = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
    assert outcome is not None and (outcome.outcome, outcome.reason) == ("deny", "Denied by the reviewer.")
    assert Step.objects.get(pk=outcome.step_id).status == Step.Status.DENIED


@pytest.mark.django_db(transaction=True)
def test_the_one_statement_hand_out_waits_for_a_takeover_in_flight_and_then_hands_out_nothing(
    waiting: tuple[int, int], admin_user: Any
) -> None:
    """PostgreSQL: another worker is taking the run over (its UPDATE of the run row is not
    committed yet). The woken worker's hand-out waits on that row, as `fence` does, then
    sees the new owner: nothing is handed out, the old worker stops (LeaseLost)."""
    import threading
    import time

    from django.db import connection, connections, transaction

    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (SQLite serializes every writer)")
    run_id, approval_id = waiting
    _decided(waiting, admin_user)
    locked, commit = threading.Event(), threading.Event()
    result: dict[str, Any] = {}

    def take_over() -> None:
        try:
            with transaction.atomic():
                Run.objects.filter(pk=run_id).update(owner="w2")
                locked.set()
                commit.wait(30)
        finally:
            connections.close_all()

    def hand_out() -> None:
        try:
            connection.ensure_connection()
            result["pid"] = connection.connection.info.backend_pid
            result["outcome"] = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
        except LeaseLost as exc:
            result["lost"] = exc
        finally:
            connections.close_all()

    taker = threading.Thread(target=take_over)
    taker.start()
    assert locked.wait(30)
    worker = threading.Thread(target=hand_out)
    worker.start()
    # Until the hand-out's statement is seen waiting on the run row's lock (not a timing:
    # the test fails here if the statement does not wait on it).
    deadline = time.monotonic() + 30
    blocked = False
    while time.monotonic() < deadline and not blocked:
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [result.get("pid", -1)])
            row = cursor.fetchone()
        blocked = row is not None and row[0] == "Lock"
        time.sleep(0.02)
    commit.set()
    taker.join(30)
    worker.join(30)
    assert blocked, "the hand-out did not wait on the run row locked by the takeover"
    assert "lost" in result and "outcome" not in result
    step = Approval.objects.select_related("step").get(pk=approval_id).step
    assert step is not None and step.status == Step.Status.WAITING


def test_the_one_statement_hand_out_is_the_lifecycle_s_move_for_an_allowed_permission() -> None:
    """`_allowed_at_once` spells in SQL what `hand_out` does for an approved permission:
    waiting → allowed → executing, recording who decided. If either changes, this fails."""
    from approvals.gate.handout import handed_out
    from approvals.gate.lifecycle import ALLOWED_MOVES

    S = Step.Status
    assert handed_out(Approval.Kind.PERMISSION, outcome="allow", decided_by="person") == (
        (S.ALLOWED, S.EXECUTING), {"decided_by": "person"}
    )
    assert S.ALLOWED in ALLOWED_MOVES[S.WAITING] and S.EXECUTING in ALLOWED_MOVES[S.ALLOWED]


def test_a_woken_worker_never_hands_the_same_step_out_twice(waiting: tuple[int, int], admin_user: Any) -> None:
    """The doorbell rings again after the hand-out (another decision, a duplicate message):
    the step is executing, not waiting, so the statement moves nothing and the general path
    treats the step as one that may have run — a person is asked, it is not allowed again."""
    approval_id = _decided(waiting, admin_user)
    first = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
    assert first is not None and first.outcome == "allow"
    again = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
    assert again is not None and again.outcome == "wait" and again.approval_id != approval_id
    assert Approval.objects.get(pk=again.approval_id).kind == Approval.Kind.INTERRUPTED_SIDE_EFFECT


def test_a_woken_worker_never_hands_out_an_approved_attempt_a_newer_one_replaced(
    waiting: tuple[int, int], admin_user: Any
) -> None:
    """An approved attempt with a newer attempt at the same step (asked again) is not
    handed out by the statement: the newer attempt decides."""
    from approvals.gate.asking import approval_open

    run_id, approval_id = waiting
    _decided(waiting, admin_user)
    older = Approval.objects.select_related("run", "step").get(pk=approval_id)
    assert older.step is not None
    newer = approval_open(run=older.run, step=older.step, kind=older.kind, subtype=older.subtype, request=older.request,
                          presentation=older.presentation, attempt=older.attempt + 1)
    outcome = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1", woken=True)
    assert outcome is not None and outcome.outcome == "wait" and outcome.approval_id == newer.pk
    assert Step.objects.get(pk=older.step.pk).status == Step.Status.WAITING


def test_a_woken_worker_hands_an_approved_plan_out_as_the_general_path_does(reviewer: Any, admin_user: Any) -> None:
    """A plan review is approved, not "allowed to run": the statement leaves it to the
    general path, which answers the step (never `executing`) with the chosen mode."""
    policy_save(policy=Policy(name="ask-all", document={"default": "ask"}))
    run = run_create(driver="scripted", prompt="p", scenario={"steps": [{"message": "m"}]}, policy_name="ask-all", user=reviewer)
    assert run_claim(run_id=run.pk, owner="w1")
    run_mark_running(run_id=run.pk, owner="w1")
    asked = gate_request(run_id=run.pk, tool="ExitPlanMode", input={"plan": "# Plan"}, cwd="/tmp", kind="plan_review",
                         subtype="plan", owner="w1")
    assert asked.outcome == "wait" and asked.approval_id is not None
    approval = Approval.objects.get(pk=asked.approval_id)
    approval_decide(approval_id=approval.pk, user=admin_user, approve=True, hash=approval.hash, mode="accept-edits")
    outcome = gate_resolution(approval_id=approval.pk, retry_supported=False, owner="w1", woken=True)
    assert outcome is not None and (outcome.outcome, outcome.plan_mode) == ("allow", "accept-edits")
    assert Step.objects.get(pk=outcome.step_id).status == Step.Status.ANSWERED


# -- one hand-out of an approved permission, whoever asks (issue 31) --------------------------


@pytest.fixture
def statement_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if an approved permission is handed out by the ORM's `hand_out`
    instead of the one statement; collects the statements that ran (the hand-outs)."""
    from approvals.gate import resolution

    real = resolution.hand_out

    def guarded(step: Step, *, outcome: Any, **fields: Any) -> Any:
        assert not (outcome == "allow" and step.kind == Approval.Kind.PERMISSION), (
            "an approved permission was handed out by hand_out, not by the one statement"
        )
        return real(step, outcome=outcome, **fields)

    monkeypatch.setattr(resolution, "hand_out", guarded)
    ran: list[str] = []
    original = resolution._allowed_at_once

    def counted(approval_id: int, owner: str | None) -> Any:
        outcome = original(approval_id, owner)
        if outcome is not None:
            ran.append("fenced" if owner is not None else "unfenced")
        return outcome

    monkeypatch.setattr(resolution, "_allowed_at_once", counted)
    return ran


def test_a_polled_worker_hands_out_an_approved_permission_by_the_one_statement(
    waiting: tuple[int, int], admin_user: Any, statement_only: list[str]
) -> None:
    """Not woken (the poll's timer): the locked read, then the same statement as a woken
    worker's, fenced by the lease — never the ORM's hand-out."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    approval_id = _decided(waiting, admin_user)
    with CaptureQueriesContext(connection) as queries:
        outcome = gate_resolution(approval_id=approval_id, retry_supported=False, owner="w1")
    assert statement_only == ["fenced"]
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 1 and "RETURNING" in updates[0]  # the statement, not step_move's UPDATE
    assert outcome is not None and outcome.outcome == "allow" and outcome.approval_id == approval_id
    step = Step.objects.get(pk=outcome.step_id)
    assert (step.status, step.decided_by, step.finished_at) == (Step.Status.EXECUTING, "api", None)
    assert step.started_at is not None


def test_an_unowned_run_s_approved_permission_is_handed_out_by_the_one_statement_unfenced(
    reviewer: Any, admin_user: Any, statement_only: list[str]
) -> None:
    """No owner (the hook gateway's external runs, a caller with no lease): the statement
    without the lease's fence, as `fence` is none for them — the same step, the same answer."""
    policy_save(policy=Policy(name="ask-all", document={"default": "ask"}))
    run = run_create(driver="scripted", prompt="p", scenario={"steps": [{"message": "m"}]}, policy_name="ask-all", user=reviewer)
    asked = gate_request(run_id=run.pk, tool="bash", input={"command": "date"}, cwd="/tmp")
    assert asked.approval_id is not None
    _decided((run.pk, asked.approval_id), admin_user)
    outcome = gate_resolution(approval_id=asked.approval_id, retry_supported=False)
    assert statement_only == ["unfenced"]
    assert outcome is not None and (outcome.outcome, outcome.decided_by) == ("allow", "api")
    assert Step.objects.get(pk=outcome.step_id).status == Step.Status.EXECUTING


def test_every_path_leaves_an_approved_permission_s_step_alike(reviewer: Any, admin_user: Any, statement_only: list[str]) -> None:
    """Woken, polled, and unowned: decided alike (once for the session, with a reason), the
    driver hears the same and the steps end alike — one implementation."""
    policy_save(policy=Policy(name="ask-all", document={"default": "ask"}))
    told, steps = [], []
    for owner, woken in (("w-woken", True), ("w-polled", False), (None, False)):
        run = run_create(driver="scripted", prompt="p", scenario={"steps": [{"message": "m"}]}, policy_name="ask-all", user=reviewer)
        if owner is not None:
            assert run_claim(run_id=run.pk, owner=owner)
            run_mark_running(run_id=run.pk, owner=owner)
        asked = gate_request(run_id=run.pk, tool="bash", input={"command": "make deploy"}, cwd="/tmp", owner=owner)
        assert asked.approval_id is not None
        approval = Approval.objects.get(pk=asked.approval_id)
        approval_decide(approval_id=approval.pk, user=admin_user, approve=True, hash=approval.hash, via="console",
                        reason="fine", scope="session" if approval.suggested_grant else "once")
        outcome = gate_resolution(approval_id=approval.pk, retry_supported=False, owner=owner, woken=woken)
        assert outcome is not None
        told.append({k: v for k, v in vars(outcome).items() if k not in ("step_id", "approval_id")})
        step = Step.objects.get(pk=outcome.step_id)
        steps.append((step.status, step.decided_by, step.told, step.answers, step.started_at is not None, step.finished_at))
    assert statement_only == ["fenced", "fenced", "unfenced"]
    assert told[0] == told[1] == told[2] and told[0]["outcome"] == "allow" and told[0]["reason"] == "fine"
    assert steps[0] == steps[1] == steps[2]


def test_an_approved_plan_review_is_still_answered_by_hand_out(reviewer: Any, admin_user: Any, statement_only: list[str]) -> None:
    """What the statement does not cover keeps its path: a plan review is answered (never
    executing), polled as woken."""
    policy_save(policy=Policy(name="ask-all", document={"default": "ask"}))
    run = run_create(driver="scripted", prompt="p", scenario={"steps": [{"message": "m"}]}, policy_name="ask-all", user=reviewer)
    asked = gate_request(run_id=run.pk, tool="ExitPlanMode", input={"plan": "# Plan"}, cwd="/tmp", kind="plan_review",
                         subtype="plan")
    assert asked.approval_id is not None
    approval = Approval.objects.get(pk=asked.approval_id)
    approval_decide(approval_id=approval.pk, user=admin_user, approve=True, hash=approval.hash, mode="accept-edits")
    outcome = gate_resolution(approval_id=approval.pk, retry_supported=False)
    assert outcome is not None and (outcome.outcome, outcome.plan_mode) == ("allow", "accept-edits")
    assert statement_only == []
    assert Step.objects.get(pk=outcome.step_id).status == Step.Status.ANSWERED


def test_the_guard_catches_the_orm_s_allow_for_a_permission(
    waiting: tuple[int, int], admin_user: Any, statement_only: list[str]
) -> None:
    """The fixture above is no empty check: the ORM's allow for a permission trips it."""
    from approvals.gate import resolution

    approval_id = _decided(waiting, admin_user)
    step = Approval.objects.select_related("step").get(pk=approval_id).step
    assert step is not None
    with pytest.raises(AssertionError, match="not by the one statement"):
        resolution.hand_out(step, outcome="allow", decided_by="api", approval_id=approval_id)
    assert Step.objects.get(pk=step.pk).status == Step.Status.WAITING
