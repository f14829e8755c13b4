"""The doorbell: channel-layer messages sent after a transaction commits.

The database is the mailbox; these messages only wake whoever waits on a row. Services
schedule them with `transaction.on_commit`, so nobody is woken for a write that rolled
back. A lost message costs latency, never correctness: waiters re-read rows on a timer.
"""

from __future__ import annotations

import logging
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


def send_now(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a doorbell that fails must never undo or break a committed write
        logger.exception("could not send %s to group %s", message.get("type"), group)


def send_to_channel_now(channel: str, message: dict[str, Any]) -> None:
    """A message to one named channel (the `drivers` channel the worker listens on)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.send)(channel, message)
    except Exception:  # the reconcile loop picks the run up anyway
        logger.exception("could not send %s to channel %s", message.get("type"), channel)


def send_on_commit(group: str, message: dict[str, Any]) -> None:
    transaction.on_commit(lambda: send_now(group, message))


def listened(group: str) -> bool:
    """False only when the layer can tell that nobody is in the group — the in-memory layer
    of the embedded default, where the consumers live in this process. Rendering fragments
    for nobody was most of a gate call's time (bench/hook_gateway.py); a page that opens
    later reads the rows anyway. Other layers (Redis) cannot tell cheaply: always True."""
    groups = getattr(get_channel_layer(), "groups", None)
    return bool(groups.get(group)) if isinstance(groups, dict) else True


def fragment_on_commit(groups: list[str], render: Any) -> None:
    """Render HTML after commit (so it shows committed rows) and push it to the groups."""

    def push() -> None:
        listening = [group for group in groups if listened(group)]
        if not listening:
            return
        try:
            html = render()
        except Exception:
            logger.exception("could not render a console fragment")
            return
        if not html:
            return
        for group in listening:
            send_now(group, {"type": "console.fragment", "html": html})

    transaction.on_commit(push)
