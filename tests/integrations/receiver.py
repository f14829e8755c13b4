"""A local webhook receiver (127.0.0.1): records each POST, answers scripted statuses."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.http import BackgroundHTTPServer


class _Handler(BaseHTTPRequestHandler):
    fake: Receiver

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        status = self.fake.record(self.path, dict(self.headers), body)
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"ok" if status < 300 else b"nope")

    def log_message(self, *args: Any) -> None:
        pass


class Receiver(BackgroundHTTPServer):
    handler_class = _Handler
    thread_name = "webhook-receiver"

    def __init__(self, statuses: list[int] | None = None, *, delay_s: float = 0.0, hold: threading.Event | None = None) -> None:
        super().__init__()
        self.statuses = list(statuses or [])
        self.delay_s = delay_s
        self.hold = hold  # each POST waits for it (at most 60 s) before it is answered
        self.arrived = 0  # POSTs received, answered or not
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def record(self, path: str, headers: dict[str, str], body: str) -> int:
        with self._lock:
            self.arrived += 1
        if self.hold is not None:
            self.hold.wait(60)
        if self.delay_s:
            time.sleep(self.delay_s)
        with self._lock:
            self.requests.append({"path": path, "headers": headers, "body": body, "at": time.monotonic()})
            return self.statuses.pop(0) if self.statuses else 200

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/gatehouse"
