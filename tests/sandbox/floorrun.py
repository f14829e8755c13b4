"""Run a shell script inside a floor, for the tests: real bubblewrap, bounded in time."""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from drivers import sandbox


def require_floor() -> None:
    """Skip (fail with GATEHOUSE_REQUIRE_SANDBOX=1) where the floor cannot be built."""
    availability = sandbox.availability()
    if availability.available:
        return
    message = f"the sandbox floor cannot be built here: {availability.reason}"
    if os.environ.get("GATEHOUSE_REQUIRE_SANDBOX") == "1":
        pytest.fail(message + " (GATEHOUSE_REQUIRE_SANDBOX=1)")
    pytest.skip(message)


# The fixture `floor_available` (tests/conftest.py) calls `require_floor`.
requires_floor = pytest.mark.usefixtures("floor_available")


@dataclass
class Done:
    returncode: int
    stdout: str


def run_in(floor: sandbox.Floor, script: str, *, env: dict[str, str] | None = None, timeout: float = 30) -> Done:
    """`bash -c script` inside `floor` (cwd: its workspace), stdout and stderr together."""

    async def run() -> Done:
        launch = await sandbox.prepare(floor, ["bash", "-c", script], cwd=floor.workspace,
                                       env=env or {"PATH": "/usr/local/bin:/usr/bin:/bin"},
                                       bridge_dir=Path(floor.bridge_dir or floor.workspace))
        try:
            proc = await asyncio.create_subprocess_exec(
                *launch.argv, pass_fds=launch.pass_fds, env=launch.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            )
            launch.close_fds()
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
            return Done(proc.returncode or 0, out.decode(errors="replace"))
        finally:
            await launch.release()

    return asyncio.run(run())
