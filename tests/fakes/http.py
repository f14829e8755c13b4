"""The plumbing the fake model servers share: a threaded HTTP server on a free
127.0.0.1 port, started and stopped as a context manager; and, for the chat-style fakes,
the script of turns and the record of every request."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

Self = TypeVar("Self", bound="BackgroundHTTPServer")


class BackgroundHTTPServer:
    """Subclasses set `handler_class` (a BaseHTTPRequestHandler reading `self.fake`)."""

    handler_class: type[BaseHTTPRequestHandler]
    thread_name = "fake-http"
    host = "127.0.0.1"

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self: Self) -> Self:
        handler = type("Handler", (self.handler_class,), {"fake": self})
        self._httpd = ThreadingHTTPServer((self.host, 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    def __enter__(self: Self) -> Self:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class ScriptedModelServer(BackgroundHTTPServer):
    """A fake model answering each *main* request (the agent's own loop, as the subclass
    tells it apart) with the next scripted turn, and recording every request.

    `requests` holds one dict per request (`method`, `path`, `body`, `main`, ...); a turn
    is the subclass's reply items, or a callable `turn(body) -> items`. Once the script is
    exhausted, main requests get `default_text` (`exhausted` counts them)."""

    def __init__(self, turns: Iterable[Any] = (), *, default_text: str, model: str) -> None:
        self.turns: list[Any] = list(turns)
        self.default_text = default_text
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.exhausted = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        super().__init__()

    def add_turns(self, *turns: Any) -> None:
        with self._lock:
            self.turns.extend(turns)

    def main_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the main-loop requests, in order."""
        with self._lock:
            return [r["body"] for r in self.requests if r.get("main")]

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> bool:
        """Block until at least `count` main-loop requests arrived (or timeout)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while sum(1 for r in self.requests if r.get("main")) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def _record(self, entry: dict[str, Any]) -> None:
        with self._changed:
            self.requests.append(entry)
            self._changed.notify_all()

    def _next_reply(self, body: dict[str, Any], main: bool, text: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
        """The next turn's items for a main request (a side request gets `default_text`);
        plain strings in a turn become `text(...)` items."""
        turn: Any = None
        if main:
            with self._lock:
                if self.turns:
                    turn = self.turns.pop(0)
                else:
                    self.exhausted += 1
        if turn is None:
            return [text(self.default_text)]
        items = turn(body) if callable(turn) else turn
        return [text(i) if isinstance(i, str) else dict(i) for i in items]


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler that reads JSON bodies and answers JSON."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def read_json(self) -> Any:
        """The request's body as JSON (`{"_unparsed": text}` when it is not)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {"_unparsed": raw.decode("utf-8", errors="replace")}

    def extra_headers(self) -> dict[str, str]:
        """Headers of every answer (a subclass's: an API's request id)."""
        return {}

    def send_json(self, status: int, obj: Any) -> None:
        self._send(status, "application/json", json.dumps(obj).encode())

    def send_sse(self, payload: bytes) -> None:
        """A whole server-sent-events stream, at once (`200`, `text/event-stream`)."""
        self._send(200, "text/event-stream", payload, {"Cache-Control": "no-cache"})
        self.wfile.flush()

    def _send(self, status: int, content_type: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in {**(headers or {}), **self.extra_headers()}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
