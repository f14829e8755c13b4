"""The ACP driver against the real agents (claude-code-acp 0.16.2, opencode acp 1.18.33),
offline: fake model servers on 127.0.0.1, the gate faked by FakeRunContext's decider.
End-to-end runs through the API and the worker are in test_acp_e2e.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from drivers.acp import DESCRIPTOR, AcpDriver
from drivers.base import Decision, ToolRequest
from tests.drivers.acp_agents import Agent, agent_under_test
from tests.drivers.fake_context import FakeRunContext

RUN_TIMEOUT = 90
ACP_AGENTS = ["claude-code-acp", "opencode"]


@pytest.fixture(params=ACP_AGENTS)
def agent(request: Any) -> Any:
    with agent_under_test("acp", request.param) as found:
        yield found


def make_ctx(tmp_path: Path, agent: Agent, decide: Any, **kw: Any) -> FakeRunContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    return FakeRunContext(
        workspace=workspace, runtime_dir=runtime, decide=decide, prompt=kw.pop("prompt", "Do the task."),
        settings={**agent.settings(), **kw.pop("settings", {})}, options=agent.options, **kw,
    )  # fmt: skip


async def run_driver(ctx: FakeRunContext, timeout: float = RUN_TIMEOUT) -> Any:
    return await asyncio.wait_for(AcpDriver().run(ctx), timeout)


def allow(request: ToolRequest) -> Decision:
    return Decision(outcome="allow", decided_by="policy")


def kinds(ctx: FakeRunContext, kind: str) -> list[dict[str, Any]]:
    return [payload for k, payload in ctx.activities if k == kind]


def test_descriptor() -> None:
    assert DESCRIPTOR.name == "acp" and DESCRIPTOR.resumes_conversation
    assert DESCRIPTOR.approval_modes["question"] == frozenset()


@pytest.mark.agents
async def test_allowed_command_runs(tmp_path: Path, agent: Agent) -> None:
    agent.script(agent.command("echo acp-ok > out.txt && cat out.txt"), agent.say("All done."))
    ctx = make_ctx(tmp_path, agent, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert (ctx.workspace / "out.txt").read_text() == "acp-ok\n"
    bash = [r for r in ctx.requests if r.tool == "bash"]
    assert [r.input for r in bash] == [{"command": "echo acp-ok > out.txt && cat out.txt"}], ctx.requests
    assert any("acp-ok" in text for text in agent.tool_results())
    step = ctx.finished[ctx.decisions[ctx.requests.index(bash[0])].step_id]
    assert "acp-ok" in step["output"], step
    assert any(p.get("text") == "All done." for p in kinds(ctx, "message")), ctx.activities
