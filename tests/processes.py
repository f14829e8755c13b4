"""Start Gatehouse's own processes (serve, runworker) for tests, and always stop them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
# What the tests' own programs need inside the sandbox floor, which hides Gatehouse's
# checkout and the server user's home: this interpreter (fake agents, MCP servers) and the
# test programs (tests/fakes). Set for the tests' settings and the servers they start.
TEST_READ_PATHS = [str(ROOT / ".venv"), os.path.realpath(sys.base_prefix), str(ROOT / "tests")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url_of_test_db() -> str:
    """The URL of the database this test uses, so a child process sees the same rows."""
    params = connection.settings_dict
    if params["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{params['NAME']}"
    auth = params["USER"] + (f":{params['PASSWORD']}" if params.get("PASSWORD") else "")
    return f"postgres://{auth}@{params['HOST'] or '127.0.0.1'}:{params['PORT'] or 5432}/{params['NAME']}"


def redis_reachable(url: str = "redis://127.0.0.1:6379/0") -> bool:
    host, port = "127.0.0.1", 6379
    try:
        with socket.create_connection((host, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class ManagedProcess:
    """A child process whose output is collected in the background and which is always
    stopped (its whole process group) when the test ends."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, prefix: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if line.startswith(prefix):
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no line starting with {prefix!r}; output:\n" + "\n".join(self.lines[-50:]))

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def manage(args: list[str], env: dict[str, str]) -> ManagedProcess:
    return ManagedProcess([sys.executable, "manage.py", *args], env)


def child_env(**extra: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"GATEHOUSE_WAIT_POLL_S": "0.2", "GATEHOUSE_RECONCILE_S": "0.5", "GATEHOUSE_LEASE_HEARTBEAT_S": "0.5",
                "GATEHOUSE_SANDBOX_READ_PATHS": ",".join(TEST_READ_PATHS)})
    env.update({k: str(v) for k, v in extra.items()})
    return env


def iter_lines(proc: ManagedProcess) -> Iterator[str]:
    yield from proc.lines
