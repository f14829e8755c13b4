"""Claude Code and Codex end to end: the real CLI, the Gatehouse API and the real worker.

Each test starts a fake model server (tests/fakes/) on 127.0.0.1, points the driver at it
through Django settings (GATEHOUSE_AGENT_ENV_VALUES, GATEHOUSE_CLAUDE_BIN, GATEHOUSE_CODEX_*),
starts a run with POST /api/v1/runs/, decides through the approvals API, and checks what
the timeline recorded and what the model was told. The scenarios shared by both drivers
are parametrized over `agent`; questions and plan review are per driver.

Without a CLI these tests skip, unless GATEHOUSE_REQUIRE_AGENTS=1 (CI), which fails them.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval
from tests.drivers.e2e import approval_for, approval_status, finished, start, steps_of, timeline
from tests.drivers.test_claude_code import CLAUDE_BIN, QUESTIONS, processes_in
from tests.drivers.test_codex import _codex_bin
from tests.fakes import anthropic_server as anthropic
from tests.fakes import responses_server as responses
from tests.flow import decide, eventually

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agents]



# --- the agent under test -------------------------------------------------------------------


def _require(binary: str | None, what: str) -> str:
    if binary and Path(binary).exists():
        return binary
    message = f"{what} is not installed (run `make agents`)"
    if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
        pytest.fail(message + "; GATEHOUSE_REQUIRE_AGENTS=1 requires it")
    pytest.skip(message)


@dataclass
class Agent:
    """One driver and its scripted fake model, with the same vocabulary for both."""

    driver: str
    server: Any

    def script(self, *turns: Any) -> None:
        self.server.add_turns(*turns)

    def command(self, cmd: str, call_id: str | None = None) -> Any:
        """The model asks to run `cmd` (as the tool call `call_id`, when given)."""
        if self.driver == "claude-code":
            return [anthropic.tool_use("Bash", {"command": cmd, "description": "e2e command"}, id=call_id)]
        return [responses.exec_command(cmd, call_id)]

    def say(self, words: str) -> Any:
        if self.driver == "claude-code":
            return [anthropic.text(words)]
        return [responses.message(words)]

    def tool_results(self) -> list[str]:
        """What the model was sent back for its tool calls, in order."""
        if self.driver == "claude-code":
            return [r["text"] for r in self.server.tool_results()]
        return list(self.server.tool_outputs().values())

    def was_told(self, words: str) -> bool:
        """Whether `words` reached the model after its first request (a tool result, or
        any other input item the driver used to pass it on)."""
        if self.driver == "claude-code":
            return any(words in r["text"] for r in self.server.tool_results())
        with self.server._lock:
            later = list(self.server.requests[1:])
        return words in json.dumps(later)


def claude_agent(settings: Any) -> Iterator[Agent]:
    binary = _require(str(CLAUDE_BIN), f"the Claude Code CLI ({CLAUDE_BIN})")
    with anthropic.FakeAnthropicServer() as server:
        settings.GATEHOUSE_CLAUDE_BIN = binary
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "dummy"}
        yield Agent("claude-code", server)


def codex_agent(settings: Any) -> Iterator[Agent]:
    binary = _require(_codex_bin(), "the Codex CLI (or set GATEHOUSE_CODEX_BIN)")
    with responses.FakeResponsesServer() as server:
        settings.GATEHOUSE_CODEX_BIN = binary
        settings.GATEHOUSE_CODEX_BASE_URL = server.base_url
        settings.GATEHOUSE_CODEX_MODEL = "fake-model"
        settings.GATEHOUSE_CODEX_ENV_KEY = "FAKE_CODEX_API_KEY"
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"FAKE_CODEX_API_KEY": "dummy-key"}
        yield Agent("codex", server)


@pytest.fixture(params=["claude-code", "codex"])
def agent(request: Any, settings: Any) -> Iterator[Agent]:
    yield from (claude_agent if request.param == "claude-code" else codex_agent)(settings)


@pytest.fixture
def claude(settings: Any) -> Iterator[Agent]:
    yield from claude_agent(settings)


@pytest.fixture
def codex(settings: Any) -> Iterator[Agent]:
    yield from codex_agent(settings)


# --- helpers -------------------------------------------------------------------------------


async def plan_session(api: Any) -> int:
    """A session in plan interaction mode, set through the API before its first run."""
    from runs.services import session_create

    session = await sync_to_async(session_create)(title="e2e plan")
    response = await sync_to_async(api.patch)(f"/api/v1/sessions/{session.pk}/", {"interaction_mode": "plan"}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["interaction_mode"] == "plan"
    return session.pk


def assert_no_agent_settings(workspace: Path) -> None:
    assert not list(workspace.glob(".claude/settings*.json")), "Claude Code settings were written into the workspace"
    assert not (workspace / ".claude").exists()
    assert not (workspace / ".codex").exists(), "Codex config was written into the workspace"


AGENT_NAMES = (b"claude", b"codex")


def agent_processes(workspace: Path) -> list[int]:
    """Live agent CLI processes (claude, codex and its node wrapper) running in the workspace.

    Only the CLI itself: a command the agent ran may leave detached descendants of its own
    (Codex runs commands through `bash -lc`, so a login profile's background job such as
    `pyenv rehash` can outlive the run); those are the command's, not the agent's."""
    found = []
    for pid in processes_in(workspace):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(name in Path(os.fsdecode(arg)).name.encode() for arg in argv[:2] for name in AGENT_NAMES):
            found.append(pid)
    return found


async def no_agent_processes(workspace: Path) -> None:
    await eventually(lambda: agent_processes(workspace) == [], timeout=15)


def kill_agent(workspace: Path) -> int:
    """SIGKILL the process group of every agent CLI process running in the workspace."""
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


# --- 1. an allowed command runs, and its output reaches the timeline ------------------------


async def test_allowed_command_runs_and_its_output_reaches_the_timeline(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    marker = f"e2e-output-{agent.driver}"
    call_id = f"call_e2e_{agent.driver.replace('-', '_')}_1" if agent.driver != "claude-code" else "toolu_e2e_output_1"
    agent.script(agent.command(f"echo {marker}", call_id), agent.say("All done."))
    run = await start(api, agent, workspace, policy=review_all)

    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "permission"
    # the agent's own id of the call (issue 30.6): on the approval, filterable, and on its tool.requested activity
    assert approval["tool_call_id"] == call_id
    found = await sync_to_async(api.get)(f"/api/v1/approvals/?tool_call_id={call_id}")
    assert [a["id"] for a in found.json()["results"]] == [approval["id"]]
    assert approval["request"]["tool"] == "bash" and approval["request"]["input"] == {"command": f"echo {marker}"}
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    events = await timeline(api, run["id"])
    [tool_finished] = [a for a in events if a["event"] == "tool.finished"]
    assert marker in tool_finished["payload"]["output"] and tool_finished["payload"]["exit_code"] == 0
    assert [a["payload"]["tool_call_id"] for a in events if a["event"] == "tool.requested"] == [call_id]
    # one vocabulary for every agent's turns, the start recording the modes in force (issue 30.7)
    [turn] = [a for a in events if a["event"] == "turn.started"]
    assert (turn["payload"]["runtime_mode"], turn["payload"]["interaction_mode"]) == ("approval-required", "default")
    assert any(a["event"] == "turn.completed" for a in events)
    assert any(a["event"] == "message" and a["payload"]["text"] == "All done." for a in events)
    [step] = await sync_to_async(steps_of)(run["id"])
    assert (step.status, step.decided_by) == ("finished", "api")
    assert any(marker in text for text in agent.tool_results())
    await no_agent_processes(workspace)


# --- 2. a denied command does not run; the agent gets the reason; the run policy decides ---


async def test_denied_command_does_not_run_and_the_agent_gets_the_reason(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    agent.script(agent.command("touch should-not-exist.txt"), agent.say("Understood, I will not."))
    run = await start(api, agent, workspace, policy=review_all, run_policy={"approvals": {"on_reject": "continue"}})

    approval = await approval_for(api, run["id"])
    reason = "no touching files on a Friday"
    assert (await decide(api, approval, "deny", reason=reason)).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert not (workspace / "should-not-exist.txt").exists()
    assert agent.was_told(reason), f"the model was not told the reviewer's reason; it got {agent.tool_results()!r}"
    [step] = await sync_to_async(steps_of)(run["id"])
    assert step.status == "denied"
    events = await timeline(api, run["id"])
    assert not [a for a in events if a["event"] == "tool.finished"]


@pytest.mark.smoke
async def test_the_policy_allows_one_command_and_denies_another_with_nobody_asked(
    api: Any, worker: Any, agent: Agent, workspace: Path
) -> None:
    """The real CLI meets the rule policy itself (issue 31): an allowed command runs, a
    denied one never does and the model reads the rule's reason; no person is asked."""
    from approvals.models import Policy
    from approvals.services import policy_save

    reason = "No deleting trees in this repository."
    await sync_to_async(policy_save)(policy=Policy(name="allow-echo-deny-rm", document={
        "commands": {"allow": ["echo"], "deny": [{"match": "rm -rf", "reason": reason}]}, "default": "ask"}))
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.txt").write_text("kept")
    marker = f"policy-allowed-{agent.driver}"
    agent.script(agent.command(f"echo {marker}"), agent.command("rm -rf build"), agent.say("Done."))
    run = await start(api, agent, workspace, policy="allow-echo-deny-rm")

    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, await timeline(api, run["id"]))
    assert (workspace / "build" / "keep.txt").read_text() == "kept"
    assert agent.was_told(reason), f"the model was not told the rule's reason; it got {agent.tool_results()!r}"
    steps = await sync_to_async(steps_of)(run["id"])
    assert [(s.status, s.verdict, s.rule, s.decided_by) for s in steps] == [
        ("finished", "allow", "commands.allow[0]", "policy"), ("denied", "deny", "commands.deny[0]", "policy")]
    events = await timeline(api, run["id"])
    assert any(marker in a["payload"].get("output", "") for a in events if a["event"] == "tool.finished")
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
    [step] = await sync_to_async(steps_of)(run["id"])
    assert step.status == "aborted"
    await no_agent_processes(workspace)


