"""PostgreSQL's own doorbell: a worker hears a decision from the database that holds it.

On PostgreSQL a trigger (approvals/migrations/0006) notifies the channel
`gatehouse_doorbell` with the run's id whenever an approval leaves `pending`. PostgreSQL
delivers a notification when, and only if, its transaction commits: the decision is
readable the moment the doorbell rings, and a rolled-back one never rings. Each worker
process LISTENs on one connection of its own (`listen`) and wakes the run that waits on
that decision, which then reads its row as ever (the database stays the mailbox; the
notification carries nothing but the run's id).

This replaces, on PostgreSQL, the hop that cost most between a decision and the agent
acting on it: the web process handing the doorbell to Redis after its commit and the
worker hearing it from Redis (2-3 ms in the scaled shape, and the web thread waited for
it). The channel layer's doorbell is still sent — it is the only one on SQLite, and the
second way in when this connection is down — just no longer waited for. A notification
missed while the connection was down is covered by the run's own poll of its row and by
ringing every waiting run once when the connection comes back.

`HandOut` is the rest of that hop: the run the doorbell woke hands its approved permission
out on a second connection of the worker's own, asynchronous, in the worker's event loop —
the fenced statement every path hands an approved permission out with
(`approvals.gate.resolution.allowed_at_once_statement`), prepared on the server, which the
worker hands in (this module knows no app) — instead of a thread hop to Django's database
thread and a connection borrowed from the pool. Anything else (no such row, the connection down) falls back to that path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import psycopg
from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

T = TypeVar("T")

CHANNEL = "gatehouse_doorbell"  # the trigger's (approvals/migrations/0006_resolution_doorbell.py)


def enabled() -> bool:
    """Whether decisions ring through PostgreSQL here (GATEHOUSE_PG_DOORBELL, on by default)."""
    return connections["default"].vendor == "postgresql" and settings.GATEHOUSE_PG_DOORBELL


def _connect_kwargs() -> dict[str, Any]:
    """Django's own connection parameters for the default database, without the parts that
    only Django's cursors use."""
    params = dict(connections["default"].get_connection_params())
    for key in ("cursor_factory", "context", "prepare_threshold", "pool", "server_side_binding"):
        params.pop(key, None)
    return params


async def listen(ring: Callable[[int], None], *, ring_all: Callable[[], None], backoff_max_s: float = 5.0) -> None:
    """LISTEN forever: `ring(run_id)` for each notification; after a lost connection comes
    back, `ring_all()` once (what was decided meanwhile was not heard). Never raises but
    CancelledError; a payload that is not a run id is ignored."""
    backoff, lost = 0.5, False
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(**_connect_kwargs(), autocommit=True)
            async with conn:
                await conn.execute(f"LISTEN {CHANNEL}")
                backoff = 0.5
                if lost:
                    lost = False
                    ring_all()
                async for note in conn.notifies():
                    try:
                        run_id = int(note.payload)
                    except ValueError:
                        logger.warning("ignoring a doorbell notification that is not a run id: %r", note.payload[:100])
                        continue
                    ring(run_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            lost = True
            logger.debug("PostgreSQL doorbell unreachable; retrying in %.1f s", backoff, exc_info=True)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, backoff_max_s)


class HandOut(Generic[T]):
    """The woken run's one-statement hand-out on a connection of this worker's own (see the
    module docstring): `statement(approval_id, owner)` gives the SQL and its parameters,
    `outcome(approval_id, row)` reads the row it returned (None: not that case). One
    statement at a time; `close()` when the worker stops."""

    def __init__(
        self,
        *,
        statement: Callable[[int, str], tuple[str, list[Any]]],
        outcome: Callable[[int, Sequence[Any] | None], T | None],
    ) -> None:
        self._statement = statement
        self._outcome = outcome
        self._conn: Any = None
        self._lock = asyncio.Lock()

    async def allowed_at_once(self, approval_id: int, owner: str) -> T | None:
        """The outcome of handing the approved permission out, or None: not that case, or
        this connection could not run it (the caller takes the general path, which decides
        every case and raises LeaseLost for a lost lease)."""
        sql, params = self._statement(approval_id, owner)
        async with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = await psycopg.AsyncConnection.connect(**_connect_kwargs(), autocommit=True)
                cursor = await self._conn.execute(sql, params, prepare=True)
                row = await cursor.fetchone()
            except asyncio.CancelledError:
                # Mid-statement: the connection's state is unknown; close it without waiting.
                conn, self._conn = self._conn, None
                if conn is not None:
                    conn.pgconn.finish()
                raise
            except psycopg.Error:
                logger.debug("hand-out on the doorbell's connection failed; taking the general path", exc_info=True)
                await self._drop()
                return None
        return self._outcome(approval_id, row)

    @property
    def connected(self) -> bool:
        """Whether the last statement ran (a failed one drops the connection)."""
        return self._conn is not None and not self._conn.closed

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        async with self._lock:
            await self._drop()
