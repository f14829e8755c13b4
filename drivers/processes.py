"""Agent processes never outlive their run.

Every process a driver starts for a run (an agent CLI, a scripted shell command) is
spawned here:

1. in a session of its own (so stopping it also stops what it spawned: its process group);
2. with a parent-death signal on Linux (`setpriv --pdeathsig TERM`): if the worker
   process dies — even by SIGKILL — the kernel sends the agent SIGTERM (which lets Claude
   Code flush its transcript, so the run can resume its conversation);
3. registered with the run that started it (`current_run`, a context variable the worker
   sets for the driver's task), so the next worker to own the run can find and stop any
   process group a dead owner left behind before it resumes the run.

A recorded process is identified by (host, pid, start time): a pid the kernel reused for
another program is never signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import os
import shutil
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ProcessHook = Callable[[Mapping[str, Any]], Awaitable[None]]

# Set by the worker for a driver's task: records each process the run starts.
current_run: contextvars.ContextVar[ProcessHook | None] = contextvars.ContextVar("gatehouse_run_processes", default=None)

_SETPRIV = shutil.which("setpriv")


def with_parent_death_signal(argv: Sequence[str]) -> list[str]:
    """`argv` wrapped so that the process gets SIGTERM when its parent dies (Linux)."""
    if _SETPRIV is None or not Path("/proc/self").exists():
        return [str(a) for a in argv]
    return [_SETPRIV, "--pdeathsig", "TERM", "--", *[str(a) for a in argv]]


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ")".
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def identity(pid: int) -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": pid, "start": _start_time(pid)}


def _require_program(program: str, env: Mapping[str, str] | None) -> None:
    """Fail as exec would (FileNotFoundError/PermissionError) before wrapping with setpriv,
    so a missing agent binary is reported as missing, not as an exit code."""
    if os.sep in program:
        if not os.path.isfile(program):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", program)
        if not os.access(program, os.X_OK):
            raise PermissionError(errno.EACCES, "Permission denied", program)
        return
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    if shutil.which(program, path=path) is None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", program)


async def spawn(argv: Sequence[str], **kwargs: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec` for an agent process (see the module docstring)."""
    _require_program(str(argv[0]), kwargs.get("env"))
    proc = await asyncio.create_subprocess_exec(*with_parent_death_signal(argv), start_new_session=True, **kwargs)
    hook = current_run.get()
    if hook is not None:
        await hook(identity(proc.pid))
    return proc


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is `pgid` (field 5 of /proc/<pid>/stat)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _left_behind(record: Mapping[str, Any]) -> bool:
    """Whether the recorded process group still has members that are ours to stop.

    The leader itself, if it is alive with the recorded start time; or, once the leader is
    gone, whatever is left in its group (Linux never hands out a pid that is still some
    group's id, so such members can only come from the recorded leader).
    """
    pid = record.get("pid")
    if record.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 1:
        return False
    start = _start_time(pid)
    if start is not None:
        return start == record.get("start")
    return bool(group_members(pid))


def stop_leftovers(records: Sequence[Mapping[str, Any]], *, grace_s: float = 3.0) -> list[int]:
    """Stop the process groups a dead owner left (SIGTERM, then SIGKILL after `grace_s`).

    Only groups of this host that are still the recorded ones are signalled. Returns the
    group ids that still had members. Blocking (call it from a thread).
    """
    groups = [int(r["pid"]) for r in records if _left_behind(r)]
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(group_members(pgid) for pgid in groups):
        time.sleep(0.05)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return groups


def still_running(record: Mapping[str, Any]) -> bool:
    return _left_behind(record)