# --- 3. always allow: a grant in Gatehouse, never a file in the workspace -------------------


async def test_always_allow_is_not_asked_again_in_the_next_run_of_the_session(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    command = "echo granted-e2e"
    agent.script(agent.command(command), agent.say("First run done."))
    first = await start(api, agent, workspace, policy=review_all)
    approval = await approval_for(api, first["id"])
    assert approval["suggested_grant"] == {"tool": "bash", "match": command}
    assert (await decide(api, approval, "approve", scope="session")).status_code == HTTPStatus.OK
    assert (await finished(first["id"])).status == "completed"

    grants = (await sync_to_async(api.get)(f"/api/v1/sessions/{first['session']}/grants/")).json()
    assert [g["rule"] for g in grants] == [{"tool": "bash", "match": command}]

    agent.script(agent.command(command), agent.say("Second run done."))
    second = await start(api, agent, workspace, policy=review_all, session=first["session"])
    done = await finished(second["id"])
    assert done.status == "completed", done.failure_reason

    assert not await sync_to_async(lambda: Approval.objects.filter(run_id=second["id"]).exists())()
    [step] = await sync_to_async(steps_of)(second["id"])
    assert (step.status, step.decided_by, step.grant_id) == ("finished", "grant", grants[0]["id"])
    assert "granted-e2e" in step.output
    assert_no_agent_settings(workspace)
    if agent.driver == "codex":
        # The grant is Gatehouse's (the reply was a plain accept): no execpolicy rule persisted.
        from django.conf import settings

        for run in (first, second):
            assert not (settings.GATEHOUSE_RUNTIME_DIR / f"session-{run['session']}" / "codex-home" / "rules").exists()


# --- 4. questions ----------------------------------------------------------------------------

CLAUDE_QUESTIONS = QUESTIONS


async def test_claude_question_is_answered(api: Any, worker: Any, claude: Agent, workspace: Path) -> None:
    claude.script([anthropic.tool_use("AskUserQuestion", CLAUDE_QUESTIONS)], claude.say("Thanks for the answers."))
    run = await start(api, claude, workspace, run_policy={"approvals": {"question": "ask"}})

    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "question"
    assert [q["id"] for q in approval["presentation"]["questions"]] == ["database", "features"]
    response = await decide(api, approval, "answer", answers={"database": ["SQLite"], "features": ["Auth", "Export"]})
    assert response.status_code == HTTPStatus.OK, response.content

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    [answer] = claude.server.tool_results()
    assert not answer["is_error"]
    assert '"Which database should we use?"="SQLite"' in answer["text"]
    assert '"Which features do you want?"="Auth, Export"' in answer["text"]
    events = await timeline(api, run["id"])
    assert any(a["event"] == "user-input.resolved" for a in events)


CODEX_QUESTIONS = [
    {
        "id": "color",
        "header": "Color",
        "question": "Which color should I use?",
        "options": [{"label": "Red (Recommended)", "description": "warm"}, {"label": "Blue", "description": "cool"}],
    }
]


async def test_codex_plan_mode_question_is_answered(api: Any, worker: Any, codex: Agent, workspace: Path) -> None:
    codex.script([responses.request_user_input(CODEX_QUESTIONS, call_id="call_ask")], codex.say("Blue it is."))
    session = await plan_session(api)
    run = await start(api, codex, workspace, session=session, run_policy={"approvals": {"question": "ask"}})

    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "question"
    [question] = approval["presentation"]["questions"]
    assert question["id"] == "color"
    response = await decide(api, approval, "answer", answers={"color": ["Blue"]})
    assert response.status_code == HTTPStatus.OK, response.content

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert json.loads(codex.server.tool_output("call_ask")) == {"answers": {"color": {"answers": ["Blue"]}}}


async def test_codex_secret_question_reaches_the_model_and_is_never_kept(
    api: Any, worker: Any, codex: Agent, workspace: Path
) -> None:
    """A Codex question marked secret (issue 30.1): answered in the console's password field or
    the API, passed to the model, and nowhere in Gatehouse's record; a choice may carry the
    reviewer's own words."""
    secret = "hunter2-deploy-token"
    questions = [{"id": "token", "header": "Token", "question": "Deploy token?", "isSecret": True, "isOther": True,
                  "options": [{"label": "None", "description": "deploy without one"}]},
                 {"id": "why", "header": "Why", "question": "Why deploy now?", "isOther": True,
                  "options": [{"label": "Release", "description": "it is release day"}]}]
    codex.script([responses.request_user_input(questions, call_id="call_secret")], codex.say("Thanks."))
    session = await plan_session(api)
    run = await start(api, codex, workspace, session=session, run_policy={"approvals": {"question": "ask"}})
    approval = await approval_for(api, run["id"])
    assert [q.get("secret", False) for q in approval["presentation"]["questions"]] == [True, False]
    response = await decide(api, approval, "answer", answers={"why": ["Release"]}, other={"token": secret, "why": "on time"})
    assert response.status_code == HTTPStatus.OK, response.content
    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert json.loads(codex.server.tool_output("call_secret")) == {
        "answers": {"token": {"answers": [secret]}, "why": {"answers": ["Release", "on time"]}}}
    kept = json.dumps(await timeline(api, run["id"])) + json.dumps(
        (await sync_to_async(api.get)(f"/api/v1/approvals/{approval['id']}/")).json())
    assert secret not in kept and "[secret]" in kept


# --- 5. plan review (Claude) -----------------------------------------------------------------


async def test_claude_plan_approved_then_implemented(api: Any, worker: Any, claude: Agent, workspace: Path) -> None:
    out = workspace.resolve() / "planned.txt"
    claude.script(
        [anthropic.text("Here is my plan."), anthropic.tool_use("ExitPlanMode", {"plan": "## Plan\n1. Write planned.txt"})],
        [anthropic.tool_use("Write", {"file_path": str(out), "content": "planned\n"})],
        claude.say("Implemented."),
    )
    session = await plan_session(api)
    run = await start(api, claude, workspace, session=session)

    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "plan_review"
    assert approval["presentation"]["plan"] == "## Plan\n1. Write planned.txt"
    assert (await decide(api, approval, "approve", mode="accept-edits")).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert out.read_text() == "planned\n"
    assert any("approved your plan" in text for text in claude.tool_results())
    steps = await sync_to_async(steps_of)(run["id"])
    assert [(s.kind, s.tool, s.status) for s in steps] == [("plan_review", "ExitPlanMode", "answered"), ("permission", "write", "finished")]
    assert not list(workspace.glob(".claude/settings*.json"))


async def test_claude_plan_rejected_with_feedback(api: Any, worker: Any, claude: Agent, workspace: Path) -> None:
    claude.script(
        [anthropic.tool_use("ExitPlanMode", {"plan": "## Plan\n1. Ship it"})],
        claude.say("I will revise the plan."),
    )
    session = await plan_session(api)
    run = await start(api, claude, workspace, session=session, run_policy={"approvals": {"on_reject": "continue"}})

    approval = await approval_for(api, run["id"])
    assert approval["kind"] == "plan_review"
    feedback = "please add tests to the plan first"
    assert (await decide(api, approval, "deny", reason=feedback)).status_code == HTTPStatus.OK

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    [rejected] = claude.server.tool_results()
    assert rejected["is_error"] and feedback in rejected["text"]


# --- 6. cancel while an approval is pending --------------------------------------------------


async def test_cancel_while_an_approval_is_pending(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    agent.script(agent.command("touch never.txt"), agent.say("unreachable"))
    run = await start(api, agent, workspace, policy=review_all)
    approval = await approval_for(api, run["id"])
    assert agent_processes(workspace), "the CLI should be running while the approval is pending"

    response = await sync_to_async(api.post)(f"/api/v1/runs/{run['id']}/cancel/")
    assert response.status_code == HTTPStatus.OK, response.content

    done = await finished(run["id"])
    assert done.status == "cancelled"
    assert await approval_status(api, approval["id"]) != "pending"
    late = await decide(api, approval, "approve")
    assert late.status_code >= 400
    assert not (workspace / "never.txt").exists()
    await no_agent_processes(workspace)


# --- 7. timeout with on_timeout continue -----------------------------------------------------


async def test_timeout_with_continue_tells_the_agent_and_completes(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    agent.script(agent.command("touch too-late.txt"), agent.say("Nobody answered; moving on."))
    run = await start(
        api, agent, workspace, policy=review_all, run_policy={"approvals": {"timeout_s": 1, "on_timeout": "continue"}}
    )

    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    assert not (workspace / "too-late.txt").exists()
    [approval] = await sync_to_async(lambda: list(Approval.objects.filter(run_id=run["id"])))()
    assert (approval.status, approval.decided_via) == ("expired", "timeout")
    assert agent.was_told("No reviewer answered within 1 s"), f"the model got {agent.tool_results()!r}"


# --- 8. the CLI killed mid-run ---------------------------------------------------------------


async def test_cli_killed_mid_run_fails_the_run_and_the_worker_goes_on(
    api: Any, worker: Any, agent: Agent, workspace: Path, review_all: str
) -> None:
    from tests.flow import start_run

    agent.script(agent.command("touch after-kill.txt"), agent.say("unreachable"))
    run = await start(api, agent, workspace, policy=review_all)
    approval = await approval_for(api, run["id"])  # the CLI is blocked on our answer
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
