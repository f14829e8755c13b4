"""The Claude Code driver against the real CLI (2.1.197, installed by `make agents`), offline.

The model is `tests/fakes/anthropic_server.py` on 127.0.0.1; the gate is FakeRunContext's
scripted decider. End-to-end tests through the worker and the API live elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from drivers.base import GateAnswer, ToolRequest
from drivers.claude_code import DESCRIPTOR, ClaudeCodeDriver
from tests.drivers.fake_context import FakeRunContext
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_BIN = ROOT / ".agents" / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
RUN_TIMEOUT = 60


def require_cli() -> None:
    if CLAUDE_BIN.is_file():
        return
    message = f"Claude Code CLI not installed at {CLAUDE_BIN} (run `make agents`)"
    if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
        pytest.fail(message + "; GATEHOUSE_REQUIRE_AGENTS=1 requires it")
    pytest.skip(message)


@pytest.fixture
def model():
    with FakeAnthropicServer() as server:
        yield server


def make_ctx(tmp_path: Path, server: FakeAnthropicServer | None, decide, **kw: Any) -> FakeRunContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    settings: dict[str, Any] = {"claude_bin": str(CLAUDE_BIN), "idle_timeout_s": 45}
    if server is not None:
        settings["env_values"] = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "dummy"}
    settings.update(kw.pop("settings", {}))
    return FakeRunContext(
        workspace=workspace, runtime_dir=runtime, decide=decide, prompt=kw.pop("prompt", "Do the task."), settings=settings, **kw
    )


async def run_driver(ctx: FakeRunContext, timeout: float = RUN_TIMEOUT):
    return await asyncio.wait_for(ClaudeCodeDriver().run(ctx), timeout)


def processes_in(directory: Path) -> list[int]:
    """Pids of live processes whose working directory is `directory` (the CLI, its shells)."""
    found = []
    target = str(directory.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == target:
                status = (entry / "status").read_text()
                if "\nState:\tZ" not in status:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def allow(request: ToolRequest) -> GateAnswer:
    return GateAnswer(outcome="allow", decided_by="policy")


def kinds(ctx: FakeRunContext, kind: str) -> list[dict[str, Any]]:
    return [payload for k, payload in ctx.activities if k == kind]


def assert_no_agent_settings(workspace: Path) -> None:
    assert not list(workspace.glob(".claude/settings*.json")), "the driver must never write agent settings into the workspace"


def test_descriptor() -> None:
    assert DESCRIPTOR.name == "claude-code"
    assert "auto-approve" not in DESCRIPTOR.approval_modes["question"]
    assert DESCRIPTOR.sees and DESCRIPTOR.cannot_see


# -- real CLI ----------------------------------------------------------------------------------


@pytest.mark.agents
async def test_allowed_command_runs_and_output_reaches_step(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns(
        [text("Running it."), tool_use("Bash", {"command": "echo gatehouse-ok > out.txt && cat out.txt", "description": "Write and show"})],
        [text("All done.")],
    )
    ctx = make_ctx(tmp_path, model, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert result.text == "All done."
    # One tool call, one gate call (the hook answers "ask"; can_use_tool asks the gate).
    assert len(ctx.requests) == 1
    request = ctx.requests[0]
    assert (request.tool, request.kind, request.subtype) == ("bash", "permission", "command")
    assert request.input == {"command": "echo gatehouse-ok > out.txt && cat out.txt"}
    assert request.presentation["title"] == "Write and show"
    assert request.cwd == str(ctx.workspace)
    assert (ctx.workspace / "out.txt").read_text() == "gatehouse-ok\n"
    step = ctx.finished[ctx.decisions[0].step_id]
    assert "gatehouse-ok" in step["output"] and step["exit_code"] == 0 and step["error"] == ""
    assert any(p["text"] == "Running it." for p in kinds(ctx, "message"))
    assert any(p["phase"] == "result" and "gatehouse-ok" in p["output"] for p in kinds(ctx, "tool"))
    assert [p["phase"] for p in kinds(ctx, "turn")] == ["start", "end"]
    assert kinds(ctx, "usage") and kinds(ctx, "usage")[0]["output_tokens"] > 0
    assert "gatehouse-ok" in model.tool_results()[0]["text"]
    assert processes_in(ctx.workspace) == []
    assert_no_agent_settings(ctx.workspace)


@pytest.mark.agents
async def test_denied_command_does_not_run_and_model_gets_reason(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("Bash", {"command": "touch should-not-exist", "description": "touch"})], [text("Understood.")])
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="deny", reason="no touching on Fridays", decided_by="person"))
    result = await run_driver(ctx)

    assert result.status == "completed"
    assert not (ctx.workspace / "should-not-exist").exists()
    [tool_result] = model.tool_results()
    assert tool_result["is_error"] and "no touching on Fridays" in tool_result["text"]
    assert ctx.finished == {}


@pytest.mark.agents
async def test_an_edited_command_reaches_the_cli_as_updated_input_and_runs_instead(
    tmp_path: Path, model: FakeAnthropicServer
) -> None:
    """Edit before approve (issue 32.3): the allow's `updatedInput` carries the reviewer's
    command, which is what the real CLI runs; the agent's own never runs."""
    require_cli()
    model.add_turns(
        [tool_use("Bash", {"command": "echo agent > agent.txt", "description": "Write a file"})],
        [text("Done.")],
    )
    edited = {"command": "echo reviewer > reviewer.txt && cat reviewer.txt"}
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="allow", decided_by="person", updated_input=edited))
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert (ctx.workspace / "reviewer.txt").read_text() == "reviewer\n"
    assert not (ctx.workspace / "agent.txt").exists()
    assert ctx.requests[0].input == {"command": "echo agent > agent.txt"}  # what the agent asked, as gated
    assert "reviewer" in model.tool_results()[0]["text"]  # the model reads the edited command's output
    assert any("edited" in p.get("text", "") for p in kinds(ctx, "notice"))


