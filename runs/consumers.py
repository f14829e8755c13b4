"""WebSocket consumers of the console: thin pipes from channel-layer groups to the page.

They authenticate, join the groups the domain names (infra.broadcast), and push the
fragment a change names, rendered once per process (runs.fragments.render_once) rather
than in the writer's transaction hook. They never write rows: after a reconnect the page
re-fetches what it shows from the database over HTTP.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import QueryDict

from approvals.access import run_facets_visible, run_visible
from approvals.forms import InboxFilterForm
from approvals.selectors import PendingFilter, pending_ids
from infra import broadcast
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

    async def console_changes(self, event: dict[str, Any]) -> None:
        """The changes of one transaction, together (`broadcast.console_on_commit`)."""
        changes = event.get("changes")
        for change in changes if isinstance(changes, list) else []:
            if isinstance(change, dict) and change.get("type") == "console.change":
                await self.console_change(change)

    async def console_change(self, event: dict[str, Any]) -> None:
        """Something the page shows changed: render it (once per process) and push it."""
        html = await fragments.render_once(event)
        if html:
            await self.send(text_data=html)


GONE_KEPT = 4096  # decided approvals an inbox socket remembers, against a late "added"


class InboxConsumer(ConsoleFragmentConsumer):
    """The inbox, the runs list and the session page: approvals arriving and leaving, runs
    and their status — filtered like the page that opened it.

    The socket URL carries the page's query parameters (`/ws/inbox/?kind=question`, and
    `page=later` past the first page, `view=runs|session`). An approval that matches the
    filter arrives as a card (first page only); one that does not only bumps the page's
    "not shown here" counter; the number waiting that match (#pending-count) is counted
    once at connect and kept by this connection from the facets of each change. A page
    that (re)connects re-reads its cards over HTTP, as every console page does.
    """

    view: str
    filters: PendingFilter | None
    cards_live: bool
    count: int
    outside: set[int]

    def console_groups(self) -> list[str]:
        return [broadcast.INBOX_GROUP]

    async def connect(self) -> None:
        query = QueryDict(self.scope.get("query_string", b"").decode("latin-1"))
        self.view = query.get("view", "inbox")
        form = InboxFilterForm(query, user=self.scope.get("user"))
        self.filters = form.pending_filter() if form.is_valid() else None
        self.cards_live = query.get("page") != "later"
        self.outside, self.waiting, self.gone = set[int](), set[int](), set[int]()
        await super().connect()
        if self.joined and self.view == "inbox" and self.filters is not None:
            self.waiting |= await database_sync_to_async(pending_ids)(filters=self.filters)
            await self.send(text_data=fragments.pending_count_oob(len(self.waiting)))

    async def console_change(self, event: dict[str, Any]) -> None:
        rendered = await fragments.rendered_once(event)
        if not rendered:
            return
        facets = rendered.facets or {}
        if "approval" in facets:
            await self._approval_change(rendered, facets)
        elif "runs" in facets:
            if not run_facets_visible(self.scope.get("user"), facets["runs"]):
                return  # a run row this person may not see (approvals.access)
            if self.view != "session" or (self.filters is not None and self.filters.session_id in (None, facets["runs"].get("session"))):
                await self.send(text_data=str(rendered))
        else:
            await self.send(text_data=str(rendered))

    async def _approval_change(self, rendered: str, facets: dict[str, Any]) -> None:
        if self.view == "runs" or self.filters is None:
            return  # the runs list shows no cards; a page with a bad filter shows none
        if self.filters.visible_to_id is not None and facets["approval"].get("started_by_id") != self.filters.visible_to_id:
            return  # not even counted: an approval this person may not see (approvals.access)
        matches = self.filters.matches(facets["approval"])
        if "added" in facets:
            added = facets["added"]
            if added in self.gone:
                return  # decided already: its removal came first
            if matches and self.cards_live:
                await self._send_counted(str(rendered), added=added)
            elif matches:
                await self._send_counted("", added=added, outside=added)
            elif self.view == "inbox":
                await self._send_counted("", outside=added)
        elif "changed" in facets:
            # a pending card replaced in place ("1 of 2"): only where it is shown; counts unchanged
            if matches and self.cards_live and facets["changed"] not in self.gone:
                await self.send(text_data=str(rendered))
        else:
            removed = facets["removed"]
            self.gone.add(removed)
            if len(self.gone) > GONE_KEPT:  # a page open for days: keep the newest ids
                self.gone = set(sorted(self.gone)[-GONE_KEPT // 2 :])
            html = str(rendered)
            if removed in self.outside:
                self.outside.discard(removed)
                html += fragments.outside_count_oob(len(self.outside))
            await self._send_counted(html, removed=removed)

    async def _send_counted(self, html: str, *, added: int | None = None, removed: int | None = None, outside: int | None = None) -> None:
        if outside is not None and outside not in self.outside:
            self.outside.add(outside)
            html += fragments.outside_count_oob(len(self.outside))
        before = len(self.waiting)
        if added is not None:
            self.waiting.add(added)
        if removed is not None:
            self.waiting.discard(removed)
        if self.view == "inbox" and len(self.waiting) != before:
            html += fragments.pending_count_oob(len(self.waiting))
        if html:
            await self.send(text_data=html)


class RunConsumer(ConsoleFragmentConsumer):
    """One run page: its timeline, header and approvals (for who may see the run)."""

    def console_groups(self) -> list[str]:
        return [broadcast.run_console_group(int(self.scope["url_route"]["kwargs"]["run_id"]))]

    async def connect(self) -> None:
        run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await database_sync_to_async(run_visible)(user, run_id):
            self.joined = []
            await self.close()
            return
        await super().connect()
