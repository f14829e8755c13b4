"""Spawn an agent CLI that speaks JSON lines on stdio, read it safely, and reap it.

Shared by the drivers whose agent is a child process (Claude Code, Codex app-server).
The API is deliberately small:

    proc = JsonLinesProcess(max_line_bytes=8 * 1024 * 1024, stderr_tail_bytes=64 * 1024)
    await proc.start(argv, cwd=workspace, env=env)   # raises ProcessStartError
    await proc.send({"type": "..."})                 # raises ProcessExitedError
    msg = await proc.read()                          # dict, or None at EOF;
                                                     # raises ProtocolError on a bad line
    proc.stderr_tail                                 # last bytes of stderr, as text
    proc.returncode                                  # None while running
    await proc.close(timeout=5.0)                    # stdin EOF, TERM, KILL; always reaps

Bounds: one stdout line may be at most `max_line_bytes` (a longer one is a
`ProtocolError`), and only the last `stderr_tail_bytes` of stderr are kept in memory, so a
chatty or broken agent cannot grow the worker's memory without limit.

The child runs in its own session (process group) so that `close()` also stops what the
agent spawned (a shell command still running when the run ends), not only the agent.
Only one task should call `read()` at a time; `send()` may be called from any task.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drivers import processes, sandbox

__all__ = ["JsonLinesProcess", "ProtocolError", "ProcessExitedError", "ProcessStartError"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
DEFAULT_STDERR_TAIL_BYTES = 64 * 1024
# After SIGTERM to an agent's group, how long the rest of the group gets to exit by itself.
GROUP_GRACE_S = 1.0
# How long close() waits for its final SIGKILL to take the group down.
KILL_WAIT_S = 5.0


class ProtocolError(Exception):
    """The agent wrote something that is not one JSON object per line (or a too-long line)."""


class ProcessExitedError(Exception):
    """The agent's stdin is closed: it exited (or closed its end) before we could write."""


class ProcessStartError(Exception):
    """The agent could not be started (binary missing, not executable, bad cwd)."""