@pytest.mark.agents
async def test_an_edited_file_write_writes_the_reviewers_content(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("Write", {"file_path": "notes.txt", "content": "from the agent"})], [text("Done.")])
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="allow", decided_by="person",
                                                       updated_input={"content": "from the reviewer"}))
    result = await run_driver(ctx)
    assert result.status == "completed", ctx.activities
    assert (ctx.workspace / "notes.txt").read_text() == "from the reviewer"


@pytest.mark.agents
async def test_reads_go_through_the_gate(tmp_path: Path, model: FakeAnthropicServer) -> None:
    """A rule on Read(.env) holds: reads are not auto-allowed by the CLI behind our back."""
    require_cli()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("SECRET=hunter2\n")
    (ws / "README.md").write_text("hello readme\n")
    model.add_turns(
        [tool_use("Read", {"file_path": str(ws / ".env")})],
        [tool_use("Read", {"file_path": str(ws / "README.md")})],
        [tool_use("Bash", {"command": "ls -la", "description": "List"})],
        [text("Read what I could.")],
    )

    def policy(request: ToolRequest) -> GateAnswer:
        if request.tool == "read" and request.input["file_path"].endswith("/.env"):
            return GateAnswer(outcome="deny", reason="rule Read(.env): secrets stay private")
        return GateAnswer(outcome="allow")

    ctx = make_ctx(tmp_path, model, policy)
    result = await run_driver(ctx)

    assert result.status == "completed"
    assert [(r.tool, r.subtype) for r in ctx.requests] == [("read", "file-read"), ("read", "file-read"), ("bash", "command")]
    env_result, readme_result, ls_result = model.tool_results()
    assert env_result["is_error"] and "secrets stay private" in env_result["text"]
    assert "hunter2" not in str(model.message_requests)
    assert "hello readme" in readme_result["text"]
    assert ".env" in ls_result["text"]
    assert "hello readme" in ctx.finished[ctx.decisions[1].step_id]["output"]


