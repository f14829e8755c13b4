"""Gemini CLI (`@google/gemini-cli` 0.61.0, `gemini --acp`) through the ACP driver, as
the GATEHOUSE_ACP_AGENTS example of docs/drivers.md configures it (its profile, `gemini`, inferred from
the command line), offline: the fake Gemini API of tests/fakes/gemini_server.py, the gate
faked by FakeRunContext."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drivers.acp import agents
from drivers.base import GateAnswer, ToolRequest
from tests.drivers.acp_agents import Agent, agent_under_test
from tests.drivers.test_acp import allow, kinds, make_ctx, run_driver
from tests.fakes import gemini_server as gemini

pytestmark = pytest.mark.agents


@pytest.fixture
def agent() -> Any:
    with agent_under_test("acp", "gemini") as found:
        yield found


async def test_a_shell_request_that_does_not_say_its_command_is_refused_without_asking(tmp_path: Path, agent: Agent) -> None:
    # Gemini CLI 0.61.0 puts the command in the tool call's title only (no rawInput): the
    # gate would judge an empty command, which no deny rule matches.
    agent.script(agent.command("touch ran.txt"), agent.say("Could not."), agent.say("Understood."))
    ctx = make_ctx(tmp_path, agent, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert not (ctx.workspace / "ran.txt").exists()
    assert ctx.requests == [], "nobody is asked to judge a command they are not shown"
    [notice] = [p for p in kinds(ctx, "notice") if "without saying which command" in p.get("text", "")]
    assert notice["title"] == "touch ran.txt"
    assert agent.was_told("without saying which command")


async def test_no_tool_that_reads_without_asking_is_offered(tmp_path: Path, agent: Agent) -> None:
    """Gemini's search and listing tools run unasked in its own process: `grep_search`
    printed a `.env` line to the model while every request was denied. The run's settings
    leave it only tools that ask or go through the client."""
    def deny(request: ToolRequest) -> GateAnswer:
        return GateAnswer(outcome="deny", decided_by="policy", reason="reads of .env are denied")

    ctx = make_ctx(tmp_path, agent, deny)
    (ctx.workspace / ".env").write_text("SECRET=hunter2\n")
    where = str(ctx.workspace.resolve())
    agent.script(
        [gemini.function_call("grep_search", {"pattern": "SECRET", "dir_path": where})],
        [gemini.function_call("glob", {"pattern": "**/*", "dir_path": where})],
        [gemini.function_call("list_directory", {"dir_path": where})],
        [gemini.function_call("invoke_agent", {"agent_name": "codebase_investigator", "prompt": "Find the secret."})],
        agent.say("Nothing found."),
    )
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    offered = {d.get("name") for body in agent.server.main_bodies() for t in body.get("tools") or []
               for d in t.get("functionDeclarations") or []}  # fmt: skip
    # Every tool offered asks before it acts or goes through the client (a release that
    # offers another fails here until someone looks at what it does).
    assert offered and not offered & set(agents.GEMINI_UNASKED_TOOLS), offered
    assert offered <= {"read_file", "write_file", "replace", "run_shell_command", "web_fetch", "write_todos",
                       "update_topic", "enter_plan_mode", "exit_plan_mode"}, offered
    results = agent.tool_results()
    assert len(results) == 4 and all("not found in registry" in text for text in results), results
    assert not any("hunter2" in text or ".env" in text for text in results)


def reads_only(request: ToolRequest) -> GateAnswer:
    if request.tool == "read":
        return GateAnswer(outcome="allow", decided_by="policy")
    return GateAnswer(outcome="deny", decided_by="reviewer", reason="Not in this repository.")


# Gemini CLI reads a file through fs/read_text_file before it asks to write it; a file that
# does not exist yet it cannot create through an ACP client (docs/drivers.md: it does not take the
# client's not-found error for one), so these write over an existing file.


async def test_an_allowed_write_lands_through_the_client_covered_by_its_approval(tmp_path: Path, agent: Agent) -> None:
    ctx = make_ctx(tmp_path, agent, allow)
    (ctx.workspace / "notes.txt").write_text("old\n")
    agent.script(agent.write(str(ctx.workspace.resolve() / "notes.txt"), "through fs\n"), agent.say("Wrote it."))
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert (ctx.workspace / "notes.txt").read_text() == "through fs\n"
    [write] = [r for r in ctx.requests if r.tool != "read"]
    # Over an existing file it is an edit, shown as its diff.
    assert (write.tool, write.input["file_path"]) == ("edit", "notes.txt") and "+through fs" in write.input["diff"], ctx.requests
    written = [p for k, p in ctx.activities if k == "tool" and p.get("phase") == "fs/write_text_file"]
    assert [w["path"] for w in written] == ["notes.txt"] and written[0]["covered_by"] == write.native_id


async def test_a_denied_write_does_not_land_and_the_agent_reads_the_reason(tmp_path: Path, agent: Agent) -> None:
    ctx = make_ctx(tmp_path, agent, reads_only)
    (ctx.workspace / "notes.txt").write_text("old\n")
    agent.script(agent.write(str(ctx.workspace.resolve() / "notes.txt"), "never\n"), agent.say("Not written."), agent.say("OK."))
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert (ctx.workspace / "notes.txt").read_text() == "old\n"
    assert [r.tool for r in ctx.requests if r.tool != "read"] == ["edit"], ctx.requests
    assert agent.was_told("Not in this repository.")


async def test_a_write_outside_the_workspace_is_refused_without_asking(tmp_path: Path, agent: Agent) -> None:
    # Gemini CLI's own workspace check refuses it before it asks; had it asked, the
    # driver would have refused the permission for naming a path outside (test_acp.py).
    outside = tmp_path.resolve() / "outside.txt"
    agent.script(agent.write(str(outside), "escaped\n"), agent.say("Could not."), agent.say("Done."))
    ctx = make_ctx(tmp_path, agent, allow)
    result = await run_driver(ctx)

    assert result.status == "completed", ctx.activities
    assert not outside.exists()
    assert ctx.requests == [], "nobody is asked about a path outside the workspace"
    assert any("not in workspace" in text.lower() for text in agent.tool_results()), agent.tool_results()


async def test_a_workspace_with_gemini_configuration_is_refused(tmp_path: Path, agent: Agent) -> None:
    ctx = make_ctx(tmp_path, agent, allow)
    (ctx.workspace / ".gemini").mkdir()
    (ctx.workspace / ".gemini" / "settings.json").write_text('{"tools": {"allowed": ["run_shell_command"]}}')
    agent.script(agent.say("unreachable"))
    result = await run_driver(ctx)

    assert result.status == "failed" and result.failure_reason == "workspace_agent_config", ctx.activities
    assert agent.server.requests == [], "the agent never started"
