"""After-commit messages: a transaction's console changes travel together, one message per
group (a decision's: tests/console/test_consumers.py), and a decision's doorbell is on the
layer before the deciding thread goes on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

from infra import broadcast
from tests.layer import fragments, listen, received

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_changes_of_a_rolled_back_savepoint_are_never_sent() -> None:
    layer, channel = await listen("console.test")

    def write() -> None:
        with transaction.atomic():
            broadcast.fragment_on_commit(["console.test"], "kept", n=1)
            try:
                with transaction.atomic():
                    broadcast.fragment_on_commit(["console.test"], "rolled_back", n=2)
                    raise RuntimeError("undo this savepoint")
            except RuntimeError:
                pass
            with transaction.atomic(savepoint=False):  # cannot roll back alone: travels with the rest
                broadcast.fragment_on_commit(["console.test"], "kept_too", n=3)

    await sync_to_async(write)()
    [message] = await received(layer, channel)
    assert fragments(message) == ["kept", "kept_too"]


async def test_changes_outside_a_transaction_are_sent_at_once() -> None:
    layer, channel = await listen("console.test")
    await sync_to_async(broadcast.fragment_on_commit)(["console.test"], "alone", n=1)
    [message] = await received(layer, channel)
    assert message["type"] == "console.change" and message["fragment"] == "alone"


async def test_an_urgent_doorbell_is_on_the_layer_when_the_deciding_thread_goes_on(monkeypatch: Any) -> None:
    layer, channel = await listen("run-1")
    sent = []
    group_send = layer.group_send

    async def recorded(group: str, message: dict[str, Any]) -> None:
        await group_send(group, message)
        sent.append(message["type"])  # the layer has it (in memory, or Redis answered)

    monkeypatch.setattr(layer, "group_send", recorded)

    def decide_and_look() -> list[str]:
        # The thread an event loop called into (a request under Daphne, a worker's database
        # thread): an ordinary send is only handed to the loop; an urgent one is waited for.
        broadcast.send_now("run-1", {"type": "approval.resolved", "approval_id": 1}, urgent=True)
        return list(sent)

    assert await sync_to_async(decide_and_look)() == ["approval.resolved"]
    assert [m["type"] for m in await received(layer, channel)] == ["approval.resolved"]


async def test_an_urgent_doorbell_does_not_hold_the_thread_when_the_layer_never_answers(monkeypatch: Any) -> None:
    layer = get_channel_layer()
    never = asyncio.Event()

    async def hanging_send(group: str, message: dict[str, Any]) -> None:
        await never.wait()

    monkeypatch.setattr(layer, "group_send", hanging_send)
    # Returns (after URGENT_WAIT_S): the layer's silence costs the decision nothing more.
    await asyncio.wait_for(sync_to_async(broadcast.send_now)("run-1", {"type": "approval.resolved"}, urgent=True), 30)
    assert not broadcast.layer_degraded()  # not failed, only late: nothing to report yet
    never.set()


async def test_a_change_joins_only_the_push_registered_last_so_the_order_is_kept() -> None:
    layer, channel = await listen("console.test")

    def write() -> None:
        with transaction.atomic():
            broadcast.fragment_on_commit(["console.test"], "first", n=1)
            with transaction.atomic():  # a savepoint that is kept
                broadcast.fragment_on_commit(["console.test"], "second", n=2)
            broadcast.fragment_on_commit(["console.test"], "third", n=3)

    await sync_to_async(write)()
    # "third" came after the savepoint's "second": it does not join "first" ahead of it.
    # (Separate messages may cross on Redis; one message keeps its changes in order.)
    messages = [fragments(message) for message in await received(layer, channel)]
    assert sorted(messages) == [["first"], ["second"], ["third"]]