QUESTIONS = {
    "questions": [
        {
            "question": "Which database should we use?",
            "header": "Database",
            "options": [{"label": "Postgres", "description": "Relational"}, {"label": "SQLite", "description": "File based"}],
            "multiSelect": False,
        },
        {
            "question": "Which features do you want?",
            "header": "Features",
            "options": [{"label": "Auth", "description": "Login"}, {"label": "Search", "description": "Full text"}, {"label": "Export", "description": "CSV"}],
            "multiSelect": True,
        },
    ]
}


@pytest.mark.agents
async def test_question_answered(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("AskUserQuestion", QUESTIONS)], [text("Thanks.")])

    def person(request: ToolRequest) -> GateAnswer:
        assert request.kind == "question"
        ids = [q["id"] for q in request.presentation["questions"]]
        return GateAnswer(outcome="answer", decided_by="person", answers={ids[0]: ["SQLite"], ids[1]: ["Auth", "Export"]})

    ctx = make_ctx(tmp_path, model, person)
    result = await run_driver(ctx)

    assert result.status == "completed"
    [request] = ctx.requests
    assert request.presentation["questions"] == [
        {
            "id": "database",
            "header": "Database",
            "question": "Which database should we use?",
            "options": [{"label": "Postgres", "description": "Relational"}, {"label": "SQLite", "description": "File based"}],
            "multi_select": False,
            "allow_other": True,
        },
        {
            "id": "features",
            "header": "Features",
            "question": "Which features do you want?",
            "options": [
                {"label": "Auth", "description": "Login"},
                {"label": "Search", "description": "Full text"},
                {"label": "Export", "description": "CSV"},
            ],
            "multi_select": True,
            "allow_other": True,
        },
    ]
    [answer] = model.tool_results()
    assert not answer["is_error"]
    assert '"Which database should we use?"="SQLite"' in answer["text"]
    assert '"Which features do you want?"="Auth, Export"' in answer["text"]


@pytest.mark.agents
async def test_question_declined_says_there_is_no_human_answer(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("AskUserQuestion", QUESTIONS)], [text("I will choose myself.")])
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="deny", reason="questions are auto-denied", decided_by="policy"))
    result = await run_driver(ctx)

    assert result.status == "completed"
    [answer] = model.tool_results()
    assert answer["is_error"]
    assert "no human answer" in answer["text"] and "questions are auto-denied" in answer["text"]


@pytest.mark.agents
async def test_plan_approved_then_edits_are_asked(tmp_path: Path, model: FakeAnthropicServer) -> None:
    """Plan mode: a write before approval is refused by the driver; the plan is reviewed;
    after approval (to acceptEdits) the write goes to the gate and runs."""
    require_cli()
    out = tmp_path / "ws" / "out.txt"
    model.add_turns(
        [tool_use("Write", {"file_path": str(out), "content": "too early\n"})],
        [text("Here is my plan."), tool_use("ExitPlanMode", {"plan": "## Plan\n1. Write out.txt\n2. Done"})],
        [tool_use("Write", {"file_path": str(out), "content": "planned\n"})],
        [text("Implemented.")],
    )

    def decide(request: ToolRequest) -> GateAnswer:
        if request.kind == "plan_review":
            return GateAnswer(outcome="allow", decided_by="person", plan_mode="accept-edits")
        return GateAnswer(outcome="allow")

    ctx = make_ctx(tmp_path, model, decide, interaction_mode="plan")
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert [(r.tool, r.kind) for r in ctx.requests] == [("ExitPlanMode", "plan_review"), ("write", "permission")]
    assert ctx.requests[0].presentation["plan"] == "## Plan\n1. Write out.txt\n2. Done"
    assert ctx.requests[1].presentation["path"] == str(out)
    assert "+planned" in ctx.requests[1].presentation["diff"]
    refused, approved, written = model.tool_results()
    assert refused["is_error"] and "plan mode" in refused["text"]
    assert any(p["level"] == "warning" and "plan mode" in p["text"] for p in kinds(ctx, "notice"))
    assert "approved your plan" in approved["text"]
    assert out.read_text() == "planned\n"
    assert any("acceptEdits" in p["text"] for p in kinds(ctx, "notice"))
    assert_no_agent_settings(ctx.workspace)


