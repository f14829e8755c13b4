"""PostgreSQL's own doorbell (project/pg_doorbell.py): a decision rings its run's worker
from the database at commit, never on rollback, and a waiting run hears it even when the
channel layer's doorbell is lost; the listener survives its connection being cut."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.db import transaction

from project import pg_doorbell
from tests.console.conftest import make_approval  # noqa: F401  (the console's fixture)
from tests.flow import decide, finished, pending_approval, start_run

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


def test_a_decision_rings_at_commit_and_a_rolled_back_one_never(make_user: Any, make_approval: Any) -> None:  # noqa: F811
    from approvals.services import approval_decide

    alice = make_user("alice")
    kept, undone = make_approval("git push origin kept"), make_approval("git push origin undone")
    conn = _listening()
    try:
        with transaction.atomic():
            approval_decide(approval_id=kept.pk, user=alice, approve=True, hash=kept.hash, via="api")
            assert _heard(conn, timeout=0.3) == []  # not before commit
        assert _heard(conn) == [str(kept.run_id)]

        with pytest.raises(RuntimeError), transaction.atomic():
            approval_decide(approval_id=undone.pk, user=alice, approve=False, hash=undone.hash, via="api")
            raise RuntimeError("the request failed after the decision")
        assert _heard(conn, timeout=0.5) == []
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
        assert _heard(conn, timeout=0.3) == []
        Approval.objects.filter(pk=approval.pk).update(status="expired")
        assert _heard(conn) == [str(approval.run_id)]
    finally:
        conn.close()


async def test_a_waiting_run_hears_its_decision_from_the_database_alone(
    api: Any, worker: Any, settings: Any, monkeypatch: Any
) -> None:
    """The channel layer's doorbell to the run is lost and the run would not re-read its row
    for ten minutes: the decision still reaches it, through PostgreSQL."""
    from project import broadcast

    settings.GATEHOUSE_WAIT_POLL_S = 600
    real_send_now = broadcast.send_now

    def lose_run_doorbells(group: str, message: dict[str, Any], **kwargs: Any) -> None:
        if message.get("type") != "approval.resolved":
            real_send_now(group, message, **kwargs)

    monkeypatch.setattr(broadcast, "send_now", lose_run_doorbells)
    run = await start_run(api, PUSH)
    approval = await pending_approval(api, run["id"])
    await asyncio.sleep(0.2)  # the run is waiting on its doorbell, its first poll done
    assert (await decide(api, approval, "approve")).status_code == 200
    done = await finished(run["id"], timeout=20)
    assert done.status == "completed"


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
    from django.db import connection

    with connection.cursor() as cursor:
        for pid in _listeners():
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


async def _until_listening() -> None:
    while not await sync_to_async(_listeners)():
        await asyncio.sleep(0.05)


async def _until(check: Any) -> None:
    while not check():
        await asyncio.sleep(0.02)
