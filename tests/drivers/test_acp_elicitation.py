"""An ACP agent's form (`elicitation/create`, unstable in ACP) reaches a person as questions
and the answers go back typed; a URL elicitation is declined with the reason. No installed
agent sends one offline, so the agent is a small one on the `acp` SDK's agent side
(tests/fakes/acp_form_agent.py); the driver's side is the real one. Without the floor: the
fake agent needs this virtualenv's Python, which the floor hides."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from drivers.acp import AcpDriver
from drivers.base import GateAnswer, ToolRequest
from tests.drivers.fake_context import FakeRunContext

AGENT = Path(__file__).resolve().parents[1] / "fakes" / "acp_form_agent.py"
FORM = {
    "message": "Deploy where?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "title": "Region", "enum": ["eu-1", "us-2"]},
            "replicas": {"type": "integer", "minimum": 1},
        },
        "required": ["region"],
    },
}


def make_ctx(tmp_path: Path, form: dict[str, Any], decide: Any) -> FakeRunContext:
    (tmp_path / "ws").mkdir()
    (tmp_path / "runtime").mkdir()
    command = [sys.executable, str(AGENT), json.dumps(form)]
    return FakeRunContext(
        workspace=tmp_path / "ws", runtime_dir=tmp_path / "runtime", decide=decide, prompt="go",
        settings={"acp_agents": {"form": {"command": command, "profile": "generic"}}, "idle_timeout_s": 30},
        options={"agent": "form"}, floor=None,
    )


def reply_said(ctx: FakeRunContext) -> dict[str, Any]:
    [text] = [p["text"] for kind, p in ctx.activities if kind == "message" and "ELICITATION-REPLY" in p.get("text", "")]
    return json.loads(text.split("ELICITATION-REPLY ", 1)[1])


async def test_an_acp_agent_s_form_is_a_question_and_the_answers_go_back_typed(tmp_path: Path) -> None:
    asked: list[ToolRequest] = []

    def person(request: ToolRequest) -> GateAnswer:
        asked.append(request)
        return GateAnswer("answer", decided_by="person", answers={"region": ["us-2"], "replicas": "2"})

    ctx = make_ctx(tmp_path, FORM, person)
    result = await asyncio.wait_for(AcpDriver().run(ctx), 60)
    assert result.status == "completed", ctx.activities
    [request] = asked
    assert (request.kind, request.subtype, request.tool) == ("question", "mcp-elicitation", "elicitation")
    assert request.presentation["message"] == "Deploy where?" and request.presentation["server"] == ""
    assert reply_said(ctx) == {"action": "accept", "content": {"region": "us-2", "replicas": 2}}


async def test_a_declined_acp_form_is_declined(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, FORM, lambda r: GateAnswer("deny", reason="no", decided_by="person"))
    result = await asyncio.wait_for(AcpDriver().run(ctx), 60)
    assert result.status == "completed", ctx.activities
    assert reply_said(ctx) == {"action": "decline"}


async def test_a_url_elicitation_is_declined_with_the_reason_and_nobody_is_asked(tmp_path: Path) -> None:
    asked: list[ToolRequest] = []
    ctx = make_ctx(tmp_path, {"url": "https://login.example/"}, lambda r: asked.append(r) or GateAnswer("allow"))
    result = await asyncio.wait_for(AcpDriver().run(ctx), 60)
    assert result.status == "completed", ctx.activities
    assert asked == []
    assert reply_said(ctx) == {"action": "decline"}
    assert any("URL elicitation" in p.get("text", "") for kind, p in ctx.activities if kind == "notice"), ctx.activities