@pytest.mark.agents
async def test_plan_file_is_bookkeeping_and_review_shows_its_contents(tmp_path: Path, model: FakeAnthropicServer) -> None:
    """The model writes its plan to the CLI's plan file (under the run's runtime dir): no
    step for that; ExitPlanMode sent with `{}` is reviewed with the file's contents."""
    require_cli()
    import json
    import re

    def write_plan_file(body: dict[str, Any]) -> list[dict[str, Any]]:
        [path] = set(re.findall(r"[^\s\"'`]*/plans/[\w.-]+\.md", json.dumps(body)))
        return [tool_use("Write", {"file_path": path, "content": "# The plan\n1. Do it well\n"})]

    model.add_turns(write_plan_file, [tool_use("ExitPlanMode", {})], [text("ok")])
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="allow", decided_by="person"), interaction_mode="plan")
    result = await run_driver(ctx)

    assert result.status == "completed"
    [review] = ctx.requests
    assert review.kind == "plan_review" and review.presentation["plan"] == "# The plan\n1. Do it well\n"
    assert str(ctx.runtime_dir) in review.input["planFilePath"]
    assert not list(ctx.workspace.iterdir())


@pytest.mark.agents
async def test_plan_rejected_with_feedback(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("ExitPlanMode", {"plan": "## Plan\n1. Ship it"})], [text("I will revise the plan.")])
    ctx = make_ctx(
        tmp_path, model, lambda r: GateAnswer(outcome="deny", reason="please add tests first", decided_by="person"), interaction_mode="plan"
    )
    result = await run_driver(ctx)

    assert result.status == "completed"
    [rejected] = model.tool_results()
    assert rejected["is_error"] and "please add tests first" in rejected["text"]


@pytest.mark.agents
async def test_always_allow_is_not_written_into_agent_settings(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns(
        [tool_use("Bash", {"command": "echo one > one.txt", "description": "one"})],
        [tool_use("Bash", {"command": "echo one > one.txt", "description": "again"})],
        [text("ok")],
    )
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="allow", decided_by="person", scope="session"))
    result = await run_driver(ctx)

    assert result.status == "completed"
    # Both calls reach Gatehouse (where a grant would answer the second one).
    assert len(ctx.requests) == 2
    assert_no_agent_settings(ctx.workspace)
    assert not (ctx.workspace / ".claude").exists()


@pytest.mark.agents
async def test_cancel_while_decision_pending(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("Bash", {"command": "touch never.txt", "description": "touch"})], [text("unreachable")])
    asked = asyncio.Event()

    async def person_never_answers(request: ToolRequest) -> GateAnswer:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    ctx = make_ctx(tmp_path, model, person_never_answers)
    task = asyncio.create_task(run_driver(ctx))
    await asyncio.wait_for(asked.wait(), 30)
    assert processes_in(ctx.workspace), "the CLI should be running while the decision is pending"
    ctx.cancel()
    result = await asyncio.wait_for(task, 30)

    assert result.status == "cancelled"
    assert not (ctx.workspace / "never.txt").exists()
    assert processes_in(ctx.workspace) == []


@pytest.mark.agents
async def test_abort_decision_fails_the_run(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("Bash", {"command": "touch aborted.txt", "description": "touch"})], [text("unreachable")])
    ctx = make_ctx(tmp_path, model, lambda r: GateAnswer(outcome="abort", reason="policy_abort", decided_by="policy"))
    result = await run_driver(ctx)

    assert result.status == "failed" and result.failure_reason == "policy_abort"
    assert not (ctx.workspace / "aborted.txt").exists()
    assert any(p.get("reason") == "policy_abort" for p in kinds(ctx, "notice"))
    assert processes_in(ctx.workspace) == []


