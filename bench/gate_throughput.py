"""How fast the gate records and decides requests on the embedded default (SQLite, WAL).

Each call is one transaction: validate, evaluate the policy, write the step and its
activity (and, for an ask, the approval and its activity). Prints medians; not a test.

    .venv/bin/python bench/gate_throughput.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["GATEHOUSE_VAR_DIR"] = tempfile.mkdtemp(prefix="gatehouse-bench-")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("GATEHOUSE_LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from approvals.gate import gate_request  # noqa: E402
from approvals.services import approval_decide  # noqa: E402
from runs.services import run_create  # noqa: E402

ROUNDS = 300


def timed(fn, rounds: int = ROUNDS) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    call_command("migrate", verbosity=0)
    run = run_create(driver="scripted", scenario={"steps": [{"message": "bench"}]})
    allowed = timed(lambda: gate_request(run_id=run.pk, tool="bash", input={"command": "git status"}, cwd=run.workspace))
    asked_ids: list[int] = []
    asked = timed(
        lambda: asked_ids.append(
            gate_request(run_id=run.pk, tool="bash", input={"command": "git push origin main"}, cwd=run.workspace).approval_id
        )
    )
    ids = iter(asked_ids)
    decided = timed(lambda: approval_decide(approval_id=next(ids), user=None, approve=True), rounds=len(asked_ids))
    print(f"gate, allowed request (step + activity):         median {statistics.median(allowed) * 1e3:.2f} ms")
    print(f"gate, asked request (step + approval + 2 rows):  median {statistics.median(asked) * 1e3:.2f} ms")
    print(f"decide an approval (compare-and-set + activity): median {statistics.median(decided) * 1e3:.2f} ms")
    print(f"({ROUNDS} rounds each, SQLite WAL in {os.environ['GATEHOUSE_VAR_DIR']})")


if __name__ == "__main__":
    main()
