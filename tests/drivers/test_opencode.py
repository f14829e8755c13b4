"""The OpenCode driver against the real `opencode serve` (1.18.33), offline: the fake
chat-completions server on 127.0.0.1, the gate faked by FakeRunContext's decider.
End-to-end runs through the API and the worker are in test_acp_e2e.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from drivers.base import GateAnswer, ToolRequest
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


def allow(request: ToolRequest) -> GateAnswer:
    return GateAnswer(outcome="allow", decided_by="policy")


def test_descriptor_and_config() -> None:
    assert DESCRIPTOR.name == "opencode" and DESCRIPTOR.resumes
    content = opencode_config.config_content({"opencode_base_url": "http://127.0.0.1:9/v1", "opencode_model": "m"})
    assert content["permission"]["*"] == "ask"
    assert content["model"] == "gatehouse/m" and content["provider"]["gatehouse"]["options"]["apiKey"] == "{env:OPENAI_API_KEY}"
    env = opencode_config.environment({"env_values": {"GATEHOUSE_SECRET_KEY": "x", "OPENAI_API_KEY": "k"}}, Path("/tmp/gatehouse-test-oc-env"))
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
    ctx = make_ctx(tmp_path, agent, lambda r: GateAnswer(outcome="answer", answers={"color": ["Blue"]}, decided_by="person"))
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    [request] = ctx.requests
    assert request.kind == "question" and [q["id"] for q in request.presentation["questions"]] == ["color"]
    assert any('"Which color should I use?"="Blue"' in text for text in agent.tool_results()), agent.tool_results()


@pytest.mark.agents
async def test_resume_continues_the_runs_own_session(tmp_path: Path, agent: Agent) -> None:
    agent.script(agent.say("First turn done."))
    first = make_ctx(tmp_path, agent, allow)
    assert (await run_driver(first)).status == "completed"
    assert first.agent_state["session_id"].startswith("ses_")

    agent.script(agent.say("Continued."))
    second = make_ctx(tmp_path, agent, allow, resuming=True, agent_state=dict(first.agent_state))
    result = await run_driver(second)

    assert result.status == "completed", second.activities
    assert second.conversation_resumed and second.agent_state == first.agent_state
    last = agent.server.main_requests[-1]
    assert "First turn done." in json.dumps(last["messages"]), "the resumed session lost its history"
    assert "Gatehouse restarted while you were working" in json.dumps(last["messages"])


@pytest.mark.agents
async def test_already_done_step_is_not_run_again_and_the_agent_reads_why(tmp_path: Path, agent: Agent) -> None:
    agent.script(agent.command("echo again >> log.txt"), agent.say("Understood."))
    reason = "Already done before Gatehouse restarted: it printed 'again'. Do not run it again."
    ctx = make_ctx(tmp_path, agent, lambda r: GateAnswer(outcome="deny", reason=reason, already_done=True, decided_by="policy"))
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert not (ctx.workspace / "log.txt").exists()
    assert any(reason in text for text in agent.tool_results()), agent.tool_results()


FAKE_SERVE = r'''
import json, sys, socketserver, http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        if self.path.startswith("/event"):
            self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.send_header("Content-Length", "200"); self.end_headers()
            self.wfile.write(b'data: {"type": "server.connected", "properties": {}}\n\n'); self.wfile.flush()
            import time; time.sleep(1)
            self.wfile.write(b"data: this is not json\n\n"); self.wfile.flush(); time.sleep(30)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"id": "ses_fake"}).encode() if self.path == "/session" else b""
        self.send_response(200 if body else 204); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
port = int(sys.argv[sys.argv.index("--port") + 1])
server = socketserver.ThreadingTCPServer(("127.0.0.1", port), H)
print(f"opencode server listening on http://127.0.0.1:{port}", flush=True)
server.serve_forever()
'''


async def test_malformed_event_fails_the_run_with_a_reason(tmp_path: Path) -> None:
    """A stand-in `opencode serve` whose event stream carries a line that is not JSON."""
    import sys

    script = tmp_path / "fake-opencode"
    script.write_text(f"#!{sys.executable}\n{FAKE_SERVE}")
    script.chmod(0o755)
    workspace, runtime = tmp_path / "ws", tmp_path / "runtime"
    workspace.mkdir()
    runtime.mkdir()
    ctx = FakeRunContext(workspace=workspace, runtime_dir=runtime, decide=allow, prompt="hi", settings={"opencode_bin": str(script)})
    result = await run_driver(ctx, timeout=30)

    assert (result.status, result.failure_reason) == ("failed", "agent_protocol_error")
    [notice] = [p for k, p in ctx.activities if k == "notice" and p.get("reason") == "agent_protocol_error"]
    assert "this is not json" in notice["text"]


@pytest.mark.agents
async def test_a_new_run_of_the_session_continues_the_conversation(tmp_path: Path, agent: Agent) -> None:
    agent.script(agent.say("First turn done."))
    first = make_ctx(tmp_path, agent, allow, prompt="Remember the word heron.")
    assert (await run_driver(first)).status == "completed"

    agent.script(agent.say("The word was heron."))
    follow_up = make_ctx(tmp_path, agent, allow, prompt="Which word?", conversation=dict(first.agent_state))
    result = await run_driver(follow_up)

    assert result.status == "completed", follow_up.activities
    assert follow_up.agent_state == first.agent_state and not follow_up.conversation_resumed
    last = json.dumps(agent.server.main_requests[-1]["messages"])
    assert "Remember the word heron." in last and "Which word?" in last


@pytest.mark.agents
async def test_a_command_is_judged_in_the_directory_it_runs_in(tmp_path: Path, agent: Agent) -> None:
    # OpenCode's bash runs in its `workdir`; judged from the workspace, `workdir: .git` with
    # `echo x > hooks/pre-commit` would have been a write of `hooks/pre-commit`.
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    agent.script([chat.tool_call("bash", {"command": "pwd > where.txt", "description": "where", "workdir": "sub"})],
                 agent.say("done"))
    ctx = make_ctx(tmp_path, agent, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    [request] = [r for r in ctx.requests if r.tool == "bash"]
    assert request.cwd == str(ctx.workspace / "sub")
    assert (ctx.workspace / "sub" / "where.txt").read_text().strip() == str(ctx.workspace / "sub")
