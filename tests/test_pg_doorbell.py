"""PostgreSQL's own doorbell (infra/pg_doorbell.py): a decision rings its run's worker
from the database at commit, never on rollback, and a waiting run hears it even when the
channel layer's doorbell is lost; the listener survives its connection being cut."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import transaction

from infra import pg_doorbell
from tests.approvals.gate.test_resolution import waiting  # noqa: F401  (a run of `w1` waiting on one approval)
from tests.console.conftest import make_approval  # noqa: F401  (the console's fixture)
from tests.flow import decide, eventually, finished, pending_approval, start_run, watch

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        django_settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        reason="the database's doorbell is PostgreSQL's LISTEN/NOTIFY",
    ),
]

PUSH = {"steps": [{"tool": "bash", "input": {"command": "git push origin main"}}, {"message": "pushed"}]}


def _listening() -> Any:
    import psycopg

    conn = psycopg.connect(**pg_doorbell._connect_kwargs(), autocommit=True)
    conn.execute(f"LISTEN {pg_doorbell.CHANNEL}")
    return conn


def _heard(conn: Any, timeout: float = 1.0) -> list[str]:
    return [note.payload for note in conn.notifies(timeout=timeout, stop_after=1)]


MARK = "gatehouse-test-mark"


def _heard_before_a_mark(conn: Any, timeout: float = 10.0) -> list[str]:
    """What the listener hears before a mark notified now, on a connection of its own.
    PostgreSQL delivers notifications in the order their transactions committed: anything
    rung (and committed) before the mark arrives before it, so hearing the mark first proves
    nothing was rung, without waiting "long enough" for a ring that does not come."""
    import psycopg

    with psycopg.connect(**pg_doorbell._connect_kwargs(), autocommit=True) as other:
        other.execute("SELECT pg_notify(%s, %s)", [pg_doorbell.CHANNEL, MARK])
    heard: list[str] = []
    for note in conn.notifies(timeout=timeout):
        if note.payload == MARK:
            return heard
        heard.append(note.payload)
    raise AssertionError(f"the mark was not heard within {timeout} s (heard before it: {heard})")


def test_a_decision_rings_at_commit_and_a_rolled_back_one_never(make_user: Any, make_approval: Any) -> None:  # noqa: F811
    from approvals.services import approval_decide

    alice = make_user("alice")
    kept, undone = make_approval("git push origin kept"), make_approval("git push origin undone")
    conn = _listening()
    try:
        with transaction.atomic():
            approval_decide(approval_id=kept.pk, user=alice, approve=True, hash=kept.hash, via="api")
            assert _heard_before_a_mark(conn) == []  # not before commit
        assert _heard(conn) == [str(kept.run_id)]

        with pytest.raises(RuntimeError), transaction.atomic():
            approval_decide(approval_id=undone.pk, user=alice, approve=False, hash=undone.hash, via="api")
            raise RuntimeError("the request failed after the decision")
        assert _heard_before_a_mark(conn) == []
        undone.refresh_from_db()
        assert undone.status == "pending"
    finally:
        conn.close()


def test_only_leaving_pending_rings(make_approval: Any) -> None:  # noqa: F811
    """The trigger fires on the move out of `pending`, not on other writes to the row."""
    from approvals.models import Approval

    approval = make_approval("git push origin quiet")
    conn = _listening()
    try:
        Approval.objects.filter(pk=approval.pk).update(reason="edited")
        Approval.objects.filter(pk=approval.pk).update(status="pending")
        assert _heard_before_a_mark(conn) == []
        Approval.objects.filter(pk=approval.pk).update(status="expired")
        assert _heard(conn) == [str(approval.run_id)]
    finally:
        conn.close()


async def test_a_waiting_run_hears_its_decision_from_the_database_alone(
    api: Any, worker: Any, settings: Any, monkeypatch: Any
) -> None:
    """The channel layer's doorbell to the run is lost and the run would not re-read its row
    for ten minutes: the decision still reaches it, through PostgreSQL."""
    from drivers import runcontext
    from infra import broadcast

    settings.GATEHOUSE_WAIT_POLL_S = 600
    real_send_now = broadcast.send_now

    def lose_run_doorbells(group: str, message: dict[str, Any], **kwargs: Any) -> None:
        if message.get("type") != "approval.resolved":
            real_send_now(group, message, **kwargs)

    monkeypatch.setattr(broadcast, "send_now", lose_run_doorbells)
    rounds = watch(monkeypatch, runcontext, "_deadline_in")  # the run found its approval pending and waits
    run = await start_run(api, PUSH)
    approval = await pending_approval(api, run["id"])
    await eventually(lambda: rounds.matching(approval["id"]))  # its first poll done: only a doorbell wakes it now
    assert (await decide(api, approval, "approve")).status_code == 200
    done = await finished(run["id"], timeout=20)
    assert done.status == "completed"
    assert worker.hand_out is not None and worker.hand_out.connected  # handed out on the worker's own connection


async def test_the_listener_comes_back_after_its_connection_is_cut_and_rings_every_run_once() -> None:
    rung: list[int] = []
    all_rung = asyncio.Event()
    listener = asyncio.create_task(pg_doorbell.listen(rung.append, ring_all=all_rung.set, backoff_max_s=0.5))
    try:
        await asyncio.wait_for(_until_listening(), timeout=10)
        await sync_to_async(_notify)("not a run id")
        await sync_to_async(_notify)("41")
        await asyncio.wait_for(_until(lambda: rung == [41]), timeout=10)
        assert not all_rung.is_set()

        await sync_to_async(_cut_listeners)()
        await asyncio.wait_for(all_rung.wait(), timeout=10)  # back, and everyone re-reads once
        await sync_to_async(_notify)("42")
        await asyncio.wait_for(_until(lambda: rung == [41, 42]), timeout=10)
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)


def _notify(payload: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [pg_doorbell.CHANNEL, payload])


def _listeners() -> list[int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = %s AND pid <> pg_backend_pid()",
            [f"LISTEN {pg_doorbell.CHANNEL}"],
        )
        return [row[0] for row in cursor.fetchall()]


def _cut_listeners() -> None:
    for pid in _listeners():
        _terminate(pid)


async def _until_listening() -> None:
    while not await sync_to_async(_listeners)():
        await asyncio.sleep(0.05)


async def _until(check: Any) -> None:
    while not check():
        await asyncio.sleep(0.02)


# -- the woken run's hand-out on the worker's own connection (pg_doorbell.HandOut) ------------


def _hand_out() -> pg_doorbell.HandOut[Any]:
    """The worker's hand-out, as drivers/worker.py builds it."""
    from approvals.gate.resolution import allowed_at_once_outcome, allowed_at_once_statement

    return pg_doorbell.HandOut(statement=allowed_at_once_statement, outcome=allowed_at_once_outcome)


