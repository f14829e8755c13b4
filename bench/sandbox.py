"""What the sandbox floor adds to starting a process (issue 28's targets: ≤ 50 ms more at
p50 for an agent start, ≤ 15 ms more for a scripted command). Not a test: figures.

Each case is timed ROUNDS times, with and without the floor, through the code a run uses
(`drivers.processes.spawn`, the floor the worker builds for a run: drivers/runfloor.py):

- a process start: `true`, from spawn to its exit;
- an agent start: `node -e 0` (the agent CLIs' runtime) with one model-endpoint bridge,
  as a Claude Code run gets one (the floor's wrapper starts socat and waits for it);
- one scripted command: the scripted driver's `bash -c true` step, its output drained
  (ScriptedDriver._bash, the path of every scripted shell step).

    .venv/bin/python bench/sandbox.py [--rounds 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR = Path(tempfile.mkdtemp(prefix="gatehouse-bench-"))
os.environ["GATEHOUSE_VAR_DIR"] = str(VAR)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("GATEHOUSE_LOG_LEVEL", "WARNING")

import django  # noqa: E402

django.setup()

from approvals.policy import compile_policy, denied_reads  # noqa: E402
from drivers import processes, runfloor, sandbox  # noqa: E402
from drivers.scripted import ScriptedDriver  # noqa: E402
from tests.drivers.fake_context import FakeRunContext  # noqa: E402

MODEL_URL = "http://127.0.0.1:18080"  # never connected to: only the bridge's start is timed


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _timed(rounds: int, once: Callable[[], Awaitable[Any]]) -> list[float]:
    await once()  # warm: the probe, the page cache
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        await once()
        times.append((time.perf_counter() - start) * 1000)
    return times


async def _spawn(argv: list[str], floor: sandbox.Floor | None, env: dict[str, str]) -> None:
    proc = await processes.spawn(argv, floor=floor, cwd=floor.workspace if floor else None, env=env,
                                 stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                                 stderr=asyncio.subprocess.DEVNULL)
    await proc.wait()


def _row(name: str, bare: list[float], floored: list[float]) -> str:
    p50, p90 = statistics.median(bare), _percentile(bare, 0.9)
    f50, f90 = statistics.median(floored), _percentile(floored, 0.9)
    return f"{name:<34} {p50:7.1f} {p90:7.1f} {f50:9.1f} {f90:9.1f} {f50 - p50:+9.1f}"


async def main(rounds: int) -> None:
    availability = sandbox.availability()
    if not availability.available:
        print(f"the floor cannot be built here: {availability.reason}")
        return
    workspace, runtime = VAR / "ws", VAR / "runtime" / "session-1"
    workspace.mkdir(parents=True)
    runtime.mkdir(parents=True)
    floor = runfloor.run_floor(workspace=workspace, runtime_dir=runtime, run_policy={})
    assert floor is not None
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(runtime)}
    node = shutil.which("node") or "node"
    with_bridge = floor.reaching([MODEL_URL])

    print(f"sandbox floor overhead, {rounds} rounds each (ms)")
    print(f"{'case':<34} {'bare p50':>7} {'p90':>7} {'floor p50':>9} {'p90':>9} {'added p50':>9}")
    bare = await _timed(rounds, lambda: _spawn(["true"], None, env))
    floored = await _timed(rounds, lambda: _spawn(["true"], floor, env))
    print(_row("process start (true)", bare, floored))
    bare = await _timed(rounds, lambda: _spawn([node, "-e", "0"], None, env))
    floored = await _timed(rounds, lambda: _spawn([node, "-e", "0"], with_bridge, env))
    print(_row("agent start (node -e 0, 1 bridge)", bare, floored))

    driver = ScriptedDriver()
    plain = FakeRunContext(workspace=workspace, runtime_dir=runtime, decide=lambda r: None, floor=None)  # type: ignore[arg-type, return-value]
    inside = FakeRunContext(workspace=workspace, runtime_dir=runtime, decide=lambda r: None, floor=floor)  # type: ignore[arg-type, return-value]
    bare = await _timed(rounds, lambda: driver._bash(plain, "true"))  # type: ignore[arg-type]
    floored = await _timed(rounds, lambda: driver._bash(inside, "true"))  # type: ignore[arg-type]
    print(_row("scripted command (bash -c true)", bare, floored))
    _denied_reads_scan()


def _denied_reads_scan() -> None:
    """What a run's start pays to find the files its floor hides (`reads` deny rules):
    a walk of the workspace matched against the rules, 1,000 and 20,000 files."""
    policy = compile_policy({"reads": {"deny": [".env*", "secrets/**"], "allow": ["**"]}})
    print("files a reads deny hides, found at a run's start (ms; p50 of 20)")
    for count in (1_000, 20_000):
        ws = VAR / f"scan-{count}"
        for i in range(count):
            directory = ws / f"d{i // 100}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / (".env" if i % 1000 == 0 else f"f{i}.py")).write_text("")
        times = []
        for _ in range(20):
            start = time.perf_counter()
            hidden, _ = denied_reads(policy, str(ws))
            times.append((time.perf_counter() - start) * 1000)
        print(f"  workspace of {count:>6,} files: {statistics.median(times):7.2f}  ({len(hidden)} hidden)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    asyncio.run(main(parser.parse_args().rounds))
    shutil.rmtree(VAR, ignore_errors=True)
