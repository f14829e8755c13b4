"""A worker runs at most GATEHOUSE_WORKER_MAX_RUNS runs; the others wait queued for a slot."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval
from runs.models import Run
from tests.flow import decide, eventually, start_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("standard_review_default")]

# asked under the default policy: an awk program that writes a file (a plain redirection
# inside the workspace is a local edit, allowed)
WAITS = {"steps": [{"tool": "bash", "input": {"command": """awk 'BEGIN { print "hi" > "out.txt" }'"""}}]}


async def test_extra_runs_stay_queued_until_a_slot_frees_up(api: Any, worker: Any, settings: Any) -> None:
    import asyncio

    settings.GATEHOUSE_WORKER_MAX_RUNS = 2
    settings.GATEHOUSE_HIBERNATE_AFTER_S = 0
    runs = [await start_run(api, WAITS) for _ in range(3)]
    ids = [r["id"] for r in runs]
    await eventually(lambda: Approval.objects.filter(run_id__in=ids, status="pending").count() == 2)
    await asyncio.sleep(1.5)  # reconcile rounds: still only two
    statuses = await sync_to_async(lambda: dict(Run.objects.filter(pk__in=ids).values_list("id", "status")))()
    assert sorted(statuses.values()) == ["queued", "waiting", "waiting"]
    assert worker.busy_slots() == 2
    first = await sync_to_async(lambda: Approval.objects.filter(run_id__in=ids, status="pending").values("id", "hash", "run_id").first())()
    await decide(api, first, "approve")
    await eventually(lambda: Approval.objects.filter(run_id__in=ids, status="pending").count() == 2)  # the third took the slot
    queued = next(i for i, s in statuses.items() if s == "queued")
    assert (await sync_to_async(Run.objects.get)(pk=queued)).status == "waiting"