def _decide(approval_id: int, user: Any, *, approve: bool = True, via: str = "api") -> None:
    from approvals.models import Approval
    from approvals.services import approval_decide

    approval_decide(approval_id=approval_id, user=user, approve=approve, hash=Approval.objects.get(pk=approval_id).hash, via=via)


def _step_of(approval_id: int) -> Any:
    from approvals.models import Approval

    return Approval.objects.select_related("step").get(pk=approval_id).step


async def test_the_hand_out_on_the_workers_connection_tells_what_the_one_statement_tells(
    waiting: tuple[int, int], admin_user: Any  # noqa: F811
) -> None:
    from approvals.gate.resolution import _allowed_at_once

    _, approval_id = waiting
    await sync_to_async(_decide)(approval_id, admin_user, via="console")
    hand_out = _hand_out()
    try:
        outcome = await hand_out.allowed_at_once(approval_id, "w1")
    finally:
        await hand_out.close()
    assert outcome is not None and (outcome.outcome, outcome.decided_by, outcome.approval_id) == ("allow", "console", approval_id)
    step = await sync_to_async(_step_of)(approval_id)
    assert (step.pk, step.status, step.decided_by) == (outcome.step_id, "executing", "console") and step.started_at
    # Handed out once: the same statement through Django now finds nothing to do.
    assert await sync_to_async(_allowed_at_once)(approval_id, "w1") is None


async def test_the_workers_hand_out_is_fenced_and_leaves_every_other_case_to_the_general_path(
    waiting: tuple[int, int], admin_user: Any  # noqa: F811
) -> None:
    run_id, approval_id = waiting
    hand_out = _hand_out()
    try:
        assert await hand_out.allowed_at_once(approval_id, "w1") is None  # still pending
        await sync_to_async(_decide)(approval_id, admin_user)
        assert await hand_out.allowed_at_once(approval_id, "w2") is None  # not the owner
        assert hand_out.connected  # (tried: the general path need not try the statement again)
        assert (await sync_to_async(_step_of)(approval_id)).status == "waiting"
        assert await hand_out.allowed_at_once(approval_id, "w1") is not None
    finally:
        await hand_out.close()


async def test_a_cut_hand_out_connection_falls_back_and_the_next_one_reconnects(
    waiting: tuple[int, int], admin_user: Any  # noqa: F811
) -> None:
    _, approval_id = waiting
    hand_out = _hand_out()
    try:
        assert await hand_out.allowed_at_once(approval_id, "w1") is None  # pending; connected now
        pid = hand_out._conn.info.backend_pid
        await sync_to_async(_terminate)(pid)
        await sync_to_async(_decide)(approval_id, admin_user)
        assert await hand_out.allowed_at_once(approval_id, "w1") is None  # failed: the general path decides
        assert not hand_out.connected
        assert (await sync_to_async(_step_of)(approval_id)).status == "waiting"  # nothing half done
        assert await hand_out.allowed_at_once(approval_id, "w1") is not None  # a new connection
    finally:
        await hand_out.close()


def _terminate(pid: int) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
