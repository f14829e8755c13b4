"""Server-Sent Events: a run's activities and the pending approvals, replayed, resumed from
Last-Event-ID and followed — in process, and through a real `serve` process (Daphne)."""

from __future__ import annotations

import asyncio
import http.client
import json
import time
from collections.abc import AsyncIterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from runs.models import Run

# Asked under the default policy, inside the sandbox floor or not: a remote mutation.
ASKED = "git push origin main"

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"steps": [{"tool": "bash", "input": {"command": ASKED}}]}


def parse(chunks: str) -> list[dict[str, Any]]:
    """SSE text → events ({"id", "event", "data"}) and comments ({"comment"})."""
    out: list[dict[str, Any]] = []
    complete = chunks[: chunks.rfind("\n\n") + 2]  # a block is an event once its blank line arrived
    for block in complete.split("\n\n"):
        if not block.strip():
            continue
        if block.startswith(":"):
            out.append({"comment": block[1:].strip()})
            continue
        event: dict[str, Any] = {}
        for line in block.splitlines():
            key, _, value = line.partition(": ")
            event[key] = json.loads(value) if key == "data" else value
        out.append(event)
    return out


class Stream:
    """An open stream read through Django's AsyncClient (the view's own async generator)."""

    def __init__(self, response: Any) -> None:
        assert response.status_code == HTTPStatus.OK, getattr(response, "content", b"")
        assert response["Content-Type"] == "text/event-stream"
        self.iterator: AsyncIterator[bytes] = aiter(response.streaming_content)
        self.text = ""

    async def until(self, check: Any, timeout: float = 15) -> list[dict[str, Any]]:
        async def read() -> list[dict[str, Any]]:
            while not check(parse(self.text)):
                chunk = await anext(self.iterator)
                self.text += chunk.decode() if isinstance(chunk, bytes) else chunk
            return parse(self.text)

        return await asyncio.wait_for(read(), timeout)

    async def close(self) -> None:
        close = getattr(self.iterator, "aclose", None)
        if close is not None:
            await close()


async def open_stream(path: str, user: Any, last_event_id: str | None = None) -> Stream:
    client = AsyncClient()
    await client.aforce_login(user)
    headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else {}
    return Stream(await client.get(path, headers=headers))


def events_of(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for i in items if "event" in i]


def make_run(**kwargs: Any) -> Run:
    from runs.services import run_create

    return run_create(driver="scripted", scenario=WRITE, run_policy={"approvals": {"timeout_s": -1}}, **kwargs)


def note(run_id: int, text: str) -> None:
    from runs.timeline import activity_record

    activity_record(run_id=run_id, kind="notice", event="notice", payload={"text": text})


async def test_a_run_stream_replays_from_the_start_then_follows_then_ends(reviewer: Any) -> None:
    run = await sync_to_async(make_run)()
    await sync_to_async(note)(run.pk, "one")
    stream = await open_stream(f"/api/v1/runs/{run.pk}/activities/stream/", reviewer)
    items = await stream.until(lambda e: len(events_of(e)) >= 2)
    assert [(e["id"], e["event"]) for e in events_of(items)] == [("1", "run.created"), ("2", "notice")]
    assert events_of(items)[1]["data"]["payload"] == {"text": "one"}
    await sync_to_async(note)(run.pk, "two")
    items = await stream.until(lambda e: len(events_of(e)) >= 3)
    assert events_of(items)[2]["id"] == "3"
    from runs.services import run_finish, run_mark_running

    await sync_to_async(run_mark_running)(run_id=run.pk)
    await sync_to_async(run_finish)(run_id=run.pk, status="completed")
    items = await stream.until(lambda e: any(i.get("event") == "stream.end" for i in e))
    assert [e["event"] for e in events_of(items)][-3:] == ["run.started", "run.completed", "stream.end"]
    assert events_of(items)[-1]["data"]["status"] == "completed"


async def test_a_run_stream_resumes_after_last_event_id(reviewer: Any) -> None:
    run = await sync_to_async(make_run)()
    for text in ("a", "b", "c"):
        await sync_to_async(note)(run.pk, text)
    stream = await open_stream(f"/api/v1/runs/{run.pk}/activities/stream/", reviewer, last_event_id="2")
    items = await stream.until(lambda e: len(events_of(e)) >= 2)
    assert [e["id"] for e in events_of(items)] == ["3", "4"]
    await stream.close()


