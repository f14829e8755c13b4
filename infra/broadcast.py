"""The doorbell: channel-layer messages sent after a transaction commits.

The database is the mailbox; these messages only wake whoever waits on a row. Services
schedule them with `transaction.on_commit`, so nobody is woken for a write that rolled
back. A lost message costs latency, never correctness: waiters re-read rows on a timer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from typing import Any

from asgiref.sync import SyncToAsync, async_to_sync
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


# How long a thread waits for an urgent doorbell (a decision's, to the run that waits on
# it) to be handed to the layer before it goes on (with the request's answer, say).
URGENT_WAIT_S = 0.05


def _deliver(send: Any, what: str, *, urgent: bool = False) -> None:
    """Run the layer call `send()` (a coroutine factory) without making the writer wait.

    From a thread an event loop called into (a worker's database thread, a request under
    Daphne) the call is handed to that loop and not awaited: a doorbell never delays a
    write, and a loop that is shutting down (not running) is not waited on — it would never
    answer. `urgent` (a decision ringing the run that waits on it): the thread waits up to
    URGENT_WAIT_S for the send, so that the loop does not run it only in the gaps the rest
    of a request leaves it (measured in the scaled shape: the doorbell reached the worker
    5 ms after commit, behind the request's remaining Python; 1.4 ms when waited for).
    From plain sync code (a management command, a test) it runs here, awaited.
    """
    if _down_since is not None and time.monotonic() < _down_until:
        return  # skipped: the layer failed a moment ago
    loop = _event_loop_of_this_thread()
    if loop is not None:
        if not loop.is_running():
            return
        try:
            future = asyncio.run_coroutine_threadsafe(send(), loop)
        except RuntimeError:  # the loop closed meanwhile
            return
        future.add_done_callback(_sent)
        if urgent:
            with contextlib.suppress(Exception):  # late or failed: `_sent` deals with it
                future.result(timeout=URGENT_WAIT_S)
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


def send_now(group: str, message: dict[str, Any], *, urgent: bool = False) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    _deliver(lambda: layer.group_send(group, message), f"{message.get('type')} to group {group}", urgent=urgent)


def send_to_channel_now(channel: str, message: dict[str, Any], *, urgent: bool = False) -> None:
    """A message to one named channel (the `drivers` channel the worker listens on)."""
    layer = get_channel_layer()
    if layer is None:
        return
    # (Lost, the reconcile loop picks the run up anyway.)
    _deliver(lambda: layer.send(channel, message), f"{message.get('type')} to channel {channel}", urgent=urgent)


def send_on_commit(group: str, message: dict[str, Any], *, urgent: bool = False) -> None:
    """`send_now` after commit. `urgent`: someone waits on it to act (see `_deliver`)."""
    transaction.on_commit(lambda: send_now(group, message, urgent=urgent))


def change_message(fragment: str, **args: Any) -> dict[str, Any]:
    """The console's `console.change` message for one changed fragment (see below)."""
    return {"type": "console.change", "fragment": fragment, "args": args, "token": uuid.uuid4().hex}


class _ConsolePush:
    """The console messages of one transaction, sent after it commits: one message per
    group (`console.changes` when there are several), in the order they were made."""

    def __init__(self) -> None:
        self.by_group: dict[str, list[dict[str, Any]]] = {}

    def add(self, groups: list[str], message: dict[str, Any]) -> None:
        for group in groups:
            self.by_group.setdefault(group, []).append(message)

    def __call__(self) -> None:
        for group, changes in self.by_group.items():
            send_now(group, changes[0] if len(changes) == 1 else {"type": "console.changes", "changes": changes})


def console_on_commit(groups: list[str], message: dict[str, Any]) -> None:
    """After commit, send `message` (a `change_message`) to the console `groups`.

    The changes a transaction makes travel together: a decision changes the approval, the
    run's status and its timeline, which used to be six sends across the layer and is now
    one per group. A change joins the push registered last, when nothing else was
    registered after it in the same savepoint; otherwise it starts a push of its own. So
    the messages keep the order the changes were made in, and a rolled-back savepoint
    takes its changes with it, as Django drops its hooks.
    """
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        for group in groups:
            send_now(group, message)
        return
    # (An `atomic(savepoint=False)` block counts as None here: it cannot roll back alone.)
    savepoints = {sid for sid in connection.savepoint_ids if sid is not None}
    push = None
    if connection.run_on_commit:
        sids, hook, _ = connection.run_on_commit[-1]
        if isinstance(hook, _ConsolePush) and sids - {None} == savepoints:
            push = hook
    if push is None:
        push = _ConsolePush()
        transaction.on_commit(push)
    push.add(groups, message)


def fragment_on_commit(groups: list[str], fragment: str, **args: Any) -> None:
    """After commit, tell the console `groups` that `fragment` changed.

    The message names the fragment (a renderer in `runs.fragments.RENDERERS`) and its ids,
    with a token unique to this change; each console process renders it once, in its
    consumer, however many pages and groups receive it (`runs.fragments.render_once`).
    The writer never renders HTML: a gate or a decision costs a row and a doorbell.
    """
    console_on_commit(groups, change_message(fragment, **args))
