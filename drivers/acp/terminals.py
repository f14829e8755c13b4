"""`terminal/*` on the client side: commands in the workspace, output bounded, always reaped.

Each terminal is a child in its own process group (so a kill stops what the command
spawned), with stdout and stderr merged. Only the last `limit` bytes of output are kept,
cut at a character boundary, as the protocol asks (`truncated` says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

from drivers import processes, sandbox


class Terminal:
    def __init__(self, terminal_id: str, *, limit: int) -> None:
        self.id = terminal_id
        self.limit = max(limit, 1)
        self.proc: asyncio.subprocess.Process | None = None
        self._output = bytearray()
        self.truncated = False
        self._reader: asyncio.Task[None] | None = None
        self.step_id: int | None = None  # the Gatehouse step this command runs for

    async def start(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], floor: sandbox.Floor | None = None) -> None:
        # Own process group, parent-death signal, recorded on the run, inside the run's floor
        # (drivers/processes.py); a command needs no model endpoint.
        self.proc = await processes.spawn(
            argv, floor=floor, cwd=str(cwd), env=dict(env), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self._output += chunk
            if len(self._output) > self.limit:
                del self._output[: len(self._output) - self.limit]
                self.truncated = True

    @property
    def output(self) -> str:
        data = bytes(self._output)
        if self.truncated:
            # Drop a partial UTF-8 sequence left at the front by the cut.
            while data and (data[0] & 0xC0) == 0x80:
                data = data[1:]
        return data.decode("utf-8", errors="replace")

    def exit_status(self) -> tuple[int | None, str | None] | None:
        """(exit code, signal name) once the command ended, else None."""
        if self.proc is None or self.proc.returncode is None:
            return None
        code = self.proc.returncode
        if code < 0:
            try:
                return None, signal.Signals(-code).name
            except ValueError:
                return None, str(-code)
        return code, None

    async def wait(self, timeout: float | None = None) -> tuple[int | None, str | None]:
        assert self.proc is not None
        try:
            await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.kill()
            await self.proc.wait()
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._reader, 5)
        status = self.exit_status()
        assert status is not None
        return status

    def kill(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    async def release(self) -> None:
        """Kill (whatever is left of the group) and reap."""
        self.kill()
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.proc.wait(), 5)
        if self._reader is not None and not self._reader.done():
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
