"""Stopping an agent's process: its whole group, each part given its own shutdown first."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

from drivers.processes import group_members
from drivers.subprocess_io import JsonLinesProcess

# A leader that ignores its stdin's end and dies at once on SIGTERM, with a child (in its
# group, on pipes of its own) that handles SIGTERM itself: `on_term` runs in the child.
AGENT = """
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", {child!r}], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)  # not the leader's pipes, as Node spawns Claude Code
print('{{"child": %d}}' % child.pid, flush=True)
while True:
    time.sleep(1)
"""
CHILD = """
import signal, sys, time
from pathlib import Path
def on_term(*_):
{on_term}
signal.signal(signal.SIGTERM, on_term)
Path({ready!r}).write_text("ready")
while True:
    time.sleep(1)
"""


async def _start(tmp_path: Path, on_term: str) -> tuple[JsonLinesProcess, int]:
    ready = tmp_path / "ready"
    child = CHILD.format(on_term=textwrap.indent(textwrap.dedent(on_term), "    "), ready=str(ready))
    proc = JsonLinesProcess()
    await proc.start([sys.executable, "-c", AGENT.format(child=child)], cwd=tmp_path, env=None)
    message = await proc.read()
    assert message is not None
    async with asyncio.timeout(30):
        while not ready.exists():  # the child's handler is in place
            await asyncio.sleep(0.01)
    return proc, int(message["child"])


async def test_after_sigterm_the_rest_of_the_group_finishes_its_own_shutdown(tmp_path: Path) -> None:
    # As claude-code-acp's Claude Code flushes its transcript on SIGTERM after its parent died.
    flushed = tmp_path / "flushed"
    proc, child = await _start(tmp_path, f"time.sleep(0.3); Path({str(flushed)!r}).write_text('done'); sys.exit(0)")

    await proc.close(timeout=5.0, terminate_first=True)

    assert flushed.read_text() == "done", "the child was killed before its own shutdown ended"
    assert not group_members(proc.pid or 0)


async def test_a_group_member_that_ignores_sigterm_is_killed_all_the_same(tmp_path: Path) -> None:
    proc, child = await _start(tmp_path, "pass")  # handles SIGTERM by doing nothing

    await proc.close(timeout=2.0, terminate_first=True)

    assert not group_members(proc.pid or 0), f"a member of the agent's group (the child {child}?) outlived close()"
