"""The ACP SDK's `Transport` over our own child process (drivers/subprocess_io.py).

The SDK's stdio transport is not used: it skips a line that is not JSON and carries on
(the run must fail instead, with the line in its activity log), joins an over-long line
in memory whatever its size, and starts the agent with part of the server's environment
(HOME, USER, SHELL…) merged in. `JsonLinesProcess` bounds lines and stderr, runs the agent
in its own process group and always reaps it; this class only adapts it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from drivers.subprocess_io import JsonLinesProcess, ProcessExitedError, ProtocolError


class ProcessTransport:
    """Moves JSON-RPC messages to and from the agent. A bad line ends the stream (the SDK
    then rejects every pending request) and is kept in `error` for the driver to report."""

    def __init__(self, proc: JsonLinesProcess) -> None:
        self.proc = proc
        self.error = ""
        self.eof = asyncio.Event()
        self.last_received = 0.0

    async def send(self, message: dict[str, Any]) -> None:
        try:
            await self.proc.send(message)
        except ProcessExitedError as exc:
            raise ConnectionError(str(exc)) from exc

    async def receive(self) -> dict[str, Any] | None:
        try:
            message = await self.proc.read()
        except ProtocolError as exc:
            self.error = str(exc)
            message = None
        if message is not None and not _is_jsonrpc(message):
            self.error = f"agent wrote JSON that is not a JSON-RPC message: {str(message)[:200]}"
            message = None
        self.last_received = asyncio.get_running_loop().time()
        if message is None:
            self.eof.set()
        return message

    async def close(self) -> None:
        # The driver stops the process itself (`JsonLinesProcess.close`), after the SDK.
        return None


def _is_jsonrpc(message: dict[str, Any]) -> bool:
    if isinstance(message.get("method"), str):
        return True
    return "id" in message and ("result" in message or "error" in message)
