"""Server-Sent Events: follow a run's activities, or the pending approvals, without polling.

Both are DRF views (token or session authentication, scopes, throttling and the schema as
for every endpoint) whose response streams from an async generator, so under Daphne an
open stream holds no thread. The database is the mailbox: each stream re-reads its rows
(every GATEHOUSE_SSE_POLL_S) and the console's channel-layer groups only wake it early,
so a lost message costs latency, never an event. Events carry `id:` so a client that
reconnects with `Last-Event-ID` resumes after the last event it saw; a comment line every
GATEHOUSE_SSE_KEEPALIVE_S keeps an idle stream open through proxies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.access import approvals_visible, runs_visible
from approvals.api import ApprovalOutput
from approvals.models import Approval
from approvals.selectors import approvals_pending
from infra import broadcast
from project.api import ApiError
from runs.api import ActivityOutput
from runs.events import Event
from runs.models import Activity, Run

BATCH = 200
APPROVAL_EVENTS = (Event.APPROVAL_REQUESTED, Event.APPROVAL_RESOLVED, Event.USER_INPUT_REQUESTED, Event.USER_INPUT_RESOLVED)
# Activities of other runs may commit out of id order (PostgreSQL): look back this far.
LOOKBACK = 500

LAST_EVENT_ID = OpenApiParameter(
    "Last-Event-ID", str, location=OpenApiParameter.HEADER, required=False,
    description="Resume after this event id (sent automatically by EventSource on reconnect).",
)
# One event of the stream (what an EventSource hands its listener); `data` is JSON text.
STREAM_RESPONSE = OpenApiResponse(
    response={
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Resume after it with Last-Event-ID."},
            "event": {"type": "string"},
            "data": {"type": "string", "description": "JSON: the activity, or the approval, as the API shows it."},
        },
        "required": ["data"],
    },
    description="text/event-stream: `id:`, `event:` and `data:` (JSON) lines per event; `: keep-alive` comments.",
)


def frame(*, data: Any, event: str = "", id: int | None = None) -> str:
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if event:
        lines.append(f"event: {event}")
    lines.append("data: " + json.dumps(data, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False))
    return "\n".join(lines) + "\n\n"


def last_event_id(request: Request) -> int | None:
    raw = request.headers.get("Last-Event-ID")
    if raw is None or raw.strip() == "":
        return None
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) > 2**63 - 1:
        raise ApiError("invalid", f"Last-Event-ID must be an event id from this stream, not {raw!r}.", field="Last-Event-ID")
    return int(raw)


class Doorbell:
    """A channel in the groups whose messages mean "something changed, read the rows"."""

    def __init__(self, groups: list[str]) -> None:
        self.groups = groups
        self.layer = get_channel_layer()
        self.channel = ""

    async def __aenter__(self) -> Doorbell:
        if self.layer is not None:
            self.channel = await self.layer.new_channel()
            for group in self.groups:
                await self.layer.group_add(group, self.channel)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.channel:
            for group in self.groups:
                with contextlib.suppress(Exception):
                    await self.layer.group_discard(group, self.channel)

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            if self.channel:
                await asyncio.wait_for(self.layer.receive(self.channel), timeout=max(timeout, 0.01))
            else:
                await asyncio.sleep(max(timeout, 0.01))


class EventStreamRenderer(BaseRenderer):
    """Lets a client ask for `Accept: text/event-stream` (EventSource does)."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return json.dumps(data, cls=DjangoJSONEncoder).encode()


