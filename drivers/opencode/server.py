"""`opencode serve` for one run: started on a free 127.0.0.1 port, stopped and reaped with it.

The server runs in its own process group (a kill also stops the commands its bash tool
started), with basic auth on a per-run random password, so another local process cannot
drive it. stdout and stderr are drained into bounded tails; the port is the one the
server says it listens on. Inside the run's floor it listens in the floor's own network,
which Gatehouse reaches through a Unix socket (`unix_socket`: `Floor.exposing`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import re
import secrets
import shutil
import signal
import socket
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers import processes, sandbox

TAIL_BYTES = 64 * 1024
_LISTENING = re.compile(rb"listening on http://([0-9.]+):(\d+)")


class ServerStartError(Exception):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OpenCodeServer:
    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.username = "gatehouse"
        self.password = secrets.token_urlsafe(24)
        self.host = "127.0.0.1"
        self.port = 0
        self._tail: collections.deque[bytes] = collections.deque(maxlen=256)
        self._listening: asyncio.Future[tuple[str, int]] | None = None
        self._drains: list[asyncio.Task[None]] = []
        self.unix_socket = ""  # inside a floor: where Gatehouse connects to the server

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    @property
    def output_tail(self) -> str:
        return b"".join(self._tail)[-TAIL_BYTES:].decode("utf-8", errors="replace")

    async def start(
        self, binary: str, *, cwd: Path, env: Mapping[str, str], timeout: float = 60.0, attempts: int = 3,
        floor: sandbox.Floor | None = None,
    ) -> None:
        """Start and wait until it listens. The free port is chosen before the server binds
        it, so another process may take it first: an early exit is retried on a new port."""
        for attempt in range(attempts):
            try:
                return await self._start_once(binary, cwd=cwd, env=env, timeout=timeout, floor=floor)
            except ServerStartError:
                if attempt == attempts - 1 or self.returncode is None:
                    raise
                self.proc = None

    async def _start_once(
        self, binary: str, *, cwd: Path, env: Mapping[str, str], timeout: float, floor: sandbox.Floor | None
    ) -> None:
        env = {**env, "OPENCODE_SERVER_USERNAME": self.username, "OPENCODE_SERVER_PASSWORD": self.password}
        port = free_port()
        argv = [binary, "serve", "--hostname", "127.0.0.1", "--port", str(port), "--print-logs", "--log-level", "WARN"]
        if floor is not None:
            directory = Path(floor.bridge_dir or "/tmp") / ".gatehouse-floor" / f"opencode-{uuid.uuid4().hex[:12]}"
            directory.mkdir(parents=True, exist_ok=True)
            self.unix_socket = str(directory / "http.sock")
            floor = floor.exposing(port, self.unix_socket)
        try:
            # Own process group, parent-death signal, recorded on the run, inside its floor
            # (drivers/processes.py).
            self.proc = await processes.spawn(
                argv, floor=floor, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )  # fmt: skip
        except OSError as exc:
            raise ServerStartError(f"cannot start {binary}: {exc}") from exc
        self._listening = asyncio.get_running_loop().create_future()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._drains = [asyncio.create_task(self._drain(self.proc.stdout)), asyncio.create_task(self._drain(self.proc.stderr))]
        exited: asyncio.Future[Any] = asyncio.ensure_future(self.proc.wait())
        listening: asyncio.Future[Any] = self._listening
        try:
            done, _ = await asyncio.wait({listening, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            exited.cancel()
        if self._listening in done:
            self.host, self.port = self._listening.result()
            return
        if self.proc.returncode is not None:
            raise ServerStartError(f"opencode serve exited (code {self.proc.returncode}) before listening: {self.output_tail[-2000:]}")
        raise ServerStartError(f"opencode serve did not listen within {timeout:g} s: {self.output_tail[-2000:]}")

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        buffer = b""
        while chunk := await stream.read(65536):
            self._tail.append(chunk)
            if self._listening is not None and not self._listening.done():
                buffer = (buffer + chunk)[-4096:]
                match = _LISTENING.search(buffer)
                if match:
                    self._listening.set_result((match.group(1).decode(), int(match.group(2))))

    async def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM the group, SIGKILL what is left after `timeout`, reap. Safe to repeat."""
        proc = self.proc
        if proc is None:
            return None
        if proc.returncode is None:
            self._signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), timeout)
            except TimeoutError:
                self._signal(signal.SIGKILL)
                await proc.wait()
        self._signal(signal.SIGKILL)  # leftovers of the group (a command still running)
        for task in self._drains:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 1.0)
        if self.unix_socket:  # the floor's ingress socket and its directory
            shutil.rmtree(Path(self.unix_socket).parent, ignore_errors=True)
        return proc.returncode

    async def wait(self) -> int:
        assert self.proc is not None
        return await self.proc.wait()

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            processes.signal_tree(self.proc.pid, sig)
