"""ACP agents and OpenCode end to end: the real programs, the Gatehouse API, the real worker.

Every scenario runs for `{"driver": "acp", "options": {"agent": "claude-code-acp"}}`,
`{"driver": "acp", "options": {"agent": "opencode"}}` and `{"driver": "opencode"}` where
it applies, and Gemini CLI (`gemini --acp`) meets the real gate once; the models are fake
servers on 127.0.0.1 (tests/fakes/). Without the
programs these tests skip, unless GATEHOUSE_REQUIRE_AGENTS=1 (CI), which fails them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from runs.models import Run
from tests.drivers.acp_agents import CLAUDE_CODE_ACP, TARGET_IDS, TARGETS, Agent, agent_under_test
from tests.drivers.e2e import (
    RUN_TIMEOUT,
    approval_for,
    approval_status,
    approvals_of,
    finished,
    start,
    steps_of,
    timeline,
)
from tests.drivers.test_claude_code import processes_in
from tests.fakes import openai_chat_server as chat
from tests.flow import decide, eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agents]



def configure(settings: Any, agent: Agent) -> None:
    values = agent.settings()
    settings.GATEHOUSE_AGENT_ENV_VALUES = values["env_values"]
    if not agent.claude:
        settings.GATEHOUSE_OPENCODE_BIN = values["opencode_bin"]
        settings.GATEHOUSE_OPENCODE_BASE_URL = values["opencode_base_url"]
        settings.GATEHOUSE_OPENCODE_MODEL = values["opencode_model"]
        settings.GATEHOUSE_OPENCODE_ENV_KEY = values["opencode_env_key"]


@pytest.fixture(params=TARGETS, ids=TARGET_IDS)
def agent(request: Any, settings: Any) -> Iterator[Agent]:
    with agent_under_test(*request.param) as found:
        configure(settings, found)
        yield found


@pytest.fixture(params=[t for t in TARGETS if t[0] == "acp"], ids=[i for i in TARGET_IDS if i.startswith("acp")])
def acp_agent(request: Any, settings: Any) -> Iterator[Agent]:
    with agent_under_test(*request.param) as found:
        configure(settings, found)
        yield found


@pytest.fixture
def opencode(settings: Any) -> Iterator[Agent]:
    with agent_under_test("opencode", "") as found:
        configure(settings, found)
        yield found


# --- helpers -------------------------------------------------------------------------------


AGENT_MARKERS = (b"claude-code-acp", b"claude-agent-sdk", b"opencode")


def agent_processes(workspace: Path) -> list[int]:
    """Live agent processes (claude-code-acp and its Claude Code, opencode) in the workspace."""
    found = []
    for pid in processes_in(workspace):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(marker in arg for arg in argv[:3] for marker in AGENT_MARKERS):
            found.append(pid)
    return found


async def no_agent_processes(workspace: Path) -> None:
    await eventually(lambda: agent_processes(workspace) == [], timeout=15)


def kill_agent(workspace: Path) -> int:
    own = os.getpgrp()
    groups = set()
    for pid in agent_processes(workspace):
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            continue
    groups.discard(own)
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(groups)


def assert_no_agent_settings(workspace: Path) -> None:
    for name in (".claude", "opencode.json", "opencode.jsonc", ".opencode"):
        assert not (workspace / name).exists(), f"{name} was written into the workspace"


async def approve_all(api: Any, run_id: int) -> list[dict[str, Any]]:
    """Approve every approval the run asks for until it finishes; the approvals seen."""
    seen: list[dict[str, Any]] = []

    def check() -> Any:
        run = Run.objects.filter(pk=run_id, status__in=Run.FINISHED).first()
        if run is not None:
            return ("done", run)
        body = api.get(f"/api/v1/approvals/?status=pending&run={run_id}").json()
        return ("approval", body["results"][0]) if body["results"] else None

    while True:
        kind, value = await eventually(check, timeout=RUN_TIMEOUT, interval=0.1)
        if kind == "done":
            return seen
        seen.append(value)
        await decide(api, value, "approve")


# --- 1. an allowed command runs ---------------------------------------------------------------


async def test_allowed_command_runs(api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str) -> None:
    marker = f"e2e-{agent.agent or agent.driver}-ok"
    agent.script(agent.command(f"echo {marker}"), agent.say("All done."))
    run = await start(api, agent, workspace, policy=review_all)

    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "permission"
    assert approval["request"]["tool"] == "bash" and approval["request"]["input"] == {"command": f"echo {marker}"}
    # the agent's own id of the call (ACP's toolCallId, OpenCode's callID) is kept and filterable (issue 30.6)
    assert approval["tool_call_id"]
    found = (await sync_to_async(api.get)("/api/v1/approvals/", {"tool_call_id": approval["tool_call_id"]})).json()["results"]
    assert [a["id"] for a in found] == [approval["id"]]
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert await sync_to_async(lambda: len(approvals_of(run["id"])))() == 1, "the command was asked about twice"
    [step] = [s for s in await sync_to_async(steps_of)(run["id"]) if s.tool == "bash"]
    assert step.status == "finished" and marker in step.output
    assert any(marker in text for text in agent.tool_results()), agent.tool_results()
    events = await timeline(api, run["id"])
    assert any(a["event"] == "message" and a["payload"]["text"] == "All done." for a in events)
    await no_agent_processes(workspace)


# --- 2. a denied command does not run; the agent reads the reason ---------------------------


async def test_denied_command_does_not_run_and_the_agent_reads_the_reason(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    agent.script(agent.command("touch should-not-exist.txt"), agent.say("Understood, I will not."), agent.say("Understood."))
    run = await start(api, agent, workspace, policy=review_all, run_policy={"approvals": {"on_reject": "continue"}})

    approval = await approval_for(api, run["id"])
    reason = "no touching files on a Friday"
    assert (await decide(api, approval, "deny", reason=reason)).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert not (workspace / "should-not-exist.txt").exists()
    assert agent.was_told(reason), f"the model was not told the reviewer's reason: {agent.server.requests[-1]}"
    steps = await sync_to_async(steps_of)(run["id"])
    assert [s.status for s in steps if s.tool == "bash"] == ["denied"]


@pytest.mark.smoke
async def test_the_policy_allows_one_command_and_denies_another_with_nobody_asked(
    api: Any, worker: Any, agent: Agent, workspace: Path
) -> None:
    """Each ACP agent and OpenCode meet the rule policy itself (issue 31): an allowed
    command runs, a denied one never does and the model reads the rule's reason; no person
    is asked."""
    from approvals.models import Approval, Policy
    from approvals.services import policy_save

    reason = "No deleting trees in this repository."
    await sync_to_async(policy_save)(policy=Policy(name="allow-echo-deny-rm", document={
        "commands": {"allow": ["echo"], "deny": [{"match": "rm -rf", "reason": reason}]}, "default": "ask"}))
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.txt").write_text("kept")
    agent.script(agent.command("echo policy-allowed"), agent.command("rm -rf build"), agent.say("Done."),
                 agent.say("Done."))
    run = await start(api, agent, workspace, policy="allow-echo-deny-rm")

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert (workspace / "build" / "keep.txt").read_text() == "kept"
    assert agent.was_told(reason), f"the model was not told the rule's reason: {agent.server.requests[-1]}"
    steps = await sync_to_async(steps_of)(run["id"])
    assert [(s.status, s.verdict, s.rule) for s in steps if s.tool == "bash"] == [
        ("finished", "allow", "commands.allow[0]"), ("denied", "deny", "commands.deny[0]")]
    assert not await sync_to_async(Approval.objects.filter(run_id=run["id"]).exists)()


@pytest.fixture
def gemini_agent(settings: Any) -> Iterator[Agent]:
    """Gemini CLI (`gemini --acp`), configured as docs/drivers.md's GATEHOUSE_ACP_AGENTS
    example, against the fake Gemini API."""
    with agent_under_test("acp", "gemini") as found:
        values = found.settings()
        settings.GATEHOUSE_AGENT_ENV_VALUES = values["env_values"]
        settings.GATEHOUSE_ACP_AGENTS = values["acp_agents"]
        yield found


async def test_gemini_cli_meets_the_real_gate_an_allowed_write_lands_a_denied_one_never_does(
    api: Any, worker: Any, gemini_agent: Agent, workspace: Path
) -> None:
    """Gemini CLI end to end through the API, the worker and the real gate (issue 31): the
    rule policy allows one write and denies another; nobody is asked. (Writes, not
    commands: Gemini CLI 0.61.0's shell requests do not say their command, and such a
    request is refused before anyone is asked; tests/drivers/test_acp_gemini.py.)"""
    from approvals.models import Approval, Policy
    from approvals.services import policy_save

    reason = "That file is locked."
    await sync_to_async(policy_save)(policy=Policy(name="gemini-notes-not-locked", document={
        "reads": {"allow": ["*.txt"]},
        "edits": {"allow": ["notes.txt"], "deny": [{"match": "locked.txt", "reason": reason}]}, "default": "ask"}))
    # Gemini CLI reads a file before it writes it, and writes over existing files only.
    (workspace / "notes.txt").write_text("old\n")
    (workspace / "locked.txt").write_text("kept\n")
    root = workspace.resolve()
    gemini_agent.script(gemini_agent.write(str(root / "notes.txt"), "new\n"), gemini_agent.write(str(root / "locked.txt"), "x\n"),
                        gemini_agent.say("Done."), gemini_agent.say("Done."))
    run = await start(api, gemini_agent, workspace, policy="gemini-notes-not-locked")

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    steps = await sync_to_async(steps_of)(run["id"])
    assert (workspace / "notes.txt").read_text() == "new\n", [(s.tool, s.request, s.status, s.rule) for s in steps]
    assert (workspace / "locked.txt").read_text() == "kept\n"
    assert gemini_agent.was_told(reason), "the model was not told the rule's reason"
    edits = [(s.status, s.verdict, s.rule) for s in steps if s.tool == "edit"]
    assert edits == [("finished", "allow", "edits.allow[0]"), ("denied", "deny", "edits.deny[0]")], edits
    assert not await sync_to_async(Approval.objects.filter(run_id=run["id"]).exists)()


async def test_denied_command_under_on_reject_abort_aborts_the_run(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    agent.script(agent.command("touch aborted.txt"), agent.say("unreachable"))
    run = await start(api, agent, workspace, policy=review_all, run_policy={"approvals": {"on_reject": "abort"}})
    approval = await approval_for(api, run["id"])
    assert (await decide(api, approval, "deny", reason="stop right there")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "approval_denied")
    assert not (workspace / "aborted.txt").exists()
    await no_agent_processes(workspace)


# --- 3. file writes ---------------------------------------------------------------------------


async def test_allowed_file_write_lands_in_the_workspace(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    target = workspace.resolve() / "notes.txt"
    agent.script(agent.write(str(target), "written through the gate\n"), agent.say("Wrote it."))
    run = await start(api, agent, workspace, policy=review_all)

    approval = await approval_for(api, run["id"])
    assert approval["request"]["tool"] == "write" and approval["request"]["input"]["file_path"] == "notes.txt"
    assert "written through the gate" in approval["presentation"]["diff"]
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert target.read_text() == "written through the gate\n"
    # For the ACP agents the write came through fs/write_text_file, covered by the approval.
    assert await sync_to_async(lambda: len(approvals_of(run["id"])))() == 1
    [step] = [s for s in await sync_to_async(steps_of)(run["id"]) if s.tool == "write"]
    assert step.status == "finished"


async def test_write_outside_the_workspace_is_refused(
    api: Any, worker: Any, agent: Agent, workspace: Path, tmp_path: Path, review_all: str
) -> None:
    outside = tmp_path.resolve() / "outside.txt"
    agent.script(agent.write(str(outside), "escaped\n"), agent.say("Could not write it."), agent.say("Done."))
    run = await start(api, agent, workspace, policy=review_all, run_policy={"approvals": {"on_reject": "continue"}})

    # Even approved by a person, the write is refused: files are served inside the workspace only.
    await approve_all(api, run["id"])
    done = await Run.objects.aget(pk=run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert not outside.exists()
    assert agent.was_told("outside"), agent.tool_results()


# --- 4. always allow: a Gatehouse grant, nothing written for the agent ----------------------


async def test_always_allow_then_the_covered_request_is_not_shown(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    command = "echo granted-e2e"
    agent.script(agent.command(command), agent.command(command), agent.say("Both done."))
    run = await start(api, agent, workspace, policy=review_all)
    approval = await approval_for(api, run["id"])
    assert approval["suggested_grant"] == {"tool": "bash", "match": command}
    assert (await decide(api, approval, "approve", scope="session")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert await sync_to_async(lambda: len(approvals_of(run["id"])))() == 1, "the covered request was shown again"
    bash = [s for s in await sync_to_async(steps_of)(run["id"]) if s.tool == "bash"]
    assert [(s.status, s.decided_by) for s in bash] == [("finished", "api"), ("finished", "grant")]
    assert sum("granted-e2e" in text for text in agent.tool_results()) == 2
    assert_no_agent_settings(workspace)


# --- 5. OpenCode questions --------------------------------------------------------------------

QUESTION = {
    "questions": [
        {"question": "Which color should I use?", "header": "Color",
         "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}
    ]
}  # fmt: skip


async def test_opencode_question_answered(api: Any, worker: Any, opencode: Agent, workspace: Path) -> None:
    opencode.script([chat.tool_call("question", QUESTION)], opencode.say("Blue it is."))
    run = await start(api, opencode, workspace, run_policy={"approvals": {"question": "ask"}})
    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "question"
    assert [q["id"] for q in approval["presentation"]["questions"]] == ["color"]
    response = await decide(api, approval, "answer", answers={"color": ["Blue"]})
    assert response.status_code == HTTPStatus.OK, response.content

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert any('"Which color should I use?"="Blue"' in text for text in opencode.tool_results()), opencode.tool_results()


async def test_opencode_question_declined(api: Any, worker: Any, opencode: Agent, workspace: Path) -> None:
    opencode.script([chat.tool_call("question", QUESTION)], opencode.say("Going on without an answer."))
    run = await start(api, opencode, workspace, run_policy={"approvals": {"question": "ask"}})
    approval = await approval_for(api, run["id"])
    response = await decide(api, approval, "answer", decline=True)
    assert response.status_code == HTTPStatus.OK, response.content

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    # OpenCode ends its loop on a dismissed question; the driver tells the model in words.
    assert opencode.was_told("no human answer to your question"), opencode.server.requests[-1]
    events = await timeline(api, run["id"])
    assert any(a["event"] == "message" and a["payload"]["text"] == "Going on without an answer." for a in events)


# --- 6. cancel while a permission is pending ------------------------------------------------


async def test_cancel_while_a_permission_is_pending(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    agent.script(agent.command("touch never.txt"), agent.say("unreachable"))
    run = await start(api, agent, workspace, policy=review_all)
    approval = await approval_for(api, run["id"])
    assert agent_processes(workspace), "the agent should be running while the approval is pending"

    response = await sync_to_async(api.post)(f"/api/v1/runs/{run['id']}/cancel/")
    assert response.status_code == HTTPStatus.OK, response.content

    done = await finished(run["id"])
    assert done.status == "cancelled"
    assert await approval_status(api, approval["id"]) != "pending"
    assert (await decide(api, approval, "approve")).status_code >= 400
    assert not (workspace / "never.txt").exists()
    await no_agent_processes(workspace)
    assert not (workspace / "never.txt").exists()


# --- 7. the agent killed mid-run ----------------------------------------------------------------


async def test_agent_killed_mid_run_fails_the_run_and_the_worker_goes_on(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    from tests.flow import start_run

    agent.script(agent.command("touch after-kill.txt"), agent.say("unreachable"))
    run = await start(api, agent, workspace, policy=review_all)
    approval = await approval_for(api, run["id"])
    assert kill_agent(workspace) >= 1

    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "agent_exited")
    events = await timeline(api, run["id"])
    notices = [a["payload"] for a in events if a["kind"] == "notice" and a["payload"].get("reason") == "agent_exited"]
    assert notices and "exited" in notices[0]["text"]
    assert await approval_status(api, approval["id"]) != "pending"
    assert not (workspace / "after-kill.txt").exists()
    await no_agent_processes(workspace)

    after = await start_run(api, {"steps": [{"message": "the worker is still here"}]})
    assert (await finished(after["id"])).status == "completed"


# --- 8. a malformed protocol line fails that run ---------------------------------------------


async def test_malformed_protocol_line_fails_the_run_with_a_reason(
    api: Any, worker: Any, settings: Any, workspace: Path
) -> None:
    with agent_under_test("acp", "claude-code-acp") as agent:
        configure(settings, agent)
        # The real agent, behind one line of garbage on its stdout.
        wrapper = ["/bin/sh", "-c", 'echo "this is not json-rpc"; exec "$0" "$@"', "node", str(CLAUDE_CODE_ACP)]
        settings.GATEHOUSE_ACP_AGENTS = {"garbled": {"command": wrapper, "profile": "claude-code-acp"}}
        response = await sync_to_async(api.post)(
            "/api/v1/runs/", {"driver": "acp", "options": {"agent": "garbled"}, "prompt": "hi", "workspace": str(workspace)}, format="json"
        )
        assert response.status_code == HTTPStatus.CREATED, response.content
        run_id = response.json()["id"]
        done = await finished(run_id)
        assert (done.status, done.failure_reason) == ("failed", "agent_protocol_error")
        events = await timeline(api, run_id)
        [notice] = [a["payload"] for a in events if a["kind"] == "notice" and a["payload"].get("reason") == "agent_protocol_error"]
        assert "this is not json-rpc" in notice["text"]
        await no_agent_processes(workspace)


# --- 9. options are validated at the API --------------------------------------------------------


async def test_unknown_agent_or_option_is_refused_naming_the_field(api: Any, workspace: Path) -> None:
    for options, field in (({"agent": "nope"}, "options.agent"), ({"agent": "opencode", "colour": "red"}, "options.colour")):
        response = await sync_to_async(api.post)(
            "/api/v1/runs/", {"driver": "acp", "options": options, "prompt": "hi", "workspace": str(workspace)}, format="json"
        )
        assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
        assert (response.json()["code"], response.json()["field"]) == ("invalid_options", field)
    response = await sync_to_async(api.post)(
        "/api/v1/runs/", {"driver": "opencode", "options": {"agent": "x"}, "prompt": "hi", "workspace": str(workspace)}, format="json"
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST and response.json()["field"] == "options"
    assert not await Run.objects.filter(driver__in=["acp", "opencode"]).aexists()


# --- 10. a workspace OpenCode would take orders from is refused --------------------------------


async def test_workspace_with_opencode_configuration_is_refused(api: Any, workspace: Path) -> None:
    (workspace / ".opencode" / "plugin").mkdir(parents=True)
    (workspace / ".opencode" / "plugin" / "evil.js").write_text("export const Evil = async () => ({})\n")
    for body in ({"driver": "opencode"}, {"driver": "acp", "options": {"agent": "opencode"}}):
        response = await sync_to_async(api.post)("/api/v1/runs/", {**body, "prompt": "hi", "workspace": str(workspace)}, format="json")
        assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
        error = response.json()
        assert (error["code"], error["field"]) == ("workspace_agent_config", "workspace")
        assert error["files"] == [str(workspace.resolve() / ".opencode")]
    assert not await Run.objects.aexists()
    # claude-code-acp is told to load no settings: the same workspace is fine for it.
    response = await sync_to_async(api.post)(
        "/api/v1/runs/", {"driver": "acp", "options": {"agent": "claude-code-acp"}, "prompt": "hi", "workspace": str(workspace)}, format="json"
    )
    assert response.status_code == HTTPStatus.CREATED, response.content
