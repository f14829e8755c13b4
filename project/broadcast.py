"""The doorbell: channel-layer messages sent after a transaction commits.

The database is the mailbox; these messages only wake whoever waits on a row. Services
schedule them with `transaction.on_commit`, so nobody is woken for a write that rolled
back. A lost message costs latency, never correctness: waiters re-read rows on a timer.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

INBOX_GROUP = "console.inbox"


def run_group(run_id: int) -> str:
    """The group a run's worker listens on (`approval.resolved`, `run.cancel`)."""
    return f"run-{run_id}"


def run_console_group(run_id: int) -> str:
    """The group the run page's WebSocket listens on (rendered fragments)."""
    return f"console.run-{run_id}"


# While the channel layer is unreachable (Redis down), doorbells are skipped for a moment
# instead of each one waiting for a connection timeout in the writer: a decision must not
# wait on Redis. Waiters find the rows on their timer anyway (the database is the mailbox).
RETRY_AFTER_S = 5.0
_down_since: float | None = None
_down_until = 0.0


def layer_degraded() -> bool:
    """True while the channel layer recently failed (live updates may be missing)."""
    return _down_since is not None


def _failed() -> None:
    global _down_since, _down_until
    now = time.monotonic()
    if _down_since is None:
        _down_since = now
        logger.warning("the channel layer is unreachable: doorbells and live updates are paused (rows still decide)")
    _down_until = now + RETRY_AFTER_S


def _recovered() -> None:
    global _down_since
    if _down_since is not None:
        logger.warning("the channel layer is back after %.1f s", time.monotonic() - _down_since)
        _down_since = None


def send_now(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if _down_since is not None and time.monotonic() < _down_until:
        return  # skipped: the layer failed a moment ago
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a doorbell that fails must never undo or break a committed write
        logger.debug("could not send %s to group %s", message.get("type"), group, exc_info=True)
        _failed()
    else:
        _recovered()


def send_to_channel_now(channel: str, message: dict[str, Any]) -> None:
    """A message to one named channel (the `drivers` channel the worker listens on)."""
    layer = get_channel_layer()
    if layer is None:
        return
    if _down_since is not None and time.monotonic() < _down_until:
        return
    try:
        async_to_sync(layer.send)(channel, message)
    except Exception:  # the reconcile loop picks the run up anyway
        logger.debug("could not send %s to channel %s", message.get("type"), channel, exc_info=True)
        _failed()
    else:
        _recovered()


def send_on_commit(group: str, message: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_now(group, message))


def fragment_on_commit(groups: list[str], fragment: str, **args: Any) -> None:
    """After commit, tell the console `groups` that `fragment` changed.

    The message names the fragment (a renderer in `runs.fragments.RENDERERS`) and its ids,
    with a token unique to this change; each console process renders it once, in its
    consumer, however many pages and groups receive it (`runs.fragments.render_once`).
    The writer never renders HTML: a gate or a decision costs a row and a doorbell.
    """
    message = {"type": "console.change", "fragment": fragment, "args": args, "token": uuid.uuid4().hex}

    def push() -> None:
        for group in groups:
            send_now(group, message)

    transaction.on_commit(push)
