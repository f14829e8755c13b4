"""ACP agents and OpenCode hibernate like the others: a run waiting on a person past
GATEHOUSE_HIBERNATE_AFTER_S sleeps with no agent process, and the decision wakes it —
claude-code-acp and opencode acp through `session/load`, OpenCode by continuing its
session — with the approved command run exactly once, or the denial's reason read."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Policy
from runs.models import Run, Step
from tests.drivers.e2e import start
from tests.drivers.test_acp_e2e import Agent, agent, agent_processes  # noqa: F401  (fixtures)
from tests.flow import decide, eventually, pending_approval

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agents]

TIMEOUT = 90
ASK_TOUCH = {"commands": {"ask": ["touch"]}, "default": "allow"}


@pytest.fixture(autouse=True)
def quick_sleep(settings: Any) -> None:
    settings.GATEHOUSE_HIBERNATE_AFTER_S = 0.5


@pytest.fixture
def ask_touch(db: Any) -> str:
    Policy.objects.create(name="ask-touch", document=ASK_TOUCH)
    return "ask-touch"


async def asleep(run_id: int, worker: Any, where: Path) -> None:
    row = await eventually(lambda: Run.objects.filter(pk=run_id, hibernated_at__isnull=False).first(), timeout=TIMEOUT)
    await eventually(lambda: run_id not in worker.tasks or worker.tasks[run_id].done(), timeout=TIMEOUT)
    assert row.status == "waiting" and row.owner == ""
    await eventually(lambda: agent_processes(where) == [], timeout=20)


async def done(run_id: int) -> Run:
    return await eventually(lambda: Run.objects.filter(pk=run_id, status__in=Run.FINISHED).first(), timeout=TIMEOUT)


async def test_a_sleeping_agent_wakes_to_run_the_approved_command_once(
    api: Any, worker: Any, agent: Agent, workspace: Path, ask_touch: str  # noqa: F811
) -> None:
    agent.script(agent.command("echo x | tee -a log.txt"), agent.command("touch b.txt"))
    run = await start(api, agent, workspace, policy=ask_touch, run_policy={"approvals": {"timeout_s": 600}})
    approval = await pending_approval(api, run["id"], timeout=TIMEOUT)
    assert agent_processes(workspace), "the agent runs while the run is awake"
    await asleep(run["id"], worker, workspace)

    agent.script(agent.command("touch b.txt"), agent.say("Both done."))  # re-issued after the resume
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
    finished = await done(run["id"])
    assert finished.status == "completed", (finished.failure_reason, finished.failure_detail)
    assert (workspace / "log.txt").read_text() == "x\n"
    assert (workspace / "b.txt").exists()
    steps = await sync_to_async(lambda: list(Step.objects.filter(run_id=run["id"]).order_by("seq").values_list("status", flat=True)))()
    assert steps == ["finished", "finished"]
    assert agent.was_told("Gatehouse restarted while you were working")
    await eventually(lambda: agent_processes(workspace) == [], timeout=20)


async def test_a_sleeping_agent_woken_by_a_denial_reads_the_reason(
    api: Any, worker: Any, agent: Agent, workspace: Path, ask_touch: str  # noqa: F811
) -> None:
    agent.script(agent.command("touch b.txt"))
    run = await start(api, agent, workspace, policy=ask_touch, run_policy={"approvals": {"timeout_s": 600, "on_reject": "continue"}})
    approval = await pending_approval(api, run["id"], timeout=TIMEOUT)
    await asleep(run["id"], worker, workspace)
    agent.script(agent.command("touch b.txt"), agent.say("Understood."), agent.say("Understood."))
    await decide(api, approval, "deny", reason="wait for the release branch")
    finished = await done(run["id"])
    assert finished.status == "completed", finished.failure_reason
    assert not (workspace / "b.txt").exists()
    assert agent.was_told("wait for the release branch")
