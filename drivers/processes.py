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

With a floor (drivers/sandbox/, the run's `RunContext.floor`), the process is started
inside it: the recorded pid is then bubblewrap's, outside the floor, and killing it kills
everything inside (`--die-with-parent`: the floor's init gets SIGKILL, and with it the
whole pid namespace), so nothing started inside a run survives it. A gentler signal
(SIGTERM: an agent flushing its transcript) goes to the process group inside the floor
instead (`signal_tree`): signalled, bubblewrap itself would die at once and take the
agent with it unwarned. Bubblewrap's own `--die-with-parent` replaces `setpriv` there: a
dead worker's floor is killed, not terminated.
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
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from drivers import agent_env, sandbox

ProcessHook = Callable[[Mapping[str, Any]], Awaitable[None]]

# Set by the worker for a driver's task: records each process the run starts.
current_run: contextvars.ContextVar[ProcessHook | None] = contextvars.ContextVar("gatehouse_run_processes", default=None)
# Set by the worker for a driver's task: told each floor a process starts in, before it starts
# (the run's egress proxy lets that floor's model hosts through: drivers/runegress.py).
floor_used: contextvars.ContextVar[Callable[[sandbox.Floor], None] | None] = contextvars.ContextVar(
    "gatehouse_floor_used", default=None)

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


async def spawn(argv: Sequence[str], *, floor: sandbox.Floor | None = None, **kwargs: Any) -> asyncio.subprocess.Process:
    """`asyncio.create_subprocess_exec` for an agent process (see the module docstring);
    inside `floor` when one is given (the run's; None: no floor)."""
    _require_program(str(argv[0]), kwargs.get("env"))
    if floor is None:
        proc = await asyncio.create_subprocess_exec(*with_parent_death_signal(argv), start_new_session=True, **kwargs)
        record = identity(proc.pid)
    else:
        told = floor_used.get()
        if told is not None:
            told(floor)
        proc = await _spawn_floored(argv, floor, kwargs)
        record = {**identity(proc.pid), "floor": True}
    hook = current_run.get()
    if hook is not None:
        await hook(record)
    return proc


# bwrap's pid -> the release of its launch (bridges), for the processes started inside a floor.
_floored: dict[int, sandbox.Launch] = {}
_releases: set[asyncio.Task[None]] = set()


async def _spawn_floored(argv: Sequence[str], floor: sandbox.Floor, kwargs: dict[str, Any]) -> asyncio.subprocess.Process:
    env = kwargs.pop("env", None)
    env = dict(env) if env is not None else agent_env.build({})  # never the server's own environment
    cwd = str(kwargs.pop("cwd", None) or floor.workspace)
    _require_visible(str(argv[0]), env, floor, cwd)
    bridge_dir = Path(floor.bridge_dir or tempfile.gettempdir()) / ".gatehouse-floor"
    launch = await sandbox.prepare(floor, [str(a) for a in argv], cwd=cwd, env=env, bridge_dir=bridge_dir)
    try:
        proc = await asyncio.create_subprocess_exec(
            *launch.argv, start_new_session=True, pass_fds=launch.pass_fds, env=launch.env, cwd="/", **kwargs
        )
    except BaseException:
        await launch.release()
        raise
    launch.close_fds()
    _floored[proc.pid] = launch
    task = asyncio.ensure_future(_release_when_exited(proc, launch))
    _releases.add(task)
    task.add_done_callback(_releases.discard)
    return proc


async def _release_when_exited(proc: asyncio.subprocess.Process, launch: sandbox.Launch) -> None:
    try:
        await proc.wait()
    finally:
        _floored.pop(proc.pid, None)
        await launch.release()


def _require_visible(program: str, env: Mapping[str, str], floor: sandbox.Floor, cwd: str) -> None:
    """A program or working directory the floor hides fails here, by name, not as an exit
    code of bwrap's."""
    path = program if os.sep in program else shutil.which(program, path=env.get("PATH", os.defpath))
    for what, where in (("program", path), ("working directory", cwd)):
        if where and not sandbox.visible(floor, where):
            raise FileNotFoundError(
                errno.ENOENT,
                f"the {what} is hidden inside the sandbox floor (it lies in a directory the floor hides: Gatehouse's "
                "own files or the server user's home); list it in GATEHOUSE_SANDBOX_READ_PATHS to show it read-only",
                where,
            )


def _inner_init(pid: int) -> tuple[int, bool] | None:
    """bwrap `pid`'s child, the floor's init, and whether it leads its own process group
    yet (`--new-session`; in bwrap's first milliseconds it is still in bwrap's), or None."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        stat = Path(f"/proc/{children[0]}/stat").read_text()
    except (OSError, IndexError):
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return int(children[0]), len(fields) > 2 and fields[2] == children[0]


def _inner_group(pid: int) -> int | None:
    """The process group inside the floor that bwrap `pid` started, or None."""
    init = _inner_init(pid)
    return init[0] if init is not None and init[1] else None


def is_floored(pid: int) -> bool:
    """Whether `pid` is a live bwrap this process started a floor with."""
    return pid in _floored


def signal_tree(pid: int, sig: int, *, floored: bool | None = None) -> bool:
    """Signal the process group of `pid` (started by `spawn`); whether it had a member.

    For a process inside a floor, a signal other than SIGKILL goes to the processes inside
    (their group) and not to bwrap, whose death would SIGKILL them at once. SIGKILL goes
    to bwrap and to the floor's init, which takes the whole floor with it; so does any
    signal while the floor is still being set up (no group inside yet): bwrap sets its
    init's parent-death signal only then, and killing bwrap alone in that window could
    leave the floor running."""
    if floored is None:
        floored = pid in _floored
    if floored:
        init = _inner_init(pid)
        if sig != signal.SIGKILL and init is not None and init[1]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(init[0], sig)
                return True
        if init is not None:
            sig = signal.SIGKILL
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(init[0], signal.SIGKILL)
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def tree_members(pid: int) -> list[int]:
    """Live members of `pid`'s process group and, for a floor, of the group inside it."""
    members = group_members(pid)
    if pid in _floored:
        inner = _inner_group(pid)
        if inner is not None:
            members += group_members(inner)
    return members


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
    left = [r for r in records if _left_behind(r)]
    groups = [int(r["pid"]) for r in left]
    for record in left:
        signal_tree(int(record["pid"]), signal.SIGTERM, floored=bool(record.get("floor")))
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(group_members(pgid) for pgid in groups):
        time.sleep(0.05)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    return groups


def still_running(record: Mapping[str, Any]) -> bool:
    return _left_behind(record)
