"""`drivers.processes` with a floor: the recorded pid still stops the whole tree, a gentle
signal reaches the processes inside first, and a process is started by name only if the
floor shows it."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

import pytest

from drivers import processes, sandbox
from tests.sandbox.escapes import marked

pytestmark = [pytest.mark.usefixtures("floor_available")]

ENV = {"PATH": "/usr/bin:/bin"}


def _floor(tmp_path: Path) -> sandbox.Floor:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return sandbox.Floor(mode="workspace-write", workspace=str(workspace), writable=(str(tmp_path / "rt"),),
                         hidden=(str(tmp_path / "hidden"),), bridge_dir=str(tmp_path))


async def _spawn(floor: sandbox.Floor, script: str) -> asyncio.subprocess.Process:
    records: list[dict[str, object]] = []

    async def record(entry: object) -> None:
        records.append(dict(entry))  # type: ignore[call-overload]

    token = processes.current_run.set(record)
    try:
        proc = await processes.spawn(["bash", "-c", script], floor=floor, cwd=floor.workspace, env=ENV,
                                     stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL)
    finally:
        processes.current_run.reset(token)
    assert records == [{**processes.identity(proc.pid), "floor": True}]
    return proc


async def _until(check: object, timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():  # type: ignore[operator]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met")
        await asyncio.sleep(0.05)


async def test_killing_the_recorded_pid_kills_everything_inside(tmp_path: Path) -> None:
    marker = f"gh-floor-{uuid.uuid4().hex[:8]}"
    proc = await _spawn(_floor(tmp_path), f"(setsid bash -c 'exec -a {marker} sleep 300' &) ; exec -a {marker} sleep 300")
    await _until(lambda: len(marked(marker)) == 2)
    processes.signal_tree(proc.pid, signal.SIGKILL)
    await proc.wait()
    await _until(lambda: not marked(marker), timeout=5)


async def test_sigterm_reaches_the_agent_inside_before_the_floor_falls(tmp_path: Path) -> None:
    floor = _floor(tmp_path)
    proc = await _spawn(floor, "trap 'echo flushed > flushed.txt; exit 0' TERM; touch ready; sleep 300 & wait")
    await _until(lambda: (Path(floor.workspace) / "ready").exists())
    assert processes.signal_tree(proc.pid, signal.SIGTERM)
    assert await asyncio.wait_for(proc.wait(), 10) == 0  # the agent's own exit, not bwrap killed
    assert (Path(floor.workspace) / "flushed.txt").read_text() == "flushed\n"


async def test_stop_leftovers_stops_a_floor_a_dead_worker_left(tmp_path: Path) -> None:
    marker = f"gh-floor-{uuid.uuid4().hex[:8]}"
    proc = await _spawn(_floor(tmp_path), f"exec -a {marker} sleep 300")
    await _until(lambda: bool(marked(marker)))
    record = {**processes.identity(proc.pid), "floor": True}
    assert processes.still_running(record)
    assert await asyncio.to_thread(processes.stop_leftovers, [record], grace_s=2) == [proc.pid]
    await proc.wait()
    await _until(lambda: not marked(marker), timeout=5)


async def test_a_program_the_floor_hides_fails_by_name(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden" / "bin"
    hidden.mkdir(parents=True)
    program = hidden / "agent"
    program.write_text("#!/bin/sh\ntrue\n")
    program.chmod(0o755)
    with pytest.raises(FileNotFoundError, match="hidden inside the sandbox floor"):
        await processes.spawn([str(program)], floor=_floor(tmp_path), env=ENV)