@pytest.mark.agents
async def test_cli_killed_mid_run_fails_without_hanging(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("Bash", {"command": "touch x.txt", "description": "touch"})], [text("unreachable")])
    holder: dict[str, FakeRunContext] = {}

    async def kill_cli_then_wait(request: ToolRequest) -> GateAnswer:
        for pid in processes_in(holder["ctx"].workspace):
            # (killing the sandbox's first process ends the rest: a later pid may be gone)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    ctx = make_ctx(tmp_path, model, kill_cli_then_wait)
    holder["ctx"] = ctx
    result = await run_driver(ctx, timeout=30)

    assert result.status == "failed" and result.failure_reason == "agent_exited"
    assert any(p.get("reason") == "agent_exited" for p in kinds(ctx, "notice"))
    assert processes_in(ctx.workspace) == []


# -- stand-in CLIs (no real CLI needed) ----------------------------------------------------------


def fake_cli(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake_claude.py"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


async def test_malformed_line_is_a_protocol_error(tmp_path: Path) -> None:
    binary = fake_cli(
        tmp_path,
        """
        import sys
        sys.stdin.readline()
        print("this is not json", flush=True)
        sys.stdin.read()
        """,
    )
    ctx = make_ctx(tmp_path, None, allow, settings={"claude_bin": binary})
    result = await run_driver(ctx, timeout=20)
    assert result.status == "failed" and result.failure_reason == "agent_protocol_error"
    [notice] = [p for p in kinds(ctx, "notice") if p.get("reason") == "agent_protocol_error"]
    assert "this is not json" in notice["text"]
    assert processes_in(ctx.workspace) == []


async def test_cli_that_exits_early_fails_with_stderr(tmp_path: Path) -> None:
    binary = fake_cli(
        tmp_path,
        """
        import sys
        sys.stderr.write("boom: no credentials\\n")
        sys.exit(3)
        """,
    )
    ctx = make_ctx(tmp_path, None, allow, settings={"claude_bin": binary})
    result = await run_driver(ctx, timeout=20)
    assert result.status == "failed" and result.failure_reason == "agent_exited"
    [notice] = [p for p in kinds(ctx, "notice") if p.get("reason") == "agent_exited"]
    assert "code 3" in notice["text"] and "boom: no credentials" in notice["text"]


async def test_silent_cli_times_out_and_is_reaped(tmp_path: Path) -> None:
    binary = fake_cli(
        tmp_path,
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(600)
        """,
    )
    ctx = make_ctx(tmp_path, None, allow, settings={"claude_bin": binary, "idle_timeout_s": 1})
    result = await run_driver(ctx, timeout=30)
    assert result.status == "failed" and result.failure_reason == "agent_timeout"
    assert processes_in(ctx.workspace) == []


async def test_idle_timeout_does_not_count_while_the_gate_waits(tmp_path: Path) -> None:
    """A person deciding for longer than idle_timeout_s is not the agent hanging."""
    binary = fake_cli(
        tmp_path,
        """
        import json, sys
        def send(obj): print(json.dumps(obj), flush=True)
        init = json.loads(sys.stdin.readline())
        send({"type": "control_response", "response": {"subtype": "success", "request_id": init["request_id"], "response": {}}})
        sys.stdin.readline()  # the prompt
        send({"type": "system", "subtype": "init", "permissionMode": "default", "session_id": "s"})
        send({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "echo hi"}}]}})
        send({"type": "control_request", "request_id": "h1", "request": {"subtype": "hook_callback", "callback_id": "gatehouse_pre_tool_use",
              "input": {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "echo hi"}, "tool_use_id": "t1"}, "tool_use_id": "t1"}})
        hook = json.loads(sys.stdin.readline())
        assert hook["response"]["response"]["hookSpecificOutput"]["permissionDecision"] == "ask", hook
        send({"type": "control_request", "request_id": "c1", "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "echo hi"}, "tool_use_id": "t1"}})
        reply = json.loads(sys.stdin.readline())
        assert reply["response"]["response"] == {"behavior": "allow", "updatedInput": {"command": "echo hi"}}, reply
        send({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hi", "is_error": False}]}})
        send({"type": "result", "subtype": "success", "is_error": False, "result": "ok", "usage": {"input_tokens": 1, "output_tokens": 2}})
        sys.stdin.read()
        """,
    )

    async def slow_person(request: ToolRequest) -> GateAnswer:
        await asyncio.sleep(2.5)
        return GateAnswer(outcome="allow", decided_by="person")

    ctx = make_ctx(tmp_path, None, slow_person, settings={"claude_bin": binary, "idle_timeout_s": 1})
    result = await run_driver(ctx, timeout=30)
    assert result.status == "completed", ctx.activities
    assert ctx.finished[ctx.decisions[0].step_id] == {"output": "hi", "exit_code": 0, "error": ""}


async def test_missing_binary_fails_clearly(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, None, allow, settings={"claude_bin": str(tmp_path / "nope" / "claude")})
    result = await run_driver(ctx, timeout=10)
    assert result.status == "failed" and result.failure_reason == "agent_not_found"


async def test_fake_model_server_streams_and_records(model: FakeAnthropicServer) -> None:
    """The fake speaks SSE the way the Messages API does, and records what it received."""
    import json
    import urllib.request

    model.add_turns([text("hi"), tool_use("Bash", {"command": "ls"}, id="toolu_1")])
    body = json.dumps({"model": "m", "stream": True, "tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": "x"}]}).encode()
    request = urllib.request.Request(model.url + "/v1/messages?beta=true", data=body, headers={"Content-Type": "application/json"})
    raw = await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=10).read().decode())
    events = [line.split(": ", 1)[1] for line in raw.splitlines() if line.startswith("event: ")]
    assert events == [
        "message_start",
        "content_block_start", "content_block_delta", "content_block_stop",
        "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    assert '"stop_reason": "tool_use"' in raw and '"partial_json": "{\\"command\\": \\"ls\\"}"' in raw
    assert model.message_requests[0]["messages"] == [{"role": "user", "content": "x"}]


async def test_unknown_control_request_is_refused_and_a_repeated_permission_is_not_asked_twice(tmp_path: Path) -> None:
    binary = fake_cli(
        tmp_path,
        """
        import json, sys
        def send(obj): print(json.dumps(obj), flush=True)
        def read(): return json.loads(sys.stdin.readline())
        init = read()
        assert init["request"]["hooks"] == {"PreToolUse": [{"matcher": None, "hookCallbackIds": ["gatehouse_pre_tool_use"]}]}, init
        send({"type": "control_response", "response": {"subtype": "success", "request_id": init["request_id"], "response": {}}})
        read()  # the prompt
        send({"type": "control_request", "request_id": "m1", "request": {"subtype": "mcp_message", "server_name": "x", "message": {}}})
        refused = read()
        assert refused["response"]["subtype"] == "error" and refused["response"]["request_id"] == "m1", refused
        send({"type": "brand_new_message_kind", "data": 1})
        cut = {"subtype": "can_use_tool", "tool_name": "Write", "input": {"file_path": "x.txt", "content": "x"}, "tool_use_id": "t1"}
        send({"type": "control_request", "request_id": "c1", "request": cut})
        first = read()
        send({"type": "control_request", "request_id": "c2", "request": cut})
        second = read()
        assert first["response"]["response"] == second["response"]["response"], (first, second)
        assert second["response"]["request_id"] == "c2"
        send({"type": "result", "subtype": "success", "is_error": False, "result": "ok"})
        sys.stdin.read()
        """,
    )
    ctx = make_ctx(tmp_path, None, lambda r: GateAnswer(outcome="deny", reason="no"), settings={"claude_bin": binary, "idle_timeout_s": 10})
    result = await run_driver(ctx, timeout=20)
    assert result.status == "completed", ctx.activities
    assert len(ctx.requests) == 1 and ctx.requests[0].tool == "write"
    assert any("mcp_message" in p["text"] for p in kinds(ctx, "notice"))


async def test_json_lines_process_bounds_lines_and_stderr(tmp_path: Path) -> None:
    from drivers.subprocess_io import JsonLinesProcess, ProtocolError

    script = fake_cli(
        tmp_path,
        """
        import sys
        sys.stderr.write("x" * 5000 + "TAIL")
        sys.stderr.flush()
        print('{"ok": 1}', flush=True)
        print("[1, 2]", flush=True)
        print('{"big": "' + "y" * 4096 + '"}', flush=True)
        """,
    )
    proc = JsonLinesProcess(max_line_bytes=1024, stderr_tail_bytes=100)
    await proc.start([script], cwd=tmp_path, env=None)
    try:
        assert await proc.read() == {"ok": 1}
        with pytest.raises(ProtocolError, match="not an object"):
            await proc.read()
        with pytest.raises(ProtocolError, match="longer than 1024"):
            await proc.read()
    finally:
        code = await proc.close(timeout=5)
    assert code == 0
    assert proc.stderr_tail.endswith("TAIL") and len(proc.stderr_tail) <= 100


@pytest.mark.parametrize(
    ("runtime_mode", "interaction_mode", "allow_bypass", "expected"),
    [
        ("approval-required", "default", False, "default"),
        ("auto-accept-edits", "default", False, "acceptEdits"),
        ("full-access", "default", True, "bypassPermissions"),
        ("full-access", "default", False, "default"),
        ("auto", "default", False, "default"),
        ("full-access", "plan", True, "plan"),
    ],
)
def test_runtime_modes_map_to_permission_modes(tmp_path: Path, runtime_mode, interaction_mode, allow_bypass, expected) -> None:
    from drivers.claude_code.driver import _ClaudeRun

    ctx = make_ctx(
        tmp_path,
        None,
        allow,
        runtime_mode=runtime_mode,
        interaction_mode=interaction_mode,
        settings={"allow_bypass_permissions": allow_bypass, "env_values": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "IS_SANDBOX": "1"}},
    )
    run = _ClaudeRun(ctx)
    mode = run._permission_mode()
    assert mode == expected
    env = run._environment(mode)
    assert env["HOME"] == str(ctx.runtime_dir / "home") and env["CLAUDE_CONFIG_DIR"] == str(ctx.runtime_dir / "home" / ".claude")
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env.get("IS_SANDBOX") == ("1" if expected == "bypassPermissions" else None)


@pytest.mark.agents
async def test_full_access_still_goes_through_the_gate(tmp_path: Path, model: FakeAnthropicServer) -> None:
    require_cli()
    model.add_turns([tool_use("Bash", {"command": "touch denied.txt", "description": "touch"})], [text("ok")])
    ctx = make_ctx(
        tmp_path,
        model,
        lambda r: GateAnswer(outcome="deny", reason="policy says no"),
        runtime_mode="full-access",
        settings={"allow_bypass_permissions": True},
    )
    result = await run_driver(ctx)
    assert result.status == "completed", ctx.activities
    assert [p["permission_mode"] for p in kinds(ctx, "turn") if p["phase"] == "start"] == ["bypassPermissions"]
    assert len(ctx.requests) == 1 and not (ctx.workspace / "denied.txt").exists()


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("ls -la", True),
        ("git status && git diff", True),
        ("cat README.md | grep -n Gatehouse", True),
        ("echo hi > out.txt", False),  # writes a file
        ("ls; touch x", False),  # one command changes the workspace
        ("ls $(rm -rf /)", False),  # the substitution is a command of its own
        ("python3 -c 'print(1)'", False),  # unknown: not known to be read-only
        ("$CMD", False),  # computed name
        ("ls 'unterminated", False),  # does not parse
    ],
)
def test_plan_mode_lets_through_only_what_the_policy_core_reads_as_read_only(command: str, read_only: bool) -> None:
    from drivers.claude_code.mapping import is_read_only_shell

    assert is_read_only_shell(command) is read_only


@pytest.mark.agents
async def test_each_command_starts_in_the_workspace_where_the_gate_judged_it(tmp_path: Path, model: FakeAnthropicServer) -> None:
    # The CLI keeps a `cd` for its next Bash call unless told not to: `cd .git`, then
    # `echo x > hooks/pre-commit`, was judged as a write of `hooks/pre-commit` (observed).
    require_cli()
    model.add_turns([tool_use("Bash", {"command": "mkdir -p sub && cd sub", "description": "go"})],
                    [tool_use("Bash", {"command": "pwd > where.txt", "description": "where"})], [text("done")])
    ctx = make_ctx(tmp_path, model, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert [r.cwd for r in ctx.requests] == [str(ctx.workspace)] * 2
    assert (ctx.workspace / "where.txt").read_text().strip() == str(ctx.workspace)
    assert not (ctx.workspace / "sub" / "where.txt").exists()


# -- web search denied: what reaches Claude Code -------------------------------------------------

ECHO_ARGV = """
import json, os, sys
def send(obj): print(json.dumps(obj), flush=True)
init = json.loads(sys.stdin.readline())
send({"type": "control_response", "response": {"subtype": "success", "request_id": init["request_id"], "response": {}}})
sys.stdin.readline()  # the prompt
settings = open(os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "settings.json")).read()
send({"type": "result", "subtype": "success", "is_error": False, "result": json.dumps({"argv": sys.argv[1:], "settings": settings})})
sys.stdin.read()
"""


@pytest.mark.parametrize(("web_search", "disallowed"), [("deny", True), ("allow", False), ("inherit", False), (None, False)])
async def test_a_run_policy_denying_web_search_starts_claude_code_without_the_tool(tmp_path: Path, web_search, disallowed) -> None:
    binary = fake_cli(tmp_path, ECHO_ARGV)
    run_policy = {} if web_search is None else {"web_search": web_search}
    ctx = make_ctx(tmp_path, None, allow, run_policy=run_policy, settings={"claude_bin": binary, "idle_timeout_s": 10})
    result = await run_driver(ctx, timeout=20)
    assert result.status == "completed", ctx.activities
    seen = json.loads(result.text)
    argv = seen["argv"]
    pairs = list(itertools.pairwise(argv))
    assert (("--disallowedTools", "WebSearch") in pairs) is disallowed
    assert ("--setting-sources", "user") in pairs  # no workspace settings can bring a tool back
    assert "WebSearch" not in seen["settings"]  # nor the user settings Gatehouse writes


@pytest.mark.agents
@pytest.mark.parametrize(("web_search", "offered"), [("deny", False), ("allow", True)])
async def test_the_real_cli_offers_the_model_web_search_only_when_the_run_policy_allows_it(
    tmp_path: Path, model: FakeAnthropicServer, web_search: str, offered: bool
) -> None:
    require_cli()
    # A workspace that would allow it itself changes nothing (its settings are never read).
    (tmp_path / "ws" / ".claude").mkdir(parents=True)
    (tmp_path / "ws" / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["WebSearch"]}}))
    model.add_turns([text("hi")])
    ctx = make_ctx(tmp_path, model, allow, run_policy={"web_search": web_search})
    result = await run_driver(ctx)
    assert result.status == "completed", ctx.activities
    tools = [tool.get("name") for tool in model.message_requests[0]["tools"]]
    assert "Bash" in tools
    assert ("WebSearch" in tools) is offered
