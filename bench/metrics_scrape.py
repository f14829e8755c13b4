"""How long a Prometheus scrape of /metrics takes with 10 and 10,000 approvals waiting.

The embedded default (SQLite WAL in a temporary GATEHOUSE_VAR_DIR), through Django's test
client (every middleware, the bearer token check): `GET /metrics`, whose collector runs one
aggregate query per metric family over every row kept. Pending approvals are made by the
real gate (runs, steps, policy verdicts), then copied in bulk to reach 10,000, spread over
200 runs; beside them a decided history of the same size (approved or denied by a person
after 1 s to 1 h, their steps finished or denied), which the counters and the histogram
read too. Prints medians (target: 10,000 waiting in 100 ms or less); not a test.

    .venv/bin/python bench/metrics_scrape.py
"""

from __future__ import annotations

import os
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
os.environ["GATEHOUSE_METRICS_TOKEN"] = "bench-metrics-token"

import logging  # noqa: E402

import django  # noqa: E402

logging.getLogger("infra.broadcast").setLevel(logging.CRITICAL)  # no worker here: the drivers channel fills up

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from approvals import metrics as read  # noqa: E402
from approvals.gate import gate_request  # noqa: E402
from approvals.models import Approval  # noqa: E402
from project.metrics import metrics_text  # noqa: E402
from runs.models import Run, Step  # noqa: E402
from runs.services import run_create  # noqa: E402

ROUNDS = 30
RUNS = 200
TARGET_MS = 100.0
COMMANDS = [
    "git push origin main",
    "git push origin release",
    "curl -X POST https://example.invalid/deploy -d @payload.json",
    "npm publish --access public",
]
AUTH = {"HTTP_AUTHORIZATION": "Bearer bench-metrics-token"}


def timed(fn, rounds: int = ROUNDS) -> tuple[float, float]:
    """Median wall time and median CPU time of this process, in ms."""
    fn()  # warm
    wall, cpu = [], []
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def make_real(count: int, user, offset: int = 0) -> list[Approval]:
    """Waiting approvals made by the gate, each in a run of its own."""
    made = []
    for i in range(offset, offset + count):
        run = run_create(
            driver="claude-code" if i % 3 == 0 else "scripted", prompt=f"Bench run {i}",
            scenario=None if i % 3 == 0 else {"steps": [{"message": "bench"}]}, user=user,
        )
        command = COMMANDS[i % len(COMMANDS)]
        outcome = gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace,
                               subtype="command", presentation={"title": f"Run step {i}", "command": command})
        assert outcome.outcome == "wait", outcome
        made.append(Approval.objects.get(pk=outcome.approval_id))
    return made


def copy_to(total: int, templates: list[Approval], *, decided: bool, first_seq: int) -> None:
    """Bulk copies of the gate-made approvals (and their steps): `total` more rows, waiting or
    (`decided`) approved / denied by a person after 1 s to 1 h."""
    runs = list(Run.objects.filter(approvals__in=templates).distinct())
    template_steps = {s.pk: s for s in Step.objects.filter(pk__in=[a.step_id for a in templates])}
    steps, plans = [], []
    for i in range(total):
        model = templates[i % len(templates)]
        run = runs[i % len(runs)]
        seq = first_seq + i
        step = Step.objects.get(pk=model.step_id) if model.step_id not in template_steps else template_steps[model.step_id]
        copy = Step(**{f.attname: getattr(step, f.attname) for f in Step._meta.concrete_fields if f.attname != "id"})
        copy.run_id, copy.seq = run.pk, seq
        approve = i % 4 != 0
        if decided:
            copy.status = Step.Status.FINISHED if approve else Step.Status.DENIED
            copy.decided_by = "console" if i % 2 else "api"
        steps.append(copy)
        plans.append((model, run, seq, approve))
    Step.objects.bulk_create(steps, batch_size=500)
    by_key = {(s.run_id, s.seq): (s.pk, s.created_at) for s in
              Step.objects.filter(seq__gte=first_seq, seq__lt=first_seq + total).only("id", "run_id", "seq", "created_at")}
    rows = []
    for i, (model, run, seq, approve) in enumerate(plans):
        step_id, created = by_key[(run.pk, seq)]
        copy = Approval(**{f.attname: getattr(model, f.attname) for f in Approval._meta.concrete_fields if f.attname != "id"})
        copy.run_id, copy.step_id = run.pk, step_id
        copy.capability = {**copy.capability, "run": run.pk, "step": seq}
        if decided:
            copy.status = Approval.Status.APPROVED if approve else Approval.Status.DENIED
            copy.decided_via = "console" if i % 2 else "api"
            copy.decided_at = created + timedelta(seconds=1 + (i * 37) % 3600)
        rows.append(copy)
    Approval.objects.bulk_create(rows, batch_size=500)


def measure(label: str, client: Client) -> tuple[float, float]:
    queries: list[str] = []

    def counted(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counted):
        metrics_text()
    response = client.get("/metrics", **AUTH)
    assert response.status_code == 200, response.status_code
    figure = timed(lambda: client.get("/metrics", **AUTH))
    pending = Approval.objects.filter(status=Approval.Status.PENDING).count()
    print(f"{label}: {pending} pending, {Approval.objects.count()} approvals, {Step.objects.count()} steps, "
          f"{len(queries)} queries, {len(response.content)} bytes: "
          f"median {figure[0]:.1f} ms (CPU {figure[1]:.1f} ms)")
    return figure


def main() -> None:
    call_command("migrate", verbosity=0)
    admin = get_user_model().objects.create_superuser("bench", password=None)
    client = Client(SERVER_NAME="localhost")
    templates = make_real(10, admin)
    small = measure("10 waiting", client)
    templates += make_real(RUNS - 10, admin, offset=10)
    copy_to(10_000 - RUNS, templates, decided=False, first_seq=1000)
    large = measure("10,000 waiting", client)
    copy_to(10_000, templates, decided=True, first_seq=100_000)
    history = measure("10,000 waiting + 10,000 decided", client)
    print("  per family (median ms):", ", ".join(
        f"{fn.__name__} {timed(fn, 10)[0]:.1f}" for fn in (
            read.pending_approvals, read.decision_times, read.decisions, read.approvals_resolved, read.runs_by_status,
            read.egress_connections)))
    print("\n| `/metrics` scrape | median | CPU |\n|---|---|---|")
    for name, (wall, cpu) in (("10 waiting", small), ("10,000 waiting", large), ("10,000 waiting + 10,000 decided", history)):
        print(f"| {name} | {wall:.1f} ms | {cpu:.1f} ms |")
    print(f"\ntarget: 10,000 waiting in <= {TARGET_MS:.0f} ms: {'met' if large[0] <= TARGET_MS else 'missed'}")
    print(f"({ROUNDS} scrapes each, SQLite WAL in {os.environ['GATEHOUSE_VAR_DIR']}; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
