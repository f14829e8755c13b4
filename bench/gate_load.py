"""The gate under load: auto-decided requests per second and their latency, 1 and 16 runs at once.

Real processes: the embedded `serve` (SQLite) and, unless --skip-scaled, the scaled shape
(scripts/scaled.py: 2 web + 2 workers on PostgreSQL + Redis). Each scripted run makes
REQUESTS tool requests that the policy allows outright (`tools: {"noop": "allow"}`; the
scripted driver simulates the tool, so nothing is spawned): each is one gate transaction
plus the step's result. Latency is the time between a run's consecutive steps (as
recorded on the rows); throughput is all steps over the wall time. Not a test.

    .venv/bin/python bench/gate_load.py [--requests 200] [--skip-scaled]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from decision_latency import PY, QUICK, ROOT, Server, _up, free_port, free_port_pair, start_scaled, wait  # noqa: E402

POLICY = {"tools": {"noop": "allow"}, "default": "ask"}


def run_load(server: Server, concurrent: int, requests: int) -> tuple[float, list[float]]:
    server.manage("shell", "-c", "from approvals.models import Policy; from approvals.services import policy_save; "
                  f"Policy.objects.filter(name='bench-noop').exists() or policy_save(policy=Policy(name='bench-noop', document={POLICY!r}))")
    scenario = {"steps": [{"tool": "noop", "input": {"n": i}} for i in range(requests)]}
    started = time.time()
    ids = [server.call("POST", "/api/v1/runs/", {"driver": "scripted", "prompt": "load", "scenario": scenario,
                                                 "policy": "bench-noop"})["id"] for _ in range(concurrent)]
    wait(lambda: all(server.call("GET", f"/api/v1/runs/{i}/")["status"] == "completed" for i in ids), timeout=600)
    out = server.manage("shell", "-c", (
        "from runs.models import Step\n"
        f"for rid in {ids!r}:\n"
        "    print('STEPS', ' '.join(repr(t.timestamp()) for t in Step.objects.filter(run_id=rid).order_by('seq').values_list('created_at', flat=True)))"
    ))
    gaps: list[float] = []
    first, last = float("inf"), 0.0
    for line in out.strip().splitlines():
        if not line.startswith("STEPS "):
            continue
        times = [float(x) for x in line.split()[1:]]
        gaps += [b - a for a, b in zip(times, times[1:], strict=False)]
        first, last = min(first, times[0]), max(last, times[-1])
    del started
    return (concurrent * requests) / (last - first), gaps


def report(label: str, server: Server, requests: int) -> None:
    for concurrent in (1, 16):
        rps, gaps = run_load(server, concurrent, requests)
        ordered = sorted(gaps)
        p99 = ordered[int(0.99 * (len(ordered) - 1))]
        print(f"{label}, {concurrent:2d} run(s) at once: {rps:7.0f} requests/s   "
              f"p50 {statistics.median(ordered) * 1e3:6.2f} ms   p99 {p99 * 1e3:6.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--skip-scaled", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="gatehouse-bench-"))
    try:
        env = {**os.environ, **QUICK, "GATEHOUSE_VAR_DIR": str(workdir / "embedded")}
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        subprocess.run([PY, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
        port = free_port()
        proc = subprocess.Popen([PY, "manage.py", "serve", "--no-demo", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            server = Server(env, f"http://127.0.0.1:{port}")
            wait(lambda: _up(server.base))
            server.login()
            report("embedded (SQLite)", server, args.requests)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        if not args.skip_scaled:
            redis_port = free_port()
            redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            db = f"gatehouse_bench_{os.getpid()}"
            env = {**os.environ, **QUICK, "GATEHOUSE_VAR_DIR": str(workdir / "scaled"),
                   "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db}", "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}
            port = free_port_pair()
            try:
                start_scaled(env, port)
                server = Server(env, f"http://127.0.0.1:{port}")
                server.login()
                report("scaled (PostgreSQL + Redis)", server, args.requests)
            finally:
                subprocess.run([PY, "scripts/scaled.py", "stop"], cwd=ROOT, env=env, capture_output=True)
                redis.kill()
                subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-c", f"DROP DATABASE IF EXISTS {db}"],
                               capture_output=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"({args.requests} auto-allowed requests per run; latency = time between a run's consecutive steps)")


if __name__ == "__main__":
    main()
