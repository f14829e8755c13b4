"""Reviewer decision → the agent acts, beside the floor of one authenticated API GET.

Real processes: the embedded `serve` (SQLite, in-memory layer) and the scaled shape
(`scripts/scaled.py`: 2 Daphne + 2 workers on PostgreSQL + Redis). Each scripted run asks
to run `date +%s.%N > acted.txt` (the command writes its own clock); the benchmark
approves through the API and reads the clock the command wrote. The floor is the same
server answering `GET /api/v1/runs/{id}/` with the same token. Also: the same for runs
that were asleep (hibernated) when decided. Prints p50/p99; not a test.

    .venv/bin/python bench/decision_latency.py [--runs 40] [--skip-scaled] [--skip-embedded]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
POLICY = {"commands": {"ask": ["date"]}, "default": "allow"}
QUICK = {"GATEHOUSE_WAIT_POLL_S": "1", "GATEHOUSE_RECONCILE_S": "1", "GATEHOUSE_LOG_LEVEL": "WARNING",
         "GATEHOUSE_WORKER_MAX_RUNS": "500"}


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_pair() -> int:
    """A free PORT whose PORT+1 is free too (the scaled shape's two web processes)."""
    import socket

    while True:
        port = free_port()
        try:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue


class Server:
    def __init__(self, env: dict[str, str], base: str) -> None:
        self.env, self.base, self.token = env, base, ""

    def manage(self, *args: str) -> str:
        done = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, check=True)
        return done.stdout

    def login(self) -> None:
        self.manage("ensure_admin")
        self.token = self.manage("create_api_token", "admin").strip().splitlines()[-1]
        self.manage("shell", "-c", "from approvals.models import Policy; from approvals.services import policy_save; "
                    f"Policy.objects.filter(name='bench-ask-date').exists() or policy_save(policy=Policy(name='bench-ask-date', document={POLICY!r}))")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            self.base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


def wait(check: Any, timeout: float = 120) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError("condition not met")


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    return f"p50 {statistics.median(ordered) * 1e3:6.1f} ms   p99 {p99 * 1e3:6.1f} ms"


def measure(server: Server, runs: int, workdir: Path, *, asleep: bool = False) -> tuple[list[float], list[float]]:
    started = []
    for i in range(runs):
        workspace = workdir / f"ws-{'s' if asleep else 'a'}-{i}"
        workspace.mkdir(parents=True)
        run = server.call("POST", "/api/v1/runs/", {
            "driver": "scripted", "prompt": "bench", "workspace": str(workspace), "policy": "bench-ask-date",
            "scenario": {"steps": [{"tool": "bash", "input": {"command": "date +%s.%N > acted.txt"}}]},
            "run_policy": {"approvals": {"timeout_s": 3600}},
        })
        started.append((run, workspace))
    pending: dict[int, dict[str, Any]] = {}

    def all_pending() -> bool:
        for run, _ in started:
            if run["id"] not in pending:
                found = server.call("GET", f"/api/v1/approvals/?status=pending&run={run['id']}")["results"]
                if found:
                    pending[run["id"]] = found[0]
        return len(pending) == len(started)

    wait(all_pending)
    if asleep:
        wait(lambda: all(server.call("GET", f"/api/v1/runs/{r['id']}/").get("status") == "waiting" for r, _ in started))
        time.sleep(float(server.env.get("GATEHOUSE_HIBERNATE_AFTER_S", "0")) + 3)
    floor, latency, answered = [], [], []
    for run, workspace in started:
        t0 = time.time()
        server.call("GET", f"/api/v1/runs/{run['id']}/")
        floor.append(time.time() - t0)
        approval = pending[run["id"]]
        acted = workspace / "acted.txt"
        t0 = time.time()
        server.call("POST", f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]})
        answered.append(time.time() - t0)
        wait(lambda acted=acted: acted.exists() and acted.read_text().strip())
        latency.append(float(acted.read_text()) - t0)
    ANSWERED.append(answered)
    return floor, latency


ANSWERED: list[list[float]] = []  # the approve request's own time, per measure(): for the report


def embedded(runs: int, workdir: Path, hibernate: bool) -> None:
    var = workdir / "embedded-var"
    port = free_port()
    env = {**os.environ, **QUICK, "GATEHOUSE_VAR_DIR": str(var)}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    if hibernate:
        env["GATEHOUSE_HIBERNATE_AFTER_S"] = "1"
    subprocess.run([PY, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    proc = subprocess.Popen([PY, "manage.py", "serve", "--no-demo", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        server = Server(env, f"http://127.0.0.1:{port}")
        wait(lambda: _up(server.base))
        server.login()
        floor, latency = measure(server, runs, workdir / ("embedded-asleep" if hibernate else "embedded"), asleep=hibernate)
        label = "embedded, asleep when decided" if hibernate else "embedded"
        report(label, floor, latency)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if os.environ.get("BENCH_DEBUG"):
                subprocess.run([str(Path(PY).parent / "py-spy"), "dump", "--pid", str(proc.pid)])
            os.killpg(proc.pid, signal.SIGKILL)
            raise


def scaled(runs: int, workdir: Path) -> None:
    redis_port = free_port_pair()
    redis = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    port = free_port()
    env = {**os.environ, **QUICK, "GATEHOUSE_VAR_DIR": str(workdir / "scaled-var"),
           "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/gatehouse_bench_{os.getpid()}",
           "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0"}
    try:
        start_scaled(env, port)
        server = Server(env, f"http://127.0.0.1:{port}")
        server.login()
        floor, latency = measure(server, runs, workdir / "scaled")
        report("scaled (PostgreSQL + Redis, 2 web + 2 workers)", floor, latency)
    finally:
        subprocess.run([PY, "scripts/scaled.py", "stop"], cwd=ROOT, env=env, capture_output=True)
        redis.kill()
        subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-c",
                        f"DROP DATABASE IF EXISTS gatehouse_bench_{os.getpid()}"], capture_output=True)


def start_scaled(env: dict[str, str], port: int) -> None:
    """`scripts/scaled.py start`; when it fails, what it said (and where its logs are)."""
    done = subprocess.run([PY, "scripts/scaled.py", "start", "--port", str(port)], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/scaled.py start exited {done.returncode}:\n{done.stdout}{done.stderr}")


def _up(base: str) -> bool:
    try:
        urllib.request.urlopen(base + "/healthz", timeout=1).read()
        return True
    except (urllib.error.URLError, OSError):
        return False


def report(label: str, floor: list[float], latency: list[float]) -> None:
    ratio = statistics.median(latency) / statistics.median(floor)
    print(f"{label}:")
    print(f"  floor, one authenticated GET:  {percentiles(floor)}")
    print(f"  decision -> agent acts:        {percentiles(latency)}   (p50 {ratio:.1f}x the floor)")
    if ANSWERED:
        print(f"  of which the approve request:  {percentiles(ANSWERED[-1])}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--skip-scaled", action="store_true")
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="gatehouse-bench-"))
    try:
        if not args.skip_embedded:
            embedded(args.runs, workdir, hibernate=False)
            embedded(max(5, args.runs // 4), workdir, hibernate=True)
        if not args.skip_scaled:
            scaled(args.runs, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"({args.runs} runs each; the command is `date +%s.%N > acted.txt` under the scripted driver)")


if __name__ == "__main__":
    main()
