"""What the egress proxy tests connect to: a real HTTP/1.1 server that echoes each request,
a TCP echo server standing in for an HTTPS server behind CONNECT, and a socat bridge from a
127.0.0.1 port to the proxy's Unix socket, as the sandbox floor sets it up."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.fakes.http import BackgroundHTTPServer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _EchoHandler(BaseHTTPRequestHandler):
    """Answers every request with JSON naming what arrived; `/chunked` answers chunked,
    `/big?n=N` answers N bytes."""

    protocol_version = "HTTP/1.1"  # keep-alive and chunked, as real servers speak
    fake: HttpTarget

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while (size := int(self.rfile.readline().split(b";")[0], 16)) > 0:
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b""):
                pass
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _answer(self) -> None:
        body = self._body()
        seen = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                "body": body.decode("latin-1"), "client": self.client_address[0]}
        self.fake.requests.append(seen)
        if self.path.startswith("/big"):
            payload = b"x" * int(self.path.partition("n=")[2])
        else:
            payload = json.dumps(seen).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (payload[:10], payload[10:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


class HttpTarget(BackgroundHTTPServer):
    handler_class = _EchoHandler
    thread_name = "egress-target"

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []


class EchoTarget:
    """A TCP server that sends back what it receives (what a tunnel carries does not matter)."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = int(self._sock.getsockname()[1])
        self.peers: list[str] = []
        threading.Thread(target=self._accept, name="egress-echo", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self._sock.accept()
            except OSError:
                return
            self.peers.append(peer[0])
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def close(self) -> None:
        self._sock.close()


class Bridge:
    """`socat TCP-LISTEN:<port>,bind=127.0.0.1,fork UNIX-CONNECT:<socket>`: the proxy as a
    process inside the floor reaches it."""

    def __init__(self, socket_path: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self._process = subprocess.Popen(
            ["socat", f"TCP-LISTEN:{self.port},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{socket_path}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.02)
        self.close()
        raise RuntimeError("socat did not start listening")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=5)
