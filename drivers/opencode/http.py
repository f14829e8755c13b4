"""A minimal HTTP/1.1 client for one local `opencode serve`: JSON requests and the SSE stream.

Only what the driver needs, on asyncio streams (no third-party client): one connection per
request (`Connection: close`), Content-Length or chunked bodies, and `GET /event` read
as server-sent events, one `data:` line per event. Bounds: a body or an event line may be
at most `MAX_BYTES`; a line that is not a JSON object is a `StreamError`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from drivers.sandbox import open_unix

MAX_BYTES = 8 * 1024 * 1024


class HttpError(Exception):
    """The server could not be reached, or answered something that is not HTTP."""


class StreamError(Exception):
    """The event stream carried a line that is not a JSON event."""


class OpenCodeHttp:
    def __init__(self, host: str, port: int, *, username: str, password: str, unix_socket: str = "") -> None:
        self.host = host
        self.port = port
        self.unix_socket = unix_socket  # the server is inside a floor: reached through this socket
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self._auth = f"Basic {token}"

    async def _open(self, method: str, path: str, body: Any | None, accept: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int, dict[str, str]]:
        try:
            if self.unix_socket:
                reader, writer = await open_unix(self.unix_socket, limit=MAX_BYTES + 2)
            else:
                reader, writer = await asyncio.open_connection(self.host, self.port, limit=MAX_BYTES + 2)
        except OSError as exc:
            raise HttpError(f"cannot reach opencode at {self.host}:{self.port}: {exc}") from exc
        data = b"" if body is None else json.dumps(body).encode()
        head = [
            f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Authorization: {self._auth}",
            f"Accept: {accept}", "Connection: close", f"Content-Length: {len(data)}",
        ]  # fmt: skip
        if body is not None:
            head.append("Content-Type: application/json")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        try:
            await writer.drain()
            status_line = await reader.readline()
            parts = status_line.decode("latin-1").split(" ", 2)
            if len(parts) < 2 or not parts[1].isdigit():
                raise HttpError(f"opencode answered {method} {path} with {status_line[:100]!r}")
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
        except (OSError, ValueError, asyncio.LimitOverrunError) as exc:
            writer.close()
            raise HttpError(f"{method} {path}: {exc}") from exc
        return reader, writer, int(parts[1]), headers

    async def request(self, method: str, path: str, body: Any | None = None, *, timeout: float = 30.0) -> tuple[int, Any]:
        """(status, parsed JSON body or None)."""
        async def call() -> tuple[int, Any]:
            reader, writer, status, headers = await self._open(method, path, body, "application/json")
            try:
                raw = await _read_body(reader, headers)
            finally:
                writer.close()
            if not raw.strip():
                return status, None
            try:
                return status, json.loads(raw)
            except ValueError:
                return status, raw.decode("utf-8", errors="replace")

        try:
            return await asyncio.wait_for(call(), timeout)
        except TimeoutError:
            raise HttpError(f"{method} {path}: no answer within {timeout:g} s") from None

    async def events(self, path: str = "/event") -> AsyncIterator[dict[str, Any]]:
        """The server's events, as parsed `data:` lines, until the stream ends."""
        reader, writer, status, headers = await self._open("GET", path, None, "text/event-stream")
        try:
            if status != 200:
                raise HttpError(f"GET {path} answered {status}")
            lines = _chunked_lines(reader) if "chunked" in headers.get("transfer-encoding", "") else _plain_lines(reader)
            async for line in lines:
                text = line.rstrip(b"\r\n")
                if not text.startswith(b"data:"):
                    continue  # blank separators, comments, `event:`/`id:` fields
                payload = text[5:].strip()
                try:
                    event = json.loads(payload)
                except ValueError:
                    raise StreamError(f"opencode sent an event that is not JSON: {payload[:200].decode('utf-8', 'replace')}") from None
                if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                    raise StreamError(f"opencode sent an event without a type: {payload[:200].decode('utf-8', 'replace')}")
                yield event
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", ""):
        parts = []
        async for line in _chunked_lines(reader):
            parts.append(line)
            if sum(map(len, parts)) > MAX_BYTES:
                raise HttpError("response body too large")
        return b"".join(parts)
    if "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BYTES:
            raise HttpError("response body too large")
        return await reader.readexactly(length)
    return await reader.read(MAX_BYTES)


async def _plain_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while line := await reader.readline():
        yield line


async def _chunked_lines(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """Lines of a chunked body (a line may span chunks)."""
    pending = b""
    while True:
        size_line = await reader.readline()
        if not size_line:
            break
        try:
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
        except ValueError:
            raise HttpError(f"bad chunk size {size_line[:40]!r}") from None
        if size == 0:
            break
        pending += await reader.readexactly(size)
        await reader.readexactly(2)
        if len(pending) > MAX_BYTES:
            raise StreamError(f"opencode sent an event line longer than {MAX_BYTES} bytes")
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if pending:
        yield pending
