"""Stream plumbing the egress proxy needs around asyncio's streams: send without caring
whether the peer is still there, notice a hang-up without reading, close after an error
answer without losing it, and splice two connections together."""

from __future__ import annotations

import asyncio
import contextlib


def abort_if_failed(task: asyncio.Task, writer: asyncio.StreamWriter) -> None:
    if not task.cancelled() and task.exception() is not None:
        writer.transport.abort()


async def hung_up(reader: asyncio.StreamReader) -> None:
    """Returns once the client has closed its side (the transport keeps reading while nobody
    awaits the reader, so its end of file shows without consuming what the client sent)."""
    while not reader.at_eof():
        await asyncio.sleep(0.25)


async def linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Close after an error answer without losing it: a socket closed with unread input is
    reset, and the reset can reach the client before the answer does. So stop writing, then
    read and drop what the client still sends, for a second at most."""
    with contextlib.suppress(ConnectionError, OSError, TimeoutError, asyncio.LimitOverrunError):
        if writer.can_write_eof():
            writer.write_eof()
        async with asyncio.timeout(1.0):
            while await reader.read(65536):
                pass


async def send(writer: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(ConnectionError):
        writer.write(data)
        await writer.drain()


async def splice(a_reader: asyncio.StreamReader, a_writer: asyncio.StreamWriter,
                  b_reader: asyncio.StreamReader, b_writer: asyncio.StreamWriter) -> None:
    """Copy both ways until both sides have finished; one side's end is passed on as EOF."""

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except (ConnectionError, OSError):
            a_writer.transport.abort()  # one side broke: end both, so the other pipe ends too
            b_writer.transport.abort()

    await asyncio.gather(pipe(a_reader, b_writer), pipe(b_reader, a_writer))
