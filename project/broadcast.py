"""The doorbell: channel-layer messages sent after a transaction commits.

The database is the mailbox; these messages only wake whoever waits on a row. Services
schedule them with `transaction.on_commit`, so nobody is woken for a write that rolled
back. A lost message costs latency, never correctness: waiters re-read rows on a timer.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any

from asgiref.sync import async_to_sync
from channels.exceptions import ChannelFull
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


def _event_loop_of_this_thread() -> asyncio.AbstractEventLoop | None:
    """The event loop that called into this sync thread (database_sync_to_async), if any."""
    from asgiref.sync import SyncToAsync

    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if loop is None or getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None) != os.getpid():
        return None
    return loop if not loop.is_closed() else None


def _sent(future: Any) -> None:
    if future.cancelled():
        return
    if isinstance(future.exception(), ChannelFull):
        logger.debug("a doorbell was dropped: its channel is full (the layer is up; rows still decide)")
    elif future.exception() is not None:
        logger.debug("a doorbell could not be sent", exc_info=future.exception())
        _failed()
    else:
        _recovered()


def _deliver(send: Any, what: str) -> None:
    """Run the layer call `send()` (a coroutine factory) without making the writer wait.

    From a worker's sync thread the call is handed to its event loop and not awaited: a
    doorbell never delays a write, and a loop that is shutting down (not running) is not
    waited on — it would never answer. From plain sync code (a web request) it runs here.
    """
    if _down_since is not None and time.monotonic() < _down_until:
        return  # skipped: the layer failed a moment ago
    loop = _event_loop_of_this_thread()
    if loop is not None:
        if not loop.is_running():
            return
        try:
            asyncio.run_coroutine_threadsafe(send(), loop).add_done_callback(_sent)
        except RuntimeError:  # the loop closed meanwhile
            pass
        return
    async def call() -> None:
        await send()

    try:
        async_to_sync(call)()
    except ChannelFull:  # a burst (1,000 runs created at once): the layer is up, the rows decide
        logger.debug("dropped %s: its channel is full", what)
    except Exception:  # a doorbell that fails must never undo or break a committed write
        logger.debug("could not send %s", what, exc_info=True)
        _failed()
    else:
        _recovered()


def send_now(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    _deliver(lambda: layer.group_send(group, message), f"{message.get('type')} to group {group}")


def send_to_channel_now(channel: str, message: dict[str, Any]) -> None:
    """A message to one named channel (the `drivers` channel the worker listens on)."""
    layer = get_channel_layer()
    if layer is None:
        return
    # (Lost, the reconcile loop picks the run up anyway.)
    _deliver(lambda: layer.send(channel, message), f"{message.get('type')} to channel {channel}")


def send_on_commit(group: str, message: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_now(group, message))


def change_message(fragment: str, **args: Any) -> dict[str, Any]:
    """The console's `console.change` message for one changed fragment (see below)."""
    return {"type": "console.change", "fragment": fragment, "args": args, "token": uuid.uuid4().hex}


def fragment_on_commit(groups: list[str], fragment: str, **args: Any) -> None:
    """After commit, tell the console `groups` that `fragment` changed.

    The message names the fragment (a renderer in `runs.fragments.RENDERERS`) and its ids,
    with a token unique to this change; each console process renders it once, in its
    consumer, however many pages and groups receive it (`runs.fragments.render_once`).
    The writer never renders HTML: a gate or a decision costs a row and a doorbell.
    """
    message = change_message(fragment, **args)

    def push() -> None:
        for group in groups:
            send_now(group, message)

    transaction.on_commit(push)
