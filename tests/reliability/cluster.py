"""The scaled shape as real processes, for the fault tests: `scripts/scaled.py` (what `make
run-scaled` runs) against this test's PostgreSQL database and a private Redis.

The Redis server is started here, on a free port, so that a test can stop it and start it
again without touching the machine's own. Every process is stopped when the test ends.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.processes import ROOT, database_url_of_test_db, free_port

TIMINGS = {
    "GATEHOUSE_WAIT_POLL_S": "0.2",
    "GATEHOUSE_RECONCILE_S": "0.5",
    "GATEHOUSE_LEASE_HEARTBEAT_S": "0.5",
    "GATEHOUSE_LEASE_TTL_S": "10",
    "GATEHOUSE_HIBERNATE_AFTER_S": "0",
    "GATEHOUSE_WORKER_MAX_RUNS": "200",
    "GATEHOUSE_LOG_LEVEL": "WARNING",
}


class PrivateRedis:
    def __init__(self, tmp: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.binary = binary
        self.port = free_port()
        self.dir = tmp
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True)
            if done.stdout.strip() == "PONG":
                return
            time.sleep(0.05)
        raise RuntimeError("the private Redis did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Cluster:
    """2 web processes and 2 workers (scripts/scaled.py) on the test database."""

    def __init__(self, tmp: Path, **env: Any) -> None:
        self.var = tmp / "var"
        self.redis = PrivateRedis(tmp)
        self.port = free_port()
        while True:  # the web processes need PORT and PORT+1
            try:
                import socket

                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", self.port + 1))
                break
            except OSError:
                self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(TIMINGS)
        self.env.update({k: str(v) for k, v in env.items()})
        self.env.update({"DATABASE_URL": database_url_of_test_db(), "GATEHOUSE_VAR_DIR": str(self.var)})
        self.token = ""

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.redis.start()
        self.env["REDIS_URL"] = self.redis.url
        done = subprocess.run([sys.executable, "scripts/scaled.py", "start", "--port", str(self.port)],
                              cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stdout + done.stderr
        token = subprocess.run([sys.executable, "manage.py", "create_api_token", "admin"],
                               cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=60)
        assert token.returncode == 0, token.stderr
        self.token = token.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        subprocess.run([sys.executable, "scripts/scaled.py", "stop"], cwd=ROOT, env=self.env, capture_output=True, timeout=60)
        self.redis.kill()

    def pid(self, name: str) -> int:
        return int((self.var / "scaled" / f"{name}.pid").read_text())

    def kill(self, name: str) -> None:
        os.killpg(self.pid(name), signal.SIGKILL)

    def log(self, name: str) -> str:
        path = self.var / "scaled" / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    # -- HTTP ----------------------------------------------------------------------------

    def web(self, index: int) -> str:
        return f"http://127.0.0.1:{self.port + index}"

    def call(self, method: str, path: str, body: Any = None, *, web: int = 0, timeout: float = 30) -> tuple[int, Any]:
        request = urllib.request.Request(
            f"{self.web(web)}{path}", method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw or b"null")
            except ValueError:
                return error.code, raw.decode(errors="replace")

    def pending(self, run_id: int) -> list[dict[str, Any]]:
        status, body = self.call("GET", f"/api/v1/approvals/?status=pending&run={run_id}")
        assert status == 200, body
        return list(body["results"])

    def wait(self, check: Any, timeout: float = 90, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"{what} not met in {timeout} s\nworker-1:\n{self.log('worker-1')}\nworker-2:\n{self.log('worker-2')}")
