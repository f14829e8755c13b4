"""Live updates of a filtered inbox: a new request that matches arrives as a card, any other
only bumps the "not shown here" counter, and the count of matching requests stays right."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.console.test_consumers import communicator, receive_until

pytestmark = [pytest.mark.django_db(transaction=True)]


def count_in(frame: str, element: str) -> int | None:
    match = re.search(rf'<span id="{element}"[^>]*data-count="(\d+)"', frame)
    return int(match.group(1)) if match else None


async def test_a_filtered_inbox_gets_matching_cards_and_counts_the_others(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    from approvals.services import approval_decide

    alice = await sync_to_async(make_user)("alice")
    await sync_to_async(make_approval)("git push origin before", driver="codex")  # already waiting, matches
    comm = communicator("/ws/inbox/?driver=codex", alice)
    assert (await comm.connect())[0]
    assert count_in(await comm.receive_from(timeout=5), "pending-count") == 1  # counted at connect

    other = await sync_to_async(make_approval)("git push origin scripted")
    bumped = await receive_until(comm, 'id="outside-count"')
    assert count_in(bumped, "outside-count") == 1 and f'id="approval-{other.pk}"' not in bumped

    match = await sync_to_async(make_approval)("git push origin codex", driver="codex")
    added = await receive_until(comm, f'id="approval-{match.pk}"')
    assert 'hx-swap-oob="beforeend:#approvals"' in added and count_in(added, "pending-count") == 2

    await sync_to_async(approval_decide)(approval_id=match.pk, user=alice, approve=True, hash=match.hash, via="console")
    removed = await receive_until(comm, 'hx-swap-oob="delete"')
    assert f'id="approval-{match.pk}"' in removed and count_in(removed, "pending-count") == 1

    await sync_to_async(approval_decide)(approval_id=other.pk, user=alice, approve=False, hash=other.hash, via="console")
    gone = await receive_until(comm, f'id="approval-{other.pk}" hx-swap-oob="delete"')
    assert count_in(gone, "outside-count") == 0
    await comm.disconnect()


async def test_a_later_page_only_counts_new_requests_and_the_runs_list_gets_no_cards(
    make_user: Callable[..., Any], make_approval: Callable[..., Any]
) -> None:
    alice = await sync_to_async(make_user)("alice")
    later = communicator("/ws/inbox/?page=later", alice)
    runs = communicator("/ws/inbox/?view=runs", alice)
    assert (await later.connect())[0] and (await runs.connect())[0]
    await later.receive_from(timeout=5)  # the count at connect

    approval = await sync_to_async(make_approval)()
    frame = await receive_until(later, 'id="outside-count"')
    assert f'id="approval-{approval.pk}"' not in frame and count_in(frame, "pending-count") == 1
    row = await receive_until(runs, f'id="run-row-{approval.run_id}"')
    assert "approval-" not in row
    await later.disconnect()
    await runs.disconnect()


async def test_a_session_page_hears_only_its_session(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    alice = await sync_to_async(make_user)("alice")
    mine = await sync_to_async(make_approval)("git push origin mine")
    comm = communicator(f"/ws/inbox/?session={mine.run.session_id}&view=session", alice)
    assert (await comm.connect())[0]
    other = await sync_to_async(make_approval)("git push origin other")
    from runs.services import run_create

    session = await sync_to_async(lambda: mine.run.session)()
    follow_up = await sync_to_async(run_create)(driver="scripted", scenario={"steps": [{"message": "x"}]}, session=session)
    frame = await receive_until(comm, f'id="run-row-{follow_up.pk}"')
    assert f"run-row-{other.run_id}" not in frame and f"approval-{other.pk}" not in frame
    await comm.disconnect()


async def test_an_addition_heard_late_or_twice_is_counted_once(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    """On Redis, the "added" of an approval made just before the page's socket joined can
    arrive after the count at connect already has it; a change may also be heard twice."""
    from channels.layers import get_channel_layer

    from infra import broadcast

    alice = await sync_to_async(make_user)("alice")
    before = await sync_to_async(make_approval)("git push origin before")
    comm = communicator("/ws/inbox/", alice)
    assert (await comm.connect())[0]
    assert count_in(await receive_until(comm, 'id="pending-count"'), "pending-count") == 1
    layer = get_channel_layer()
    for _ in range(2):  # the late message, then the same change again
        await layer.group_send(broadcast.INBOX_GROUP, broadcast.change_message("approval_added", approval_id=before.pk))
    new = await sync_to_async(make_approval)("git push origin new")
    frame = await receive_until(comm, f'id="approval-{new.pk}"')
    assert count_in(frame, "pending-count") == 2  # before + new, not 4
    await comm.disconnect()


async def test_a_removal_heard_before_its_addition_stays_removed(make_user: Callable[..., Any], make_approval: Callable[..., Any]) -> None:
    """Two processes send an approval's addition and its decision: on Redis the decision's
    message may come first, and the addition (rendered by then in this process) after it."""
    from channels.layers import get_channel_layer

    from infra import broadcast

    alice = await sync_to_async(make_user)("alice")
    overtaken = await sync_to_async(make_approval)("git push origin overtaken")
    comm = communicator("/ws/inbox/", alice)
    assert (await comm.connect())[0]
    assert count_in(await receive_until(comm, 'id="pending-count"'), "pending-count") == 1
    layer = get_channel_layer()
    await layer.group_send(broadcast.INBOX_GROUP, broadcast.change_message("approval_removed", approval_id=overtaken.pk))
    assert count_in(await receive_until(comm, 'hx-swap-oob="delete"'), "pending-count") == 0
    await layer.group_send(broadcast.INBOX_GROUP, broadcast.change_message("approval_added", approval_id=overtaken.pk))
    late = await sync_to_async(make_approval)("git push origin late")
    frame = await receive_until(comm, f'id="approval-{late.pk}"')
    assert count_in(frame, "pending-count") == 1  # only the new one
    await comm.disconnect()