async def test_a_malformed_last_event_id_is_refused(reviewer: Any) -> None:
    run = await sync_to_async(make_run)()
    client = AsyncClient()
    await client.aforce_login(reviewer)
    response = await client.get(f"/api/v1/runs/{run.pk}/activities/stream/", headers={"Last-Event-ID": "abc", "Accept": "text/event-stream"})
    assert (response.status_code, response.json()["field"]) == (HTTPStatus.BAD_REQUEST, "Last-Event-ID")
    assert response["Content-Type"] == "application/json"
    missing = await client.get("/api/v1/runs/999/activities/stream/")
    assert missing.status_code == HTTPStatus.NOT_FOUND and missing.json()["code"] == "not_found"


async def test_an_idle_stream_gets_keep_alive_comments(reviewer: Any, settings: Any) -> None:
    settings.GATEHOUSE_SSE_KEEPALIVE_S = 0.3
    run = await sync_to_async(make_run)()
    stream = await open_stream(f"/api/v1/runs/{run.pk}/activities/stream/", reviewer)
    items = await stream.until(lambda e: any(i.get("comment") == "keep-alive" for i in e), timeout=5)
    assert events_of(items)[0]["event"] == "run.created"
    await stream.close()


async def test_the_approvals_stream_shows_pending_then_requested_and_resolved(reviewer: Any) -> None:
    from approvals.gate import gate_request
    from approvals.models import Approval
    from approvals.services import approval_decide

    def ask() -> int:
        run = make_run()
        outcome = gate_request(run_id=run.pk, tool="bash", input={"command": ASKED}, cwd=run.workspace, subtype="command")
        assert outcome.approval_id is not None
        return outcome.approval_id

    first = await sync_to_async(ask)()
    stream = await open_stream("/api/v1/approvals/stream/", reviewer)
    items = await stream.until(lambda e: len(events_of(e)) >= 1)
    assert [(e["event"], e["data"]["id"]) for e in events_of(items)] == [("approval.pending", first)]
    second = await sync_to_async(ask)()
    items = await stream.until(lambda e: len(events_of(e)) >= 2)
    requested = events_of(items)[1]
    assert (requested["event"], requested["data"]["id"], requested["data"]["status"]) == ("approval.requested", second, "pending")
    row = await sync_to_async(Approval.objects.get)(pk=second)
    await sync_to_async(approval_decide)(approval_id=second, user=reviewer, approve=True, hash=row.hash, via="api")
    items = await stream.until(lambda e: len(events_of(e)) >= 3)
    resolved = events_of(items)[2]
    assert (resolved["event"], resolved["data"]["id"], resolved["data"]["status"]) == ("approval.resolved", second, "approved")
    await stream.close()

    # A client that saw the request reconnects: it gets what happened after it, only.
    resumed = await open_stream("/api/v1/approvals/stream/", reviewer, last_event_id=requested["id"])
    items = await resumed.until(lambda e: len(events_of(e)) >= 1)
    assert [(e["event"], e["data"]["id"]) for e in events_of(items)] == [("approval.resolved", second)]
    await resumed.close()


async def test_streams_need_the_read_scope(reviewer: Any) -> None:
    from integrations.tokens import token_create

    key = (await sync_to_async(token_create)(user=reviewer, scopes=["hooks"]))[1]
    response = await AsyncClient().get("/api/v1/approvals/stream/", headers={"Authorization": f"Token {key}"})
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.FORBIDDEN, "insufficient_scope")


# --- through the embedded `serve` process -----------------------------------------------------


