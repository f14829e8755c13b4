"""Shared helpers for the console's browser tests: the real one-process server and Chromium.

`Server` runs `manage.py serve` as a subprocess on a free port with its own
GATEHOUSE_VAR_DIR, reads the one-time "Login link: ..." line it prints, and keeps its
output for failure messages. `launch_chromium` starts Debian's /usr/bin/chromium through
Playwright (skipping when either is missing). Screenshots go to var/screenshots/.
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "var" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`manage.py serve` as a subprocess; its output is kept for failure messages."""

    def __init__(self, var_dir: Path) -> None:
        self.env = {**os.environ, "GATEHOUSE_VAR_DIR": str(var_dir), "PYTHONUNBUFFERED": "1"}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.port = free_port()
        self.proc: subprocess.Popen[str] | None = None
        self.database = ""
        url = self.env.get("DATABASE_URL", "")
        if url.startswith(("postgres://", "postgresql://")):
            # The scale-out shape (CI's PostgreSQL pass): a database of its own, dropped at stop,
            # never the one DATABASE_URL names (nor pytest's test database).
            self.database = f"gatehouse_browser_{os.getpid()}_{self.port}"
            self._admin_sql(url, f'CREATE DATABASE "{self.database}"')
            self.env["DATABASE_URL"] = url.rsplit("/", 1)[0] + "/" + self.database

    @staticmethod
    def _admin_sql(url: str, statement: str) -> None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]  # a fixed statement with our own name

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str) -> str:
        """Run a management command with the server's environment; return its stdout."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120,
        )
        if done.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr[-4000:]}")
        return done.stdout

    def start(self) -> str:
        """Start serving; return the login link URL it prints."""
        self.manage("migrate", "--noinput")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + 60
        link = ""
        while time.monotonic() < deadline and not link:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            match = re.match(r"Login link: (http://\S+)", line.strip())
            if match:
                link = match.group(1)
        if not link:
            raise AssertionError("serve printed no login link:\n" + self.log())
        self._wait_listening(deadline)
        return link

    def _wait_listening(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("serve is not listening:\n" + self.log())

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)

    def log(self) -> str:
        return "".join(self.output[-200:])

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            if self.database:
                self._admin_sql(os.environ["DATABASE_URL"], f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
                self.database = ""


@contextmanager
def running_server(var_dir: Path) -> Iterator[Server]:
    """A Server that is always stopped, whatever happens in the block."""
    srv = Server(var_dir)
    try:
        yield srv
    finally:
        srv.stop()


@contextmanager
def launch_chromium() -> Iterator[Any]:
    """Headless Debian Chromium through Playwright; skips the test when either is missing."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER") == "1":  # CI: a missing browser fails
            pytest.fail(f"{CHROMIUM} is not installed; GATEHOUSE_REQUIRE_BROWSER=1 requires it")
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_api.sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


def card(page: Any, text: str) -> Any:
    """The pending approval card that contains `text`."""
    return page.locator("#approvals .approval-pending", has_text=text)


def shot(page: Any, name: str, locator: Any = None) -> Path:
    """Save a screenshot (the full page, or one element) to var/screenshots/NAME.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if locator is not None:
        locator.screenshot(path=str(path))
    else:
        page.screenshot(path=str(path), full_page=True)
    return path
