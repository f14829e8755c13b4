"""A repository cannot take over its agent (issue 15), with the real CLIs.

The workspace (tests/drivers/hostile.py) declares hooks, MCP servers, plugins, custom
agents and commands, allow-all permissions, Codex rules and config, in the workspace and
in its parent repository, and git programs that `git status` runs; each writes a marker
when run. Through the real worker and the API: the marker directory stays empty, the first
tool request still waits for a person, and the timeline names the ignored files. An
administrator's MCP server does start, and its tool calls are gated (driver level, with a
fake context that answers like a person).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from drivers.base import GateAnswer, ToolRequest
from drivers.claude_code import ClaudeCodeDriver
from tests.drivers import hostile
from tests.drivers.e2e import approval_for, finished, start, steps_of, timeline
from tests.drivers.test_agents_e2e import Agent, claude_agent, codex_agent, no_agent_processes
from tests.drivers.test_claude_code import make_ctx, require_cli
from tests.fakes import anthropic_server as anthropic
from tests.flow import decide

MCP_SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"

# What each driver's timeline must name (workspace-relative), at least.
IGNORED = {
    "claude-code": {
        ".claude/settings.json", ".claude/settings.local.json", ".mcp.json", ".claude/agents",
        ".claude/commands", ".claude/skills", "../.claude/settings.json", "../.mcp.json",
    },
    "codex": {".codex/config.toml", ".codex/hooks.json", ".codex/rules", "../.codex/config.toml", "../.codex/rules"},
}  # fmt: skip


@pytest.fixture(params=["claude-code", "codex"])
def agent(request: Any, settings: Any) -> Iterator[Agent]:
    yield from (claude_agent if request.param == "claude-code" else codex_agent)(settings)


def model_saw(agent: Agent, words: str) -> bool:
    with agent.server._lock:
        return words in json.dumps(agent.server.requests)


@pytest.mark.django_db(transaction=True)
@pytest.mark.agents
async def test_hostile_workspace_runs_nothing_and_the_first_request_waits_for_a_person(
    api: Any, worker: Any, agent: Agent, tmp_path: Path, review_all: str
) -> None:
    ws = hostile.build(tmp_path)
    agent.script(agent.command("touch gated.txt"), agent.say("Understood."))
    run = await start(api, agent, ws.workspace, policy=review_all, run_policy={"approvals": {"on_reject": "continue"}})

    approval = await approval_for(api, run["id"])
    assert approval["request"]["input"] == {"command": "touch gated.txt"}
    assert ws.ran() == [], f"programs from the workspace ran before any decision: {ws.ran()}"
    assert not (ws.workspace / "gated.txt").exists()
    assert (await decide(api, approval, "deny", reason="not in this repository")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert ws.ran() == [], f"programs from the workspace ran: {ws.ran()}"
    assert not (ws.workspace / "gated.txt").exists()
    [step] = await sync_to_async(steps_of)(run["id"])
    assert (step.status, step.decided_by) == ("denied", "api")

    events = await timeline(api, run["id"])
    [notice] = [a["payload"] for a in events if a["kind"] == "notice" and a["payload"].get("workspace_config")]
    reported = {f["path"]: f for f in notice["workspace_config"]}
    assert IGNORED[agent.driver] <= set(reported), notice["text"]
    assert reported["../.git/config"]["action"] == "neutralised"
    assert {"core.fsmonitor", "filter.evil.clean"} <= set(reported["../.git/config"]["holds"])
    assert "`.claude/settings.json` (hooks" in notice["text"] or agent.driver == "codex"
    assert not model_saw(agent, hostile.SECRET_TOKEN)
    if agent.driver == "claude-code":
        assert model_saw(agent, hostile.CLAUDE_TOKEN), "CLAUDE.md should still reach the model as context"
    await no_agent_processes(ws.workspace)


# -- an administrator's MCP server: it starts, and its tool calls are gated ---------------------------


def mcp_settings(tmp_path: Path) -> tuple[dict[str, Any], Path, Path]:
    # In the run's runtime directory: the MCP server runs inside the floor with the CLI,
    # where that (and the workspace) is all it may write.
    (tmp_path / "runtime").mkdir(exist_ok=True)
    marker, log = tmp_path / "runtime" / "mcp-called", tmp_path / "runtime" / "mcp-log.jsonl"
    server = {"command": sys.executable, "args": [str(MCP_SERVER), "--marker", str(marker), "--log", str(log)]}
    return {"gh": server}, marker, log


def mcp_log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.agents
async def test_administrator_mcp_server_starts_and_each_call_waits_for_the_gate(tmp_path: Path) -> None:
    require_cli()
    servers, marker, log = mcp_settings(tmp_path)
    ws = hostile.build(tmp_path / "hostile")
    asked: list[ToolRequest] = []

    async def person(request: ToolRequest) -> GateAnswer:
        # The request reached the gate and the CLI waits on this answer. Whether the server
        # was called before it is read from the server's log afterwards, not from a wait
        # here: the answer is appended to the same log, in order with the server's own lines.
        asked.append(request)
        assert not marker.exists(), "the MCP tool ran before the decision"
        outcome = "deny" if len(asked) == 1 else "allow"
        with log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": "decided", "note": request.input.get("note"), "outcome": outcome}) + "\n")
        if outcome == "deny":
            return GateAnswer("deny", reason="not that note", decided_by="person")
        return GateAnswer("allow", decided_by="person")

    with anthropic.FakeAnthropicServer() as model:
        model.add_turns(
            [anthropic.tool_use("mcp__gh__touch_marker", {"note": "first"})],
            [anthropic.tool_use("mcp__gh__touch_marker", {"note": "second"})],
            [anthropic.text("done")],
        )
        ctx = make_ctx(tmp_path, model, person, settings={"mcp_servers": servers})
        ctx.workspace = ws.workspace
        result = await asyncio.wait_for(ClaudeCodeDriver().run(ctx), 90)
        denied, allowed = model.tool_results()

    assert result.status == "completed", ctx.activities
    assert [(r.tool, dict(r.input)) for r in asked] == [
        ("mcp__gh__touch_marker", {"note": "first"}),
        ("mcp__gh__touch_marker", {"note": "second"}),
    ]
    assert denied["is_error"] and "not that note" in denied["text"]
    assert "marker written: second" in allowed["text"] and marker.read_text() == "second\n"
    calls = [e["params"]["arguments"] for e in mcp_log(log) if e.get("method") == "tools/call"]
    # The denied call never reached the server in the whole run (the CLI went on to its next
    # turn and finished, so any call of it would be logged by now); the allowed one only
    # after its decision.
    assert calls == [{"note": "second"}], "only the allowed call may reach the MCP server"
    order = [("decided" if e.get("event") == "decided" else e.get("method")) for e in mcp_log(log)]
    assert [o for o in order if o in ("decided", "tools/call")] == ["decided", "decided", "tools/call"], order
    assert mcp_log(log)[0]["event"] == "started"
    # The workspace's own .mcp.json servers did not start beside the administrator's.
    assert ws.ran() == []


def test_mcp_servers_setting_is_validated() -> None:
    from drivers.mcp_servers import validate_mcp_servers

    ok = {"docs": {"command": "docs-mcp", "args": ["--stdio"], "env": {"T": "x"}}, "web": {"type": "http", "url": "https://m/"}}
    assert validate_mcp_servers(ok) == ok
    for bad, message in (
        ({"a__b": {"command": "x"}}, "server name"),
        ({"x": {"args": []}}, "x.command"),
        ({"x": {"command": "c", "args": "-v"}}, "x.args"),
        ({"x": {"command": "c", "cwd": "/"}}, "x.cwd: unknown field"),
        ({"x": {"type": "http", "url": "ftp://h"}}, "x.url"),
        ({"x": {"type": "ws", "url": "ws://h"}}, "x.type"),
        ({"x": {"command": "c", "env": {"A": 1}}}, "x.env"),
    ):
        with pytest.raises(ValueError, match=message):
            validate_mcp_servers(bad)


def test_mcp_servers_setting_must_be_a_json_object(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from infra.env import env_json_object

    monkeypatch.setenv("GH_TEST_MCP", '{"docs": {"command": "docs-mcp"}}')
    assert env_json_object("GH_TEST_MCP", {}) == {"docs": {"command": "docs-mcp"}}
    for raw, message in (("[1]", "JSON object"), ("{nope", "not valid JSON")):
        monkeypatch.setenv("GH_TEST_MCP", raw)
        with pytest.raises(ImproperlyConfigured, match=message):
            env_json_object("GH_TEST_MCP", {})


@pytest.mark.agents
async def test_claude_md_links_out_of_the_workspace_never_reach_the_model(tmp_path: Path) -> None:
    """CLAUDE.md is context, not a way around the gate: the CLI's own loading (without
    Gatehouse's flags) sent a nested `sub/CLAUDE.md -> <secret>` and a top-level
    `.claude/CLAUDE.md -> <secret>` to the model, with no tool call to decide."""
    require_cli()
    ws = hostile.build(tmp_path)
    sub = ws.workspace / "sub"
    sub.mkdir()
    (sub / "a.txt").write_text("hello\n")
    (sub / "CLAUDE.md").symlink_to(tmp_path / "secret.txt")
    with anthropic.FakeAnthropicServer() as model:
        model.add_turns([anthropic.tool_use("Read", {"file_path": str(sub / "a.txt")})], [anthropic.text("done")])
        ctx = make_ctx(tmp_path, model, lambda r: GateAnswer("allow", decided_by="person"))
        ctx.workspace = ws.workspace
        result = await asyncio.wait_for(ClaudeCodeDriver().run(ctx), 60)
        sent = json.dumps(model.requests)

    assert result.status == "completed", ctx.activities
    assert [r.tool for r in ctx.requests] == ["read"]
    assert "hello" in model.tool_results()[0]["text"]
    assert hostile.SECRET_TOKEN not in sent
    assert hostile.CLAUDE_TOKEN in sent and ws.ran() == []


@pytest.mark.agents
async def test_settings_planted_in_the_run_config_dir_are_gone_at_the_next_start(tmp_path: Path) -> None:
    """The run's CLAUDE_CONFIG_DIR is the agent's to write (an approved command may): a hook
    planted in its settings.json ran at the next start (observed), so each start rewrites it."""
    require_cli()
    markers = tmp_path / "markers"
    markers.mkdir()
    with anthropic.FakeAnthropicServer() as model:
        model.add_turns([anthropic.tool_use("Bash", {"command": "echo hi", "description": "hi"})], [anthropic.text("done")])
        ctx = make_ctx(tmp_path, model, lambda r: GateAnswer("allow", decided_by="person"))
        config_dir = ctx.runtime_dir / "home" / ".claude"
        config_dir.mkdir(parents=True)
        planted = {"type": "command", "command": f"touch {markers / 'planted-hook'}"}
        hooks = {"SessionStart": [{"hooks": [planted]}], "PreToolUse": [{"matcher": "", "hooks": [planted]}]}
        (config_dir / "settings.json").write_text(json.dumps({"hooks": hooks, "permissions": {"allow": ["Bash"]}}))
        (config_dir / "agents").mkdir()
        (config_dir / "agents" / "planted.md").write_text("---\nname: planted\ndescription: x\n---\nx\n")
        result = await asyncio.wait_for(ClaudeCodeDriver().run(ctx), 60)

    assert result.status == "completed", ctx.activities
    assert list(markers.iterdir()) == []
    assert [r.tool for r in ctx.requests] == ["bash"]  # the allow rule did not skip the gate