class JsonLinesProcess:
    def __init__(
        self,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        stderr_tail_bytes: int = DEFAULT_STDERR_TAIL_BYTES,
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self.stderr_tail_bytes = stderr_tail_bytes
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_chunks: collections.deque[bytes] = collections.deque()
        self._stderr_size = 0
        self._stderr_task: asyncio.Task[None] | None = None
        self._write_lock = asyncio.Lock()
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------

    async def start(
        self, argv: Sequence[str], cwd: str | os.PathLike[str] | None, env: Mapping[str, str] | None,
        *, floor: sandbox.Floor | None = None,
    ) -> None:
        """Start the child with pipes on stdin/stdout/stderr. `env` is the whole environment;
        `floor` the run's sandbox, with the agent's model endpoints (None: no floor)."""
        if self._proc is not None:
            raise RuntimeError("process already started")
        try:
            # Own session, parent-death signal, recorded on the run (drivers/processes.py).
            self._proc = await processes.spawn(
                [str(a) for a in argv],
                floor=floor,
                cwd=str(cwd) if cwd is not None else None,
                env=dict(env) if env is not None else None,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                # The stream limit bounds one line; +1 leaves room for the newline.
                limit=self.max_line_bytes + 1,
            )
        except (OSError, ValueError) as exc:
            raise ProcessStartError(f"cannot start {Path(str(argv[0])).name}: {exc}") from exc
        self._stderr_task = asyncio.create_task(self._drain_stderr())

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc else None

    @property
    def stderr_tail(self) -> str:
        """The last `stderr_tail_bytes` of the child's stderr (decoded, lossy)."""
        data = b"".join(self._stderr_chunks)[-self.stderr_tail_bytes :]
        return data.decode("utf-8", errors="replace")

    async def close(self, timeout: float = 5.0, *, terminate_first: bool = False) -> int | None:
        """Stop the child and reap it; safe to call more than once and from `finally`.

        Closes stdin first (a well-behaved agent exits on EOF), waits up to `timeout`
        seconds in total, sending SIGTERM to the process group after half of it and
        SIGKILL when it is over. Returns the exit code (None if never started).

        `terminate_first` sends SIGTERM before closing stdin: an agent that is stopped to be
        resumed later (the worker shuts down, the run hibernates) keeps its pending request
        open in its transcript instead of recording it as refused at EOF.
        """
        proc = self._proc
        if proc is None:
            return None
        terminated = False
        if terminate_first and proc.returncode is None and not self._closed:
            self._signal_group(proc, signal.SIGTERM)
            terminated = True
            await self._wait(proc, timeout / 2)
        if not self._closed:
            self._closed = True
            if proc.stdin is not None and not proc.stdin.is_closing():
                with contextlib.suppress(Exception):
                    proc.stdin.close()
        if proc.returncode is None:
            if not await self._wait(proc, timeout / 2):
                self._signal_group(proc, signal.SIGTERM)
                terminated = True
                if not await self._wait(proc, timeout / 2):
                    self._signal_group(proc, signal.SIGKILL)
                    await proc.wait()
        if terminated:
            # The group had SIGTERM: let the rest of it finish its own shutdown (an agent's
            # child, such as claude-code-acp's Claude Code, flushes its transcript on
            # SIGTERM) before what is left is killed.
            await self._wait_for_group(proc.pid, GROUP_GRACE_S)
        # Leftovers in the agent's process group (a backgrounded shell command) go too, and
        # close() returns once they are gone: SIGKILL is delivered, not waited for.
        if self._signal_group(proc, signal.SIGKILL) and not await self._wait_for_group(proc.pid, KILL_WAIT_S):
            logger.warning("agent process group %s outlived SIGKILL for %.0f s", proc.pid, KILL_WAIT_S)
        if self._stderr_task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._stderr_task), 1.0)
            except (TimeoutError, Exception):
                self._stderr_task.cancel()
                with contextlib.suppress(BaseException):
                    await self._stderr_task
        return proc.returncode

    async def wait(self) -> int:
        """Wait for the child to exit by itself and return its exit code."""
        assert self._proc is not None, "not started"
        return await self._proc.wait()

    # -- I/O -------------------------------------------------------------------------------

    async def send(self, obj: Mapping[str, Any]) -> None:
        """Write one JSON object as one line (compact, UTF-8) and drain."""
        proc = self._require()
        if proc.stdin is None or proc.stdin.is_closing():
            raise ProcessExitedError("agent stdin is closed")
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        async with self._write_lock:
            try:
                proc.stdin.write(line.encode("utf-8"))
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError, RuntimeError) as exc:
                raise ProcessExitedError(f"agent stdin is closed: {exc}") from exc

    async def read(self) -> dict[str, Any] | None:
        """Return the next JSON object from stdout, or None at EOF. Blank lines are skipped.

        Raises ProtocolError for a line that is too long, not UTF-8, not JSON, or not an
        object; the message quotes (a bounded part of) the offending line.
        """
        proc = self._require()
        assert proc.stdout is not None
        while True:
            try:
                raw = await proc.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError) as exc:
                raise ProtocolError(f"agent wrote a line longer than {self.max_line_bytes} bytes") from exc
            if not raw:
                return None
            if len(raw) > self.max_line_bytes + 1:
                raise ProtocolError(f"agent wrote a line longer than {self.max_line_bytes} bytes")
            text = raw.strip()
            if not text:
                continue
            try:
                value = json.loads(text.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise ProtocolError(f"agent wrote a line that is not JSON: {_excerpt(text)}") from exc
            if not isinstance(value, dict):
                raise ProtocolError(f"agent wrote JSON that is not an object: {_excerpt(text)}")
            return value

    # -- internals -------------------------------------------------------------------------

    def _require(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise RuntimeError("process not started")
        return self._proc

    async def _drain_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        stream = self._proc.stderr
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self._stderr_chunks.append(chunk)
            self._stderr_size += len(chunk)
            while self._stderr_size - len(self._stderr_chunks[0]) >= self.stderr_tail_bytes:
                self._stderr_size -= len(self._stderr_chunks.popleft())

    @staticmethod
    async def _wait(proc: asyncio.subprocess.Process, timeout: float) -> bool:
        try:
            await asyncio.wait_for(proc.wait(), max(timeout, 0.01))
            return True
        except TimeoutError:
            return False

    @staticmethod
    async def _wait_for_group(pgid: int, timeout: float) -> bool:
        """Whether every process of group `pgid` exited within `timeout` (a /proc scan,
        off the event loop, every 10 ms)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while await asyncio.to_thread(processes.tree_members, pgid):
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    @staticmethod
    def _signal_group(proc: asyncio.subprocess.Process, sig: int) -> bool:
        """Signal the agent's process group; whether the group had a member to signal."""
        # start_new_session=True made the child the leader of a group whose id is its pid
        # (inside a floor: the group inside it, drivers/processes.py).
        delivered = processes.signal_tree(proc.pid, sig)
        if proc.returncode is None and not processes.is_floored(proc.pid):
            with contextlib.suppress(ProcessLookupError, OSError):
                proc.send_signal(sig)
        return delivered


def _excerpt(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "…"
