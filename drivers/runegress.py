"""One run's way to the network: its egress proxy, and how each connection is decided.

Inside the sandbox floor nothing is reachable but the bridges; every other connection an
agent (or a command it runs) makes goes to this run's egress proxy (drivers/sandbox/
egress.py) over a Unix socket bridged to 127.0.0.1:3128 inside. For each connection:

1. the agent's own model API (the floor's `model_hosts`, told at each spawn) goes through
   unasked;
2. the run's rule policy decides at once, without a query, by its `network` section
   (`approvals.policy.network`): an allowed host is connected, a refused one refused with
   the reason (said once per host on the run's timeline);
3. before the agent's first tool request, what it would ask is refused without asking
   anyone: it is the agent program's own traffic (Codex fetching from github.com at start,
   an SDK calling its vendor's API beside the configured endpoint), not the task's; told
   once per host on the timeline. So, at any time, are the hosts a driver names as its
   agent's own (`Floor.own_hosts`: Codex's chatgpt.com);
4. after it, what it asks becomes a request of the run like any other: `ctx.gate` with tool
   `network` (subtype `network`): recorded as a step, decided by the session's grants
   ("Always allow this host in this session"), the runtime mode or a person in the inbox;
   the connection waits meanwhile (bounded by the approval's deadline), then proceeds or is
   refused with the reason. Several connections to one host wait on one question; an
   approved host stays reachable for the rest of the run, a refused one is refused without
   asking again for a minute (a package manager retrying must not flood the inbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from approvals import policy as core
from approvals.policy.network import DEFAULT_NETWORK, network_screen
from approvals.policy.request import NETWORK_TOOL
from drivers import sandbox
from drivers.base import GateAnswer, ToolRequest
from drivers.sandbox.egress import EgressProxy, system_resolve

logger = logging.getLogger(__name__)

INSIDE_PORT = 3128
REFUSED_FOR_S = 60.0


class RunEgress:
    """The egress proxy of one run (`start` before its agent starts, `stop` at its end)."""

    def __init__(self, ctx: Any, policy: core.CompiledPolicy) -> None:
        self.ctx = ctx
        self.policy = policy
        self.proxy: EgressProxy | None = None
        self._dir: Path | None = None
        self._asking: dict[tuple[str, int], asyncio.Future[tuple[bool, str]]] = {}
        self._approved: set[tuple[str, int]] = set()
        self._refused: dict[tuple[str, int], tuple[float, str]] = {}
        self._told: set[tuple[str, int]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        # the agent has made its first tool request: before it, connections are the agent
        # program's own (update checks, telemetry, plugin lists), not the task's
        self.task_started = False
        self._own_hosts: set[str] = set()  # what the agent program calls on its own (Floor.own_hosts)

    async def start(self) -> str:
        """Listen; the socket's path (short: a Unix socket path has at most 107 bytes)."""
        self._dir = Path(tempfile.mkdtemp(prefix=f"gh-egress-{self.ctx.run_id}-"))
        path = self._dir / "proxy.sock"
        network = self.policy.network or DEFAULT_NETWORK
        pinned = {str(k).lower(): [str(a) for a in v] for k, v in (self.ctx.settings.get("egress_hosts") or {}).items()}

        async def resolve(host: str, port: int) -> list[str]:
            return pinned[host] if host in pinned else await system_resolve(host, port)

        def screen(host: str, port: int) -> str | None:
            # what the name alone refuses is refused before any DNS lookup (said on the timeline)
            verdict = network_screen(network, host, port)
            if verdict is None:
                return None
            self._later(self._tell_refused((host, port), verdict.reason))
            return verdict.reason

        self.proxy = EgressProxy(path, self.decide, screen=screen, resolve=resolve, names_first=True)
        await self.proxy.start()
        return str(path)

    async def stop(self) -> None:
        if self.proxy is not None:
            await self.proxy.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def floor_used(self, floor: sandbox.Floor) -> None:
        """A process starts in `floor`: its model hosts go through unasked."""
        if self.proxy is not None and floor.model_hosts:
            self.proxy.allow_model_hosts(_host_port(h) for h in floor.model_hosts)
        self._own_hosts.update(host.lower() for host in floor.own_hosts)

    async def decide(self, host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        """Whether `host:port` may be reached. Called first with no addresses, before the name
        is looked up (the proxy's `names_first`): an allowed name goes on to be resolved and
        decided again with its addresses (the floor of private addresses applies then); an
        asked one is asked by its name, so a refused name never reaches a DNS server."""
        request = {"tool": NETWORK_TOOL, "input": {"host": host, "port": port, "addresses": list(addresses)},
                   "cwd": str(self.ctx.workspace)}
        verdict = core.evaluate(self.policy, request)
        if verdict.decision == "allow":
            return True, verdict.reason
        network = self.policy.network or DEFAULT_NETWORK
        if not addresses and verdict.decision == "ask" and any(rule.address is not None for rule in network.allow):
            # an allow entry names an address: only the lookup can tell whether it is this name's
            return True, "decided once the name is looked up"
        key = (host, port)
        if verdict.decision in ("deny", "abort"):
            await self._tell_refused(key, verdict.reason)
            return False, verdict.reason
        if key in self._approved:
            return True, "approved earlier in this run"
        if host in self._own_hosts:
            reason = (f"{host} is called by the agent program on its own, never for the task: refused without "
                      "asking anyone (list the host in the policy's network allow to let it through)")
            await self._tell_refused(key, reason)
            return False, reason
        if not self.task_started:
            # nobody is asked about what the agent program fetches on its own before it has
            # asked for anything (Codex's github.com, an SDK's own API host): refused, told once
            reason = (f"{host}:{port} was asked for before the agent made any request, so it is the agent program's "
                      "own traffic, not the task's: refused without asking anyone (list the host in the policy's "
                      "network allow to let it through)")
            await self._tell_refused(key, reason)
            return False, reason
        refused = self._refused.get(key)
        if refused is not None and time.monotonic() - refused[0] < REFUSED_FOR_S:
            return False, refused[1]
        asking = self._asking.get(key)
        if asking is None:
            asking = asyncio.ensure_future(self._ask(key, addresses, verdict.reason))
            self._asking[key] = asking
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        return await asyncio.shield(asking)

    async def _ask(self, key: tuple[str, int], addresses: tuple[str, ...], why: str) -> tuple[bool, str]:
        host, port = key
        presentation: dict[str, Any] = {
            "title": f"Connect to {host}:{port}", "host": host, "port": port, "addresses": list(addresses)[:8],
            "why": why,
        }
        decision: GateAnswer = await self.ctx.gate(ToolRequest(
            NETWORK_TOOL, {"host": host, "port": port, "addresses": list(addresses)}, str(self.ctx.workspace),
            "permission", "network", presentation))
        if decision.allowed:
            self._approved.add(key)
            if decision.step_id is not None:
                await self.ctx.step_finished(decision.step_id, output=f"Connections to {host}:{port} allowed for this run.")
            return True, decision.reason or "approved"
        reason = decision.reason or f"a connection to {host}:{port} was refused"
        self._refused[key] = (time.monotonic(), reason)
        return False, reason

    def _later(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tell_refused(self, key: tuple[str, int], reason: str) -> None:
        if key in self._told:
            return
        self._told.add(key)
        with contextlib.suppress(Exception):  # the timeline line is a courtesy; the refusal stands
            await self.ctx.emit("notice", {"warning": "network_refused", "host": key[0], "port": key[1],
                                           "text": f"Gatehouse refused a connection to {key[0]}:{key[1]}: {reason}"})


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)
