"""The plumbing both fake model servers share: a threaded HTTP server on a free
127.0.0.1 port, started and stopped as a context manager."""

from __future__ import annotations

import threading
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
