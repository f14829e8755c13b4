"""What a run waiting on a person costs, awake and asleep, and how fast a decision reaches it.

Real Claude Code CLIs (installed by `make agents`) against the fake Anthropic server of
tests/fakes, the real worker in this process, SQLite. For N runs that each wait on one
approval it prints:

- resident memory of the agent processes per waiting run, awake;
- after hibernation: agent processes left, and the worker's Python heap per sleeping run
  (tracemalloc, after a collection);
- decision → the agent acts (the approved command writes its own clock), for an awake run
  and for a sleeping one (the wake-up included): median and max over the runs.

    .venv/bin/python bench/hibernation.py [N]
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR = Path(tempfile.mkdtemp(prefix="gatehouse-bench-"))
os.environ["GATEHOUSE_VAR_DIR"] = str(VAR)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("GATEHOUSE_LOG_LEVEL", "WARNING")
os.environ["GATEHOUSE_WAIT_POLL_S"] = "0.05"
os.environ["GATEHOUSE_RECONCILE_S"] = "0.2"
os.environ["GATEHOUSE_LEASE_HEARTBEAT_S"] = "0.5"

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
from tests.fakes import anthropic_server as anthropic  # noqa: E402

CLAUDE = ROOT / ".agents" / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
ACT = "python3 -c 'import time; open(\"acted.txt\", \"w\").write(repr(time.time()))'"


def act_then_done(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = (body.get("messages") or [{}])[-1].get("content")
    answered = isinstance(last, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last)
    return [anthropic.text("Done.")] if answered else [anthropic.tool_use("Bash", {"command": ACT, "description": "Act"})]


def rss_mib_in(workspace: Path) -> float:
    """Resident memory of live processes whose working directory is `workspace`."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != str(workspace):
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


async def until(check: Any, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await sync_to_async(check)()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise TimeoutError("condition not met")


async def decide_and_time(run: Run) -> float:
    """Seconds from the decision to the agent's command writing its clock."""
    approval = await sync_to_async(lambda: Approval.objects.get(run=run, status="pending"))()
    acted = Path(run.workspace) / "acted.txt"
    started = time.time()
    await sync_to_async(approval_decide)(approval_id=approval.pk, user=None, approve=True, hash=approval.hash)
    await until(lambda: acted.exists() and acted.read_text(), timeout=120)
    return float(acted.read_text()) - started


async def main(count: int) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    await sync_to_async(Policy.objects.create)(name="ask-act", document={"commands": {"ask": ["python3"]}, "default": "allow"})
    with anthropic.FakeAnthropicServer() as model:
        model.add_turns(*[act_then_done] * (count * 6))
        settings.GATEHOUSE_CLAUDE_BIN = str(CLAUDE)
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "dummy"}
        settings.GATEHOUSE_HIBERNATE_AFTER_S = 2
        sup = Supervisor()
        sup.ensure_background()

        async def start(i: int) -> Run:
            workspace = VAR / f"ws-{i}"
            workspace.mkdir()
            run = await sync_to_async(run_create)(
                driver="claude-code", prompt="Act.", workspace=str(workspace), policy_name="ask-act",
                run_policy={"approvals": {"timeout_s": 3600}},
            )
            return run

        # Warm-up: one run through a whole sleep and wake, so that what is loaded once
        # (modules, compiled policies, templates) is not counted per sleeping run.
        warm = await start(0)
        await until(lambda: Run.objects.filter(pk=warm.pk, hibernated_at__isnull=False).exists())
        await decide_and_time(warm)
        await until(lambda: Run.objects.filter(pk=warm.pk, status="completed").exists())

        # Awake: the first run is measured before it can fall asleep.
        settings.GATEHOUSE_HIBERNATE_AFTER_S = 3600
        probe = await start(count + 1)
        await until(lambda: Approval.objects.filter(run=probe, status="pending").exists())
        await asyncio.sleep(0.5)
        rss_awake = [rss_mib_in(Path(probe.workspace).resolve())]
        awake_latency = await decide_and_time(probe)
        await until(lambda: Run.objects.filter(pk=probe.pk, status="completed").exists())

        settings.GATEHOUSE_HIBERNATE_AFTER_S = 2
        tracemalloc.start()
        gc.collect()
        heap_before = tracemalloc.get_traced_memory()[0]
        awake = [await start(i) for i in range(1, count + 1)]
        await until(lambda: Approval.objects.filter(run__in=awake, status="pending").count() == len(awake))
        rss_awake += [rss_mib_in(Path(r.workspace).resolve()) for r in awake]

        await until(lambda: Run.objects.filter(pk__in=[r.pk for r in awake], hibernated_at__isnull=False).count() == len(awake))
        await asyncio.sleep(1)
        gc.collect()
        heap_asleep = tracemalloc.get_traced_memory()[0]
        rss_asleep = [rss_mib_in(Path(r.workspace).resolve()) for r in awake]
        asleep_latency = [await decide_and_time(run) for run in awake]
        await until(lambda: Run.objects.filter(pk__in=[r.pk for r in awake], status="completed").count() == len(awake))
        tracemalloc.stop()
        await sup.shutdown()

    per_run_heap = max(0, heap_asleep - heap_before) / len(awake) / 1024
    print(f"{count} Claude Code runs (CLI 2.1.197, fake model), each waiting on one approval")
    print(f"agent processes per waiting run, awake:   median {statistics.median([r for r in rss_awake if r]):.0f} MiB resident")
    print(f"agent processes per sleeping run:         {max(rss_asleep):.0f} MiB (none left: {all(r == 0 for r in rss_asleep)})")
    print(f"worker heap per sleeping run:             {per_run_heap:.1f} KiB (tracemalloc, after gc)")
    print(f"decision -> agent acts, awake run:        {awake_latency * 1e3:.0f} ms")
    print(f"decision -> agent acts, sleeping run:     median {statistics.median(asleep_latency) * 1e3:.0f} ms, "
          f"max {max(asleep_latency) * 1e3:.0f} ms (wake-up and --resume included)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
