"""A run's egress before and after the agent's first tool request (drivers/runegress.py):
before it, what the policy would ask about is the agent program's own traffic (Codex's
github.com at start, an SDK's vendor API beside the configured endpoint) and is refused
without asking anyone; after it, the same host is asked about like any request.

The run context here is a small stand-in that records what the egress asks of it (its
`gate` and `emit`); the worker's real one is exercised end to end by the real CLIs' tests
(tests/drivers/test_agents_e2e.py, test_acp_e2e.py) and tests/sandbox/test_run_egress.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from approvals.policy import compile_policy
from drivers.base import GateAnswer, ToolRequest
from drivers.runegress import RunEgress


class Context:
    def __init__(self, workspace: Path) -> None:
        self.run_id = 1
        self.workspace = workspace
        self.settings: dict[str, Any] = {}
        self.asked: list[ToolRequest] = []
        self.notices: list[dict[str, Any]] = []

    async def gate(self, request: ToolRequest) -> GateAnswer:
        self.asked.append(request)
        return GateAnswer(outcome="deny", reason="not today")

    async def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.notices.append(payload)

    async def step_finished(self, step_id: int, output: str = "") -> None:  # pragma: no cover - not reached
        pass


POLICY = compile_policy({"network": {"allow": ["pypi.org:443"], "default": "ask"}})


async def test_before_the_first_request_an_unlisted_host_is_refused_without_asking(tmp_path: Path) -> None:
    ctx = Context(tmp_path)
    egress = RunEgress(ctx, POLICY)
    allowed, reason = await egress.decide("github.com", 443, ())
    assert not allowed and "before the agent made any request" in reason
    assert ctx.asked == []
    assert [n["host"] for n in ctx.notices if n.get("warning") == "network_refused"] == ["github.com"]
    # a listed host goes through all the same
    assert (await egress.decide("pypi.org", 443, ()))[0] is True


async def test_after_the_first_request_the_same_host_is_asked_about(tmp_path: Path) -> None:
    ctx = Context(tmp_path)
    egress = RunEgress(ctx, POLICY)
    await egress.decide("github.com", 443, ())
    egress.task_started = True  # what the run context sets at the agent's first tool request
    allowed, reason = await egress.decide("github.com", 443, ())
    assert not allowed and reason == "not today"
    assert [(r.tool, r.subtype, r.input["host"]) for r in ctx.asked] == [("network", "network", "github.com")]


async def test_a_host_the_driver_names_as_its_agents_own_is_refused_without_asking_at_any_time(tmp_path: Path) -> None:
    from drivers.sandbox import Floor

    ctx = Context(tmp_path)
    egress = RunEgress(ctx, POLICY)
    egress.floor_used(Floor(mode="workspace-write", workspace=str(tmp_path), own_hosts=("chatgpt.com",)))
    egress.task_started = True
    allowed, reason = await egress.decide("chatgpt.com", 443, ())
    assert not allowed and "on its own" in reason and ctx.asked == []
    # a rule that allows it still does
    listed = RunEgress(ctx, compile_policy({"network": {"allow": ["chatgpt.com"], "default": "ask"}}))
    listed.floor_used(Floor(mode="workspace-write", workspace=str(tmp_path), own_hosts=("chatgpt.com",)))
    assert (await listed.decide("chatgpt.com", 443, ()))[0] is True
