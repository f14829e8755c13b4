"""The console's WebSocket consumers push rendered fragments and refuse anonymous sockets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from project.routing import websocket_urlpatterns
from tests.layer import fragments, listen, received

pytestmark = [pytest.mark.django_db(transaction=True)]


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


async def receive_each(comm: WebsocketCommunicator, *needles: str, timeout: float = 5.0) -> dict[str, str]:
    """Wait until a frame containing each needle arrived, in whatever order the layer
    delivers them (the timeline row and the card are sent to two groups: on Redis either
    can come first); returns the first frame for each."""
    found: dict[str, str] = {}
    seen = []
    while len(found) < len(needles):
        try:
            frame = await comm.receive_from(timeout=timeout)
        except Exception as exc:  # TimeoutError from asgiref
            raise AssertionError(f"no frame for {[n for n in needles if n not in found]!r}; got {seen!r}") from exc
        seen.append(frame)
        for needle in needles:
            if needle not in found and needle in frame:
                found[needle] = frame
    return found


async def receive_until(comm: WebsocketCommunicator, needle: str, *, timeout: float = 5.0) -> str:
    """Frames arrive for every change (run rows, status...); wait for the one we expect."""
    return (await receive_each(comm, needle, timeout=timeout))[needle]


async def test_inbox_pushes_a_card_when_an_approval_is_created_and_removes_it_when_resolved(
    make_user: Callable[..., Any], make_approval: Callable[..., Any]
) -> None:
    from approvals.services import approval_decide

    alice = await sync_to_async(make_user)("alice")
    comm = communicator("/ws/inbox/", alice)
    connected, _ = await comm.connect()
    assert connected

    approval = await sync_to_async(make_approval)("git push origin '<b>main</b>'")
    added = await receive_until(comm, f'id="approval-{approval.pk}"')
    assert 'hx-swap-oob="beforeend:#approvals"' in added
    assert "&lt;b&gt;main&lt;/b&gt;" in added and "<b>main" not in added
    assert f"/approvals/{approval.pk}/approve/" in added

    await sync_to_async(approval_decide)(approval_id=approval.pk, user=alice, approve=True, hash=approval.hash, via="console")
    removed = await receive_until(comm, 'hx-swap-oob="delete"')
    assert f'id="approval-{approval.pk}"' in removed

    await comm.disconnect()


async def test_run_socket_pushes_timeline_rows_and_status(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    from approvals.services import approval_decide
    from runs.services import run_create

    alice = await sync_to_async(make_user)("alice")
    run = await sync_to_async(run_create)(driver="scripted", prompt="p", scenario={"steps": [{"message": "x"}]})
    comm = communicator(f"/ws/runs/{run.pk}/", alice)
    assert (await comm.connect())[0]

    from approvals.gate import gate_request

    outcome = await sync_to_async(gate_request)(
        run_id=run.pk, tool="bash", input={"command": "git push origin main"}, cwd=run.workspace, subtype="command"
    )
    # The gate appends two timeline rows (the request, then its approval) and the card; on
    # Redis the three messages may arrive in any order, so each is waited for by what it is.
    tool_row, card = "ev-toolrequested", f'id="approval-{outcome.approval_id}"'
    frames = await receive_each(comm, tool_row, card)
    assert 'hx-swap-oob="beforeend:#timeline"' in frames[tool_row]
    assert "git push origin main" in frames[tool_row]
    assert "git push origin main" in frames[card]

    await sync_to_async(approval_decide)(approval_id=outcome.approval_id, user=alice, approve=False, reason="no", via="console")
    resolved = await receive_until(comm, "by <strong>alice</strong>")
    assert "denied" in resolved

    await comm.disconnect()


async def test_a_decision_reaches_each_console_group_as_one_message_with_all_its_changes(
    make_user: Callable[..., Any], make_approval: Callable[..., Any]
) -> None:
    from approvals.gate.status import run_status_sync
    from approvals.services import approval_decide
    from infra import broadcast
    from runs.services import run_mark_running

    alice = await sync_to_async(make_user)("alice")
    approval = await sync_to_async(make_approval)("git push origin main")
    await sync_to_async(run_mark_running)(run_id=approval.run_id)  # a worker took it ...
    await sync_to_async(run_status_sync)(run_id=approval.run_id)  # ... and it waits on the approval
    run_page, run_channel = await listen(broadcast.run_console_group(approval.run_id))
    inbox, inbox_channel = await listen(broadcast.INBOX_GROUP)
    # (What the set-up sent may still be on its way on Redis: drained first.)
    await received(run_page, run_channel)
    await received(inbox, inbox_channel)

    await sync_to_async(approval_decide)(approval_id=approval.pk, user=alice, approve=True, hash=approval.hash)

    [to_run_page] = await received(run_page, run_channel)
    [to_inbox] = await received(inbox, inbox_channel)
    # The timeline row, the run's status and the card leaving, in the order they were made.
    assert to_run_page["type"] == "console.changes"
    assert fragments(to_run_page) == ["activity_appended", "run_status", "approval_removed"]
    assert fragments(to_inbox) == ["run_status", "approval_removed"]
    assert len({change["token"] for change in to_run_page["changes"]}) == 3  # each rendered once per process


async def test_sockets_from_other_runs_hear_nothing(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    alice = await sync_to_async(make_user)("alice")
    mine = await sync_to_async(make_approval)(user=alice)
    comm = communicator(f"/ws/runs/{mine.run_id}/", alice)
    assert (await comm.connect())[0]
    await sync_to_async(make_approval)()  # another run's request
    assert await comm.receive_nothing(timeout=0.5)
    await comm.disconnect()


async def test_a_run_socket_is_closed_for_who_may_not_see_the_run(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    alice = await sync_to_async(make_user)("alice")
    carol = await sync_to_async(make_user)("carol", superuser=False, perms=("runs.add_run",))
    theirs = await sync_to_async(make_approval)(user=alice)
    for path in (f"/ws/runs/{theirs.run_id}/", "/ws/runs/999999/"):
        comm = communicator(path, carol)
        connected, _ = await comm.connect()
        assert not connected, path
        await comm.disconnect()


@pytest.mark.parametrize("path", ["/ws/inbox/", "/ws/runs/1/"])
async def test_anonymous_sockets_are_closed(path: str) -> None:
    comm = communicator(path, AnonymousUser())
    connected, _ = await comm.connect()
    assert not connected
    await comm.disconnect()


async def test_full_stack_socket_authenticates_with_the_session_cookie(make_user: Callable[..., Any]) -> None:
    """Through project.asgi: origin check, session auth, routing (what the browser uses)."""
    from project.asgi import application

    alice = await sync_to_async(make_user)("alice")
    client = Client()
    await sync_to_async(client.force_login)(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    origin = (b"origin", b"http://127.0.0.1:8000")
    host = (b"host", b"127.0.0.1:8000")  # a browser always sends it (RFC 6455); the origin must match it

    logged_in = WebsocketCommunicator(application, "/ws/inbox/", headers=[host, origin, (b"cookie", cookie)])
    assert (await logged_in.connect())[0]
    await logged_in.disconnect()

    anonymous = WebsocketCommunicator(application, "/ws/inbox/", headers=[host, origin])
    assert not (await anonymous.connect())[0]
    await anonymous.disconnect()

    foreign = WebsocketCommunicator(application, "/ws/inbox/", headers=[host, (b"origin", b"http://evil.example"), (b"cookie", cookie)])
    assert not (await foreign.connect())[0]
    await foreign.disconnect()
