"""How long the reviewer's inbox and the API's pending list take with 10 and 10,000 waiting.

The embedded default (SQLite WAL in a temporary GATEHOUSE_VAR_DIR), through Django's test
client (every middleware, the session, the template): the inbox's first page (25 cards, the
count, the filter form, recent runs), the same page filtered, the next page by cursor, and
`GET /api/v1/approvals/?status=pending` (50 a page). Pending approvals are made by the
real gate (runs, steps, policy verdicts), then copied in bulk to reach 10,000 — spread over
200 runs, half of them with a deadline. Prints medians; not a test.

    .venv/bin/python bench/inbox.py
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["GATEHOUSE_VAR_DIR"] = tempfile.mkdtemp(prefix="gatehouse-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("GATEHOUSE_LOG_LEVEL", "WARNING")

import logging  # noqa: E402

import django  # noqa: E402

logging.getLogger("infra.broadcast").setLevel(logging.CRITICAL)  # no worker here: the drivers channel fills up

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from approvals.gate import gate_request  # noqa: E402
from approvals.models import Approval, Policy  # noqa: E402
from approvals.services import policy_save  # noqa: E402
from runs.models import Run, Step  # noqa: E402
from runs.services import run_create  # noqa: E402

ROUNDS = 30
RUNS = 200
COMMANDS = [
    "git push origin main",
    "cd build && rm -f old.log && git push --force origin release",
    "curl -X POST https://example.invalid/deploy -d @payload.json",
    "npm publish --access public",
]


def timed(fn, rounds: int = ROUNDS) -> tuple[float, float]:
    """Median wall time and median CPU time of this process, in ms. On a shared machine
    the wall time includes waiting for a core; the CPU time is what the request costs."""
    fn()  # warm: the first request fills caches (templates, permissions, the session)
    wall, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def make_real(count: int, user) -> list[Approval]:
    """Waiting approvals made by the gate, each in a run of its own."""
    made = []
    for i in range(count):
        timeout = 300 + i if i % 2 else -1  # half with a deadline, half without
        run = run_create(
            driver="claude-code" if i % 3 == 0 else "scripted", prompt=f"Bench run {i}: ship the release",
            scenario=None if i % 3 == 0 else {"steps": [{"message": "bench"}]}, run_policy={"approvals": {"timeout_s": timeout}},
            user=user, policy_name="bench",
        )
        outcome = gate_request(
            run_id=run.pk, tool="bash", input={"command": COMMANDS[i % len(COMMANDS)]}, cwd=run.workspace, subtype="command",
            presentation={"title": f"Run step {i}", "command": COMMANDS[i % len(COMMANDS)]},
        )
        made.append(Approval.objects.get(pk=outcome.approval_id))
    return made


def copy_to(total: int, templates: list[Approval]) -> None:
    """Bulk copies of the gate-made approvals (and their steps) until `total` wait."""
    runs = list(Run.objects.filter(approvals__in=templates).distinct())
    missing = total - Approval.objects.filter(status=Approval.Status.PENDING).count()
    now = timezone.now()
    steps, approvals = [], []
    for i in range(missing):
        model = templates[i % len(templates)]
        run = runs[i % len(runs)]
        seq = 1000 + i
        step = Step.objects.get(pk=model.step_id)
        step.pk, step.run_id, step.seq = None, run.pk, seq
        steps.append(step)
        approvals.append((model, run, seq, now + timedelta(seconds=60 + (i * 7) % 3600) if i % 2 else None))
    Step.objects.bulk_create(steps, batch_size=500)
    by_key = {(s.run_id, s.seq): s.pk for s in Step.objects.filter(seq__gte=1000).only("id", "run_id", "seq")}
    rows = []
    for model, run, seq, deadline in approvals:
        copy = Approval.objects.get(pk=model.pk)
        copy.pk, copy.run_id, copy.step_id, copy.deadline = None, run.pk, by_key[(run.pk, seq)], deadline
        copy.capability = {**copy.capability, "run": run.pk, "step": seq}
        rows.append(copy)
    Approval.objects.bulk_create(rows, batch_size=500)


def measure(label: str, client: Client, api: APIClient) -> dict[str, tuple[float, float]]:
    first = client.get("/").content.decode()
    cursor = re.search(r'<a href="\?([^"]+)" rel="next">', first)
    figures = {
        "inbox, first page": timed(lambda: client.get("/")),
        "inbox, filtered (?driver=scripted&class=remote-mutation)": timed(lambda: client.get("/?driver=scripted&class=remote-mutation")),
        "API pending list (50 a page)": timed(lambda: api.get("/api/v1/approvals/?status=pending")),
    }
    if cursor:
        next_page = "/?" + cursor.group(1).replace("&amp;", "&")
        figures["inbox, next page (cursor)"] = timed(lambda: client.get(next_page))
    with CaptureQueriesContext(connection) as queries:
        client.get("/")
    pending = Approval.objects.filter(status=Approval.Status.PENDING).count()
    print(f"\n{label}: {pending} pending, inbox first page = {len(queries.captured_queries)} queries, "
          f"{first.count('<article id=')} cards")
    for name, (wall, cpu) in figures.items():
        print(f"  {name:58s} median {wall:7.2f} ms (CPU {cpu:6.2f} ms)")
    return figures


def main() -> None:
    call_command("migrate", verbosity=0)
    policy_save(policy=Policy(name="bench", document={
        "classes": {"read-only": "allow", "local-mutation": "allow", "remote-mutation": "ask", "destructive": "ask"}, "default": "ask"}))
    admin = get_user_model().objects.create_superuser("bench", password=None)
    client = Client(SERVER_NAME="localhost")
    client.force_login(admin)
    api = APIClient(SERVER_NAME="localhost")
    api.force_authenticate(admin)
    templates = make_real(10, admin)
    small = measure("10 waiting", client, api)
    more = make_real(RUNS - 10, admin)
    copy_to(10_000, templates + more)
    large = measure("10,000 waiting", client, api)
    print("\n| request | 10 waiting | 10,000 waiting |\n|---|---|---|")
    for name in small:
        print(f"| {name} | {small[name][0]:.1f} ms (CPU {small[name][1]:.1f}) | {large[name][0]:.1f} ms (CPU {large[name][1]:.1f}) |")
    if "inbox, next page (cursor)" in large:
        wall, cpu = large["inbox, next page (cursor)"]
        print(f"| inbox, next page (cursor) | — | {wall:.1f} ms (CPU {cpu:.1f}) |")
    print(f"\n({ROUNDS} requests each, SQLite WAL in {os.environ['GATEHOUSE_VAR_DIR']}; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
