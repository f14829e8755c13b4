"""An administrator's MCP server under the real Codex (0.171.0): every tool call is gated as
`mcp__<server>__<tool>` (also a tool the server marks read-only, which Codex would run
unasked), and the server's forms (MCP elicitation) reach a person as questions whose
answers go back typed.

The fake MCP server (tests/fakes/mcp_server.py) is copied into the run's runtime directory:
inside the sandbox floor the checkout is hidden, and the runtime directory is what the
server may read and write there. It runs with Debian's /usr/bin/python3, which the floor
shows (a virtualenv under a home directory is hidden).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from drivers.base import GateAnswer, ToolRequest
from drivers.codex import CodexDriver
from tests.drivers.test_codex import _codex_bin, make_ctx
from tests.fakes.responses_server import FakeResponsesServer, exec_command, function_call, message

FAKE_MCP = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"
PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
SERVER = "tickets"

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Project name", "minLength": 2},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
        "public": {"type": "boolean", "title": "Public?"},
        "region": {"type": "string", "enum": ["eu-1", "us-2"], "enumNames": ["Europe", "America"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
    },
    "required": ["name", "replicas"],
}


@pytest.fixture(name="codex_bin")
def codex_bin_fixture() -> str:
    path = _codex_bin()
    if path is None:
        reason = "the Codex CLI is not installed (run `make agents`, or set GATEHOUSE_CODEX_BIN)"
        if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


class McpScript:
    """The model's side: wait (a harmless `sleep`) until Codex offers the server's tools
    (Codex starts MCP servers beside the first turn), call `tool` once, then finish."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool, self.arguments, self.called = tool, arguments, False

    def __call__(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if self.called:
            return [message("done")]
        if not any(t.get("name") == f"mcp__{SERVER}" for t in body.get("tools", [])):
            return [exec_command("sleep 0.5")]
        self.called = True
        item = function_call(self.tool, self.arguments, call_id="call_mcp")
        item["namespace"] = f"mcp__{SERVER}"  # how a namespaced (MCP) tool is called
        return [item]


def mcp_run(tmp_path: Path, codex_bin: str, server: FakeResponsesServer, decide: Callable[[ToolRequest], GateAnswer],
            *, read_only_tool: bool = False):
    runtime = tmp_path / "runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    script = runtime / "mcp_server.py"
    shutil.copy(FAKE_MCP, script)
    args = [str(script), "--marker", str(runtime / "marker"), "--log", str(runtime / "mcp-log.jsonl")]
    if read_only_tool:
        args.append("--read-only-hint")
    ctx = make_ctx(tmp_path, decide, codex_bin=codex_bin, model_server=server,
                   settings={"mcp_servers": {SERVER: {"command": PYTHON, "args": args}}})
    return ctx, runtime


def mcp_log(runtime: Path) -> list[dict[str, Any]]:
    path = runtime / "mcp-log.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def allow_commands(then: Callable[[ToolRequest], GateAnswer]) -> Callable[[ToolRequest], GateAnswer]:
    """The script's `sleep` is allowed; everything else is what the test decides."""
    def decide(request: ToolRequest) -> GateAnswer:
        if request.tool == "bash":
            return GateAnswer("allow", decided_by="person")
        return then(request)
    return decide


async def run(ctx) -> Any:
    return await asyncio.wait_for(CodexDriver().run(ctx), 120)


@pytest.mark.agents
@pytest.mark.parametrize("read_only_tool", [False, True], ids=["plain tool", "tool marked read-only"])
async def test_each_mcp_tool_call_is_gated_and_a_denied_one_never_reaches_the_server(tmp_path, codex_bin, read_only_tool):
    asked: list[ToolRequest] = []

    def person(request: ToolRequest) -> GateAnswer:
        asked.append(request)
        return GateAnswer("deny", reason="not today", decided_by="person")

    with FakeResponsesServer() as model:
        model.add_turns(*[McpScript("touch_marker", {"note": "hi"})] * 30)
        ctx, runtime = mcp_run(tmp_path, codex_bin, model, allow_commands(person), read_only_tool=read_only_tool)
        result = await run(ctx)
        output = model.tool_output("call_mcp") or ""

    assert result.status == "completed", ctx.activities
    assert [(r.tool, dict(r.input), r.kind) for r in asked] == [(f"mcp__{SERVER}__touch_marker", {"note": "hi"}, "permission")]
    assert not (runtime / "marker").exists()
    assert not [e for e in mcp_log(runtime) if e.get("method") == "tools/call"], "a denied call reached the server"
    assert "rejected" in output, output


@pytest.mark.agents
async def test_an_allowed_mcp_tool_call_runs(tmp_path, codex_bin):
    with FakeResponsesServer() as model:
        model.add_turns(*[McpScript("touch_marker", {"note": "hi"})] * 30)
        ctx, runtime = mcp_run(tmp_path, codex_bin, model, lambda r: GateAnswer("allow", decided_by="person"))
        result = await run(ctx)
        output = model.tool_output("call_mcp") or ""

    assert result.status == "completed", ctx.activities
    assert (runtime / "marker").read_text() == "hi\n"
    assert "marker written: hi" in output


def answering(answers: dict[str, Any] | None, questions: list[ToolRequest]) -> Callable[[ToolRequest], GateAnswer]:
    def decide(request: ToolRequest) -> GateAnswer:
        if request.kind == "question":
            questions.append(request)
            if answers is None:
                return GateAnswer("deny", reason="not now", decided_by="person")
            return GateAnswer("answer", decided_by="person", answers=answers)
        return GateAnswer("allow", decided_by="person")  # the `ask_user` call itself
    return decide


def elicitation_reply(runtime: Path) -> dict[str, Any]:
    [reply] = [e for e in mcp_log(runtime) if e.get("event") == "elicitation-reply"]
    return reply.get("result") or {}


@pytest.mark.agents
async def test_an_mcp_form_is_a_question_and_its_answers_go_back_typed(tmp_path, codex_bin):
    questions: list[ToolRequest] = []
    answers = {"name": "apollo", "replicas": "3", "public": ["No"], "region": ["Europe"], "tags": ["a", "c"]}
    with FakeResponsesServer() as model:
        model.add_turns(*[McpScript("ask_user", {"message": "Which project?", "schema": FORM})] * 30)
        ctx, runtime = mcp_run(tmp_path, codex_bin, model, answering(answers, questions))
        result = await run(ctx)
        output = model.tool_output("call_mcp") or ""

    assert result.status == "completed", ctx.activities
    [request] = questions
    assert request.subtype == "mcp-elicitation" and request.presentation["message"] == "Which project?"
    assert request.presentation["server"] == SERVER
    by_id = {q["id"]: q for q in request.presentation["questions"]}
    assert by_id["replicas"]["value_type"] == "integer" and by_id["replicas"]["required"] is True
    assert [o["label"] for o in by_id["region"]["options"]] == ["Europe", "America"]
    assert by_id["tags"]["multi_select"] is True
    expected = {"name": "apollo", "replicas": 3, "public": False, "region": "eu-1", "tags": ["a", "c"]}
    assert elicitation_reply(runtime) == {"action": "accept", "content": expected}
    assert json.dumps(expected, sort_keys=True) in output  # the MCP server's result reached the model


@pytest.mark.agents
async def test_a_declined_mcp_form_is_declined(tmp_path, codex_bin):
    questions: list[ToolRequest] = []
    with FakeResponsesServer() as model:
        model.add_turns(*[McpScript("ask_user", {"message": "Which project?", "schema": FORM})] * 30)
        ctx, runtime = mcp_run(tmp_path, codex_bin, model, answering(None, questions))
        result = await run(ctx)

    assert result.status == "completed", ctx.activities
    assert len(questions) == 1
    assert elicitation_reply(runtime) == {"action": "decline"}


@pytest.mark.agents
async def test_an_elicitation_gatehouse_cannot_show_is_declined_with_the_reason(tmp_path, codex_bin):
    questions: list[ToolRequest] = []
    with FakeResponsesServer() as model:
        model.add_turns(*[McpScript("ask_user", {"message": "Sign in", "url": "https://login.example/x"})] * 30)
        ctx, runtime = mcp_run(tmp_path, codex_bin, model, answering({}, questions))
        result = await run(ctx)

    assert result.status == "completed", ctx.activities
    assert questions == [], "nobody is asked what cannot be shown"
    notices = [p["text"] for kind, p in ctx.activities if kind == "notice"]
    assert any("'url' elicitation" in text and "declined" in text for text in notices), notices
    assert elicitation_reply(runtime) == {"action": "decline"}