def sse_lines(port: int, path: str, token: str, *, last_event_id: str | None = None, until: Any, timeout: float = 60) -> list[dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Token {token}", "Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
    text = ""
    deadline = time.monotonic() + timeout
    try:
        while not until(parse(text)) and time.monotonic() < deadline:
            line = response.readline()  # chunked transfer decoded
            if not line:
                break
            text += line.decode()
    finally:
        connection.close()
    return parse(text)


def test_streams_work_through_serve(tmp_path: Path) -> None:
    from tests.processes import child_env, free_port, manage

    env = child_env(GATEHOUSE_VAR_DIR=tmp_path / "var", GATEHOUSE_SSE_POLL_S="0.2")
    assert manage(["migrate", "--noinput", "-v", "0"], env).proc.wait(timeout=120) == 0
    port = free_port()
    server = manage(["serve", "--no-demo", "--host", "127.0.0.1", "--port", str(port)], env)
    try:
        server.wait_for_line("Login link: ")
        token_cmd = manage(["create_api_token", "admin"], env)
        assert token_cmd.proc.wait(timeout=60) == 0
        token = token_cmd.lines[-1].strip()

        def post(path: str, body: Any) -> Any:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("POST", path, json.dumps(body), {"Authorization": f"Token {token}", "Content-Type": "application/json"})
            return json.loads(connection.getresponse().read())

        run = post("/api/v1/runs/", {"driver": "scripted", "scenario": WRITE, "workspace": str(tmp_path)})
        pending = sse_lines(port, "/api/v1/approvals/stream/", token, until=lambda e: len(events_of(e)) >= 1)
        approval = events_of(pending)[0]["data"]
        assert approval["run"] == run["id"] and events_of(pending)[0]["event"] in ("approval.pending", "approval.requested")
        post(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]})
        items = sse_lines(port, f"/api/v1/runs/{run['id']}/activities/stream/", token,
                          until=lambda e: any(i.get("event") == "stream.end" for i in e))
        names = [e["event"] for e in events_of(items)]
        assert names[0] == "run.created" and names[-2:] == ["run.completed", "stream.end"]
        assert [int(e["id"]) for e in events_of(items)[:-1]] == list(range(1, len(names)))
        resumed = sse_lines(port, f"/api/v1/runs/{run['id']}/activities/stream/", token, last_event_id=str(len(names) - 2),
                            until=lambda e: any(i.get("event") == "stream.end" for i in e))
        assert [e["event"] for e in events_of(resumed)] == ["run.completed", "stream.end"]
    finally:
        server.stop()


def test_the_approvals_stream_works_in_the_scaled_shape(tmp_path: Path, settings: Any, reviewer: Any) -> None:
    """A separate daphne web process over channels-redis (the scale-out shape): the stream
    reads the shared database and is woken through Redis; the approval is opened here."""
    import os
    import uuid

    from tests.processes import ManagedProcess, child_env, database_url_of_test_db, free_port, redis_reachable

    if not redis_reachable():
        if os.environ.get("GATEHOUSE_REQUIRE_SERVICES") == "1":
            pytest.fail("Redis is not reachable on 127.0.0.1:6379")
        pytest.skip("Redis is not reachable on 127.0.0.1:6379")
    prefix = f"gh-test-{uuid.uuid4().hex[:8]}"
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": ["redis://127.0.0.1:6379/0"], "prefix": prefix}}
    }
    from integrations.tokens import token_create

    token = token_create(user=reviewer, scopes=["read"])[1]
    port = free_port()
    env = child_env(DATABASE_URL=database_url_of_test_db(), REDIS_URL="redis://127.0.0.1:6379/0", GATEHOUSE_CHANNEL_PREFIX=prefix,
                    GATEHOUSE_VAR_DIR=tmp_path / "web-var", GATEHOUSE_SSE_POLL_S="60", GATEHOUSE_SSE_KEEPALIVE_S="60")
    import sys

    web = ManagedProcess([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "project.asgi:application"], env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/healthz")
                break
            except OSError:
                time.sleep(0.2)

        from approvals.gate import gate_request

        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=50)
        connection.request("GET", "/api/v1/approvals/stream/", headers={"Authorization": f"Token {token}"})
        response = connection.getresponse()
        assert response.status == 200
        assert response.readline() == b": stream open\n"  # the stream is live (its snapshot is empty) ...
        run = make_run()  # ... before the approval is opened, here, in another process
        gate_request(run_id=run.pk, tool="bash", input={"command": ASKED}, cwd=run.workspace, subtype="command")
        started, text = time.monotonic(), ""
        while not events_of(parse(text)):
            line = response.readline()
            assert line, web.lines[-20:]
            text += line.decode()
        connection.close()
        assert [e["event"] for e in events_of(parse(text))] == ["approval.requested"]
        # Woken by the doorbell over Redis: the stream's own re-read would come only after 60 s.
        assert time.monotonic() - started < 40
    finally:
        web.stop()
