"""WebSocket consumers of the console: thin pipes from channel-layer groups to the page.

They authenticate, join the groups the domain names (project.broadcast), and push the
fragment a change names, rendered once per process (runs.fragments.render_once) rather
than in the writer's transaction hook. They never write rows: after a reconnect the page
re-fetches what it shows from the database over HTTP.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from project import broadcast
from runs import fragments


class ConsoleFragmentConsumer(AsyncWebsocketConsumer):
    """Push the fragments of `console.change` messages of `console_groups()` as text frames."""

    joined: list[str]

    def console_groups(self) -> list[str]:
        raise NotImplementedError

    async def connect(self) -> None:
        self.joined = []
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()
            return
        for group in self.console_groups():
            await self.channel_layer.group_add(group, self.channel_name)
            self.joined.append(group)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The console only listens; anything a page sends is ignored."""

    async def console_change(self, event: dict[str, Any]) -> None:
        """Something the page shows changed: render it (once per process) and push it."""
        html = await fragments.render_once(event)
        if html:
            await self.send(text_data=html)


class InboxConsumer(ConsoleFragmentConsumer):
    """The inbox and the runs list: approvals arriving and leaving, runs and their status."""

    def console_groups(self) -> list[str]:
        return [broadcast.INBOX_GROUP]


class RunConsumer(ConsoleFragmentConsumer):
    """One run page: its timeline, header and approvals."""

    def console_groups(self) -> list[str]:
        return [broadcast.run_console_group(int(self.scope["url_route"]["kwargs"]["run_id"]))]
