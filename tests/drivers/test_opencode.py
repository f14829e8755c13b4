"""The OpenCode driver against the real `opencode serve` (1.18.33), offline: the fake
chat-completions server on 127.0.0.1, the gate faked by FakeRunContext's decider.
End-to-end runs through the API and the worker are in test_acp_e2e.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from drivers.base import Decision, ToolRequest
from drivers.opencode import DESCRIPTOR, OpenCodeDriver
from drivers.opencode import config as opencode_config
from tests.drivers.acp_agents import Agent, agent_under_test
from tests.drivers.fake_context import FakeRunContext
from tests.fakes import openai_chat_server as chat

RUN_TIMEOUT = 90


@pytest.fixture
def agent() -> Any:
    with agent_under_test("opencode", "") as found:
        yield found


def make_ctx(tmp_path: Path, agent: Agent, decide: Any, **kw: Any) -> FakeRunContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    return FakeRunContext(
        workspace=workspace, runtime_dir=runtime, decide=decide, prompt=kw.pop("prompt", "Do the task."),
        settings={**agent.settings(), **kw.pop("settings", {})}, **kw,
    )  # fmt: skip


async def run_driver(ctx: FakeRunContext, timeout: float = RUN_TIMEOUT) -> Any:
    return await asyncio.wait_for(OpenCodeDriver().run(ctx), timeout)


def allow(request: ToolRequest) -> Decision:
    return Decision(outcome="allow", decided_by="policy")


def test_descriptor_and_config() -> None:
    assert DESCRIPTOR.name == "opencode" and DESCRIPTOR.resumes_conversation
    content = opencode_config.config_content({"opencode_base_url": "http://127.0.0.1:9/v1", "opencode_model": "m"})
    assert content["permission"]["*"] == "ask"
    assert content["model"] == "gatehouse/m" and content["provider"]["gatehouse"]["options"]["apiKey"] == "{env:OPENAI_API_KEY}"
    env = opencode_config.environment({"env": {"GATEHOUSE_SECRET_KEY": "x", "OPENAI_API_KEY": "k"}}, Path("/tmp/gatehouse-test-oc-env"))
    assert env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1" and "GATEHOUSE_SECRET_KEY" not in env and env["OPENAI_API_KEY"] == "k"
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"])["permission"]["*"] == "ask"


@pytest.mark.agents
async def test_allowed_command_runs(tmp_path: Path, agent: Agent) -> None:
    agent.script(agent.command("echo oc-ok > out.txt && cat out.txt"), agent.say("All done."))
    ctx = make_ctx(tmp_path, agent, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert (ctx.workspace / "out.txt").read_text() == "oc-ok\n"
    bash = [r for r in ctx.requests if r.tool == "bash"]
    assert [r.input for r in bash] == [{"command": "echo oc-ok > out.txt && cat out.txt"}], ctx.requests
    step = ctx.finished[ctx.decisions[ctx.requests.index(bash[0])].step_id]
    assert "oc-ok" in step["output"] and step["exit_code"] == 0, step
    assert any("oc-ok" in text for text in agent.tool_results())
    assert any(p.get("text") == "All done." for k, p in ctx.activities if k == "message"), ctx.activities


QUESTION = {
    "questions": [
        {"question": "Which color should I use?", "header": "Color",
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}
    ]
}  # fmt: skip


@pytest.mark.agents
async def test_question_answered(tmp_path: Path, agent: Agent) -> None:
    agent.script([chat.tool_call("question", QUESTION)], agent.say("Blue it is."))
    ctx = make_ctx(tmp_path, agent, lambda r: Decision(outcome="answer", answers={"color": ["Blue"]}, decided_by="person"))
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    [request] = ctx.requests
    assert request.kind == "question" and [q["id"] for q in request.presentation["questions"]] == ["color"]
    assert any('"Which color should I use?"="Blue"' in text for text in agent.tool_results()), agent.tool_results()
