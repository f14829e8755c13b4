"""The channel layer as a test listens to it: join groups, take what arrived, read changes."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import get_channel_layer


async def listen(*groups: str) -> tuple[Any, str]:
    """A new channel of the test's layer, in `groups`."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    for group in groups:
        await layer.group_add(group, channel)
    return layer, channel


async def received(layer: Any, channel: str) -> list[dict[str, Any]]:
    """Every message that arrives on `channel` until none comes for 0.3 s (call it once
    the writes are done; on Redis, what they sent may still be on its way)."""
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(channel), timeout=0.3))
        except TimeoutError:
            return messages


def fragments(message: dict[str, Any]) -> list[str]:
    """The fragments a console message names (`console.change`, or `console.changes`)."""
    changes = message["changes"] if message["type"] == "console.changes" else [message]
    return [change["fragment"] for change in changes]