class StreamView(APIView):
    """A stream answers errors as JSON (the one error shape), whatever the client accepts."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(response, Response):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = "application/json"
        return super().finalize_response(request, response, *args, **kwargs)


def event_stream(response_body: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(response_body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return response


async def follow(
    read: Any, groups: list[str], *, finished: Any = None
) -> AsyncIterator[str]:
    """Yield what `read()` returns (frames, already in order) until `finished()` says the
    source is done, with keep-alive comments and the GATEHOUSE_SSE_MAX_S bound."""
    started = last_beat = time.monotonic()
    yield ": stream open\n\n"  # so a client knows at once the stream is live
    async with Doorbell(groups) as bell:
        while True:
            frames = await read()
            for item in frames:
                yield item
            if frames:
                last_beat = time.monotonic()
                continue
            if finished is not None:
                end = await finished()
                if end is not None:
                    yield end
                    return
            now = time.monotonic()
            if now - started >= settings.GATEHOUSE_SSE_MAX_S:
                yield ": stream ends; reconnect with Last-Event-ID\n\n"
                return
            if now - last_beat >= settings.GATEHOUSE_SSE_KEEPALIVE_S:
                yield ": keep-alive\n\n"
                last_beat = now
            wait = min(settings.GATEHOUSE_SSE_POLL_S, settings.GATEHOUSE_SSE_KEEPALIVE_S - (now - last_beat))
            await bell.wait(wait)


# --- a run's activities -------------------------------------------------------------------


def _activities_after(run_id: int, after: int) -> list[str]:
    rows = Activity.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:BATCH]
    return [frame(data=ActivityOutput(a).data, event=a.event, id=a.seq) for a in rows]


def _run_end(run_id: int, after: int) -> str | None:
    run = Run.objects.filter(pk=run_id).values("status", "failure_reason").first()
    if run is None or run["status"] not in Run.FINISHED:
        return None
    if Activity.objects.filter(run_id=run_id, seq__gt=after).exists():
        return None
    return frame(data={"run": run_id, **run}, event="stream.end")


class RunActivityStreamApi(StreamView):
    @extend_schema(parameters=[LAST_EVENT_ID], responses={(200, "text/event-stream"): STREAM_RESPONSE})
    def get(self, request: Request, run_id: int) -> StreamingHttpResponse:
        """The run's activities as Server-Sent Events: from the start (or after
        `Last-Event-ID`, an activity `seq`), then as they happen; `stream.end` once the run
        has finished and everything was sent."""
        run = get_object_or_404(runs_visible(request.user, Run.objects.all()), pk=run_id)
        cursor = [last_event_id(request) or 0]

        async def read() -> list[str]:
            frames = await sync_to_async(_activities_after)(run.pk, cursor[0])
            if frames:
                cursor[0] = int(frames[-1].split("\n", 1)[0][4:])
            return frames

        async def finished() -> str | None:
            return await sync_to_async(_run_end)(run.pk, cursor[0])

        return event_stream(follow(read, [broadcast.run_console_group(run.pk)], finished=finished))


# --- pending approvals ----------------------------------------------------------------------


def _approval_frame(approval: Any, event: str, event_id: int) -> str:
    return frame(data=ApprovalOutput(approval).data, event=event, id=event_id)


def _snapshot(user: Any) -> tuple[list[str], int]:
    """Every pending approval `user` may see as `approval.pending`, and the cursor to follow from."""
    cursor = Activity.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    pending = approvals_visible(user, approvals_pending().select_related("decided_by"))
    return [_approval_frame(a, "approval.pending", cursor) for a in pending], cursor


def _approval_events_after(cursor: int, sent: set[int], floor: int, user: Any) -> list[tuple[int, str]]:
    """Approval activities after `cursor` — and the not yet sent ones a little before it
    (committed late), never before `floor`, where the stream started — of the approvals
    `user` may see."""
    since = max(cursor - LOOKBACK, floor)
    rows = Activity.objects.filter(pk__gt=since, event__in=APPROVAL_EVENTS).exclude(pk__in=sent).order_by("pk")[:BATCH]
    approvals = approvals_visible(user, Approval.objects.select_related("step", "decided_by")).in_bulk(
        [a.payload.get("approval") for a in rows])
    out = []
    for activity in rows:
        approval = approvals.get(activity.payload.get("approval"))
        if approval is not None:
            event = "approval.requested" if activity.event.endswith(".requested") else "approval.resolved"
            out.append((activity.pk, _approval_frame(approval, event, activity.pk)))
        else:
            out.append((activity.pk, ""))
    return out


class ApprovalStreamApi(StreamView):
    @extend_schema(parameters=[LAST_EVENT_ID], responses={(200, "text/event-stream"): STREAM_RESPONSE})
    def get(self, request: Request) -> StreamingHttpResponse:
        """Approvals as Server-Sent Events: without `Last-Event-ID` every pending approval
        first (`approval.pending`), then `approval.requested` and `approval.resolved` as
        they happen (questions included), each with the approval as the API shows it."""
        resume = last_event_id(request)
        user = request.user
        state: dict[str, Any] = {"cursor": resume, "floor": resume, "sent": set(), "snapshot": resume is None}

        async def read() -> list[str]:
            if state["snapshot"]:
                state["snapshot"] = False
                frames, state["cursor"] = await sync_to_async(_snapshot)(user)
                state["floor"] = state["cursor"]
                return frames
            events = await sync_to_async(_approval_events_after)(state["cursor"], state["sent"], state["floor"], user)
            for pk, _ in events:
                state["sent"].add(pk)
                state["cursor"] = max(state["cursor"], pk)
            if len(state["sent"]) > 4 * LOOKBACK:
                state["sent"] = {pk for pk in state["sent"] if pk > state["cursor"] - LOOKBACK}
            return [f for _, f in events if f]

        return event_stream(follow(read, [broadcast.INBOX_GROUP]))
