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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)

CHANNEL = "gatehouse_doorbell"  # the trigger's (approvals/migrations/0006_resolution_doorbell.py)


def enabled() -> bool:
    """Whether decisions ring through PostgreSQL here (GATEHOUSE_PG_DOORBELL, on by default)."""
    return connections["default"].vendor == "postgresql" and bool(getattr(settings, "GATEHOUSE_PG_DOORBELL", True))


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
    import psycopg

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
