"""1,000 runs waiting on one worker: memory per waiting run, and a bulk decision to all resumed.

In this process: the real worker (Supervisor) on SQLite, scripted runs that each wait on
one approval: awake (hibernation off, each holds its task and context) or, with --asleep,
hibernated (its task ended, its row waits). Prints the worker's Python heap and resident
memory per waiting run, and the time from deciding all of them (one decision after the
other, as reviewers or an integration would) to the last run finished. Not a test.

    .venv/bin/python bench/many_waiting.py [N] [--asleep]
"""

from __future__ import annotations

import asyncio
import gc
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["GATEHOUSE_VAR_DIR"] = tempfile.mkdtemp(prefix="gatehouse-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("GATEHOUSE_LOG_LEVEL", "WARNING")
os.environ["GATEHOUSE_WAIT_POLL_S"] = "5"
os.environ["GATEHOUSE_RECONCILE_S"] = "1"

import django  # noqa: E402

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from approvals.models import Approval, Policy  # noqa: E402
from approvals.services import approval_decide  # noqa: E402
from drivers.worker import Supervisor  # noqa: E402
from runs.models import Run  # noqa: E402
from runs.services import run_create  # noqa: E402

SCENARIO = {"steps": [{"tool": "bash", "input": {"command": "touch decided.txt"}}]}


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def until(check, timeout: float = 1800) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await sync_to_async(check)():
            return
        failed = await sync_to_async(lambda: list(Run.objects.filter(status="failed").values_list("failure_reason", flat=True)[:3]))()
        if failed:
            raise RuntimeError(f"runs failed: {failed}")
        await asyncio.sleep(0.2)
    raise TimeoutError("condition not met")


async def main(count: int, asleep: bool) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    await sync_to_async(Policy.objects.create)(name="ask-touch", document={"commands": {"ask": ["touch"]}, "default": "allow"})
    settings.GATEHOUSE_WORKER_MAX_RUNS = count + 10
    settings.GATEHOUSE_HIBERNATE_AFTER_S = 1 if asleep else 0
    sup = Supervisor()

    def create_all() -> list[int]:
        return [run_create(driver="scripted", prompt=str(i), scenario=SCENARIO, policy_name="ask-touch",
                           run_policy={"approvals": {"timeout_s": 3600}}).pk for i in range(count)]

    tracemalloc.start()
    gc.collect()
    heap_before, rss_before = tracemalloc.get_traced_memory()[0], rss_mib()
    ids = await sync_to_async(create_all)()
    started = time.monotonic()
    sup.ensure_background()
    await until(lambda: Approval.objects.filter(status="pending").count() == count)
    to_waiting = time.monotonic() - started
    if asleep:
        await until(lambda: Run.objects.filter(pk__in=ids, hibernated_at__isnull=False).count() == count)
    await asyncio.sleep(2)
    gc.collect()
    heap_awake, rss_awake = tracemalloc.get_traced_memory()[0], rss_mib()
    tracemalloc.stop()  # it slows every allocation: the decisions are timed without it

    pending = await sync_to_async(lambda: list(Approval.objects.filter(status="pending").values_list("id", "hash")))()
    decided_at = time.monotonic()
    for approval_id, approval_hash in pending:
        await sync_to_async(approval_decide)(approval_id=approval_id, user=None, approve=True, hash=approval_hash)
    decisions = time.monotonic() - decided_at
    await until(lambda: Run.objects.filter(pk__in=ids, status="completed").count() == count)
    resumed = time.monotonic() - decided_at
    await sup.shutdown()

    state = "asleep (hibernated after 1 s)" if asleep else "awake (hibernation off)"
    print(f"{count} scripted runs waiting at once on one worker, {state} (SQLite, in-memory layer)")
    print(f"  all {count} started and waiting after:   {to_waiting:.1f} s (tracemalloc on)")
    print(f"  worker heap per waiting run:             {(heap_awake - heap_before) / count / 1024:.1f} KiB")
    print(f"  worker resident memory per waiting run:  {(rss_awake - rss_before) / count * 1024:.1f} KiB")
    print(f"  {count} decisions made in:                 {decisions:.1f} s ({decisions / count * 1e3:.1f} ms each)")
    print(f"  from the first decision to all finished: {resumed:.1f} s")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    asyncio.run(main(int(args[0]) if args else 1000, asleep="--asleep" in sys.argv))
