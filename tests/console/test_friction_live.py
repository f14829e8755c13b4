"""A second-reviewer card says "1 of 2" live (issue 32.2): the first approval replaces the
card in place on every open inbox, without deciding it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.approvals.test_friction import waiting
from tests.console.test_consumers import communicator, receive_until

pytestmark = [pytest.mark.django_db(transaction=True)]


async def test_the_first_approval_is_pushed_as_one_of_two(make_user: Callable[..., Any]) -> None:
    from approvals.services import approval_decide

    bob = await sync_to_async(make_user)("bob")
    rita = await sync_to_async(make_user)("rita")  # (a superuser: the socket reads no permission rows)
    comm = communicator("/ws/inbox/", rita)
    connected, _ = await comm.connect()
    assert connected
    approval = await sync_to_async(waiting)(bob, {"remote-mutation": "second-reviewer"})
    added = await receive_until(comm, f'id="approval-{approval.pk}"')
    assert "<strong>0 of 2</strong> approved" in added and 'class="batch-pick"' not in added

    await sync_to_async(approval_decide)(approval_id=approval.pk, user=rita, approve=True, hash=approval.hash, via="console")
    changed = await receive_until(comm, "<strong>1 of 2</strong>")
    assert f'hx-swap-oob="outerHTML:#approval-{approval.pk}"' in changed and "(rita)" in changed
    await comm.disconnect()
