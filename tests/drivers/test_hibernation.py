"""A run waiting on a person costs a row, not a process: it hibernates and the decision wakes it.

Through the API and the real worker (the `worker` fixture), with a short
GATEHOUSE_HIBERNATE_AFTER_S. The scripted driver hibernates like the real agents (it is
replayed from the record when it wakes); the real Claude Code and Codex CLIs resume their
own conversations.
"""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval, Policy
from runs.models import Activity, Run, Step
from tests.drivers.test_agents_e2e import Agent, agent  # noqa: F401  (fixtures)
from tests.drivers.test_claude_code import processes_in
from tests.flow import decide, eventually, pending_approval, reconcile_rounds, start_run, watch

pytestmark = [pytest.mark.django_db(transaction=True)]

ASK_TOUCH = {"commands": {"ask": ["touch"]}, "default": "allow"}
QUESTION = {"questions": [{"id": "color", "header": "Color", "question": "Which color?",
                           "options": [{"label": "Red"}, {"label": "Blue"}], "multi_select": False, "allow_other": False}]}
TIMEOUT = 60
HIBERNATE_AFTER_S = 0.5


@pytest.fixture(autouse=True)
def quick_sleep(settings: Any) -> None:
    settings.GATEHOUSE_HIBERNATE_AFTER_S = HIBERNATE_AFTER_S


@pytest.fixture
def ask_touch(db: Any) -> str:
    Policy.objects.create(name="ask-touch", document=ASK_TOUCH)
    return "ask-touch"


def events_of(run_id: int) -> list[str]:
    return list(Activity.objects.filter(run_id=run_id).order_by("seq").values_list("event", flat=True))


async def asleep(run_id: int, worker: Any) -> Run:
    row = await eventually(lambda: Run.objects.filter(pk=run_id, hibernated_at__isnull=False).first(), timeout=TIMEOUT)
    await eventually(lambda: run_id not in worker.tasks or worker.tasks[run_id].done(), timeout=TIMEOUT)
    assert row.status == "waiting" and row.owner == ""
    assert run_id not in worker.contexts  # the worker holds nothing for a sleeping run
    return row


async def done(run_id: int) -> Run:
    return await eventually(lambda: Run.objects.filter(pk=run_id, status__in=Run.FINISHED).first(), timeout=TIMEOUT)


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": command}}


async def test_a_waiting_scripted_run_sleeps_and_the_approval_wakes_it(api: Any, worker: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [bash("echo x | tee -a log.txt"), bash("touch b.txt"), {"message": "done"}]},
                          policy=ask_touch)
    approval = await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    # Still decidable exactly as before: same approval, same hash.
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
    finished = await done(run["id"])
    assert finished.status == "completed", finished.failure_reason
    where = Path(run["workspace"])
    assert (where / "log.txt").read_text() == "x\n" and (where / "b.txt").exists()
    events = await sync_to_async(events_of)(run["id"])
    assert events.count("run.hibernated") == 1 and events.count("run.woke") == 1
    assert events.index("run.hibernated") < events.index("run.woke")
    assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1


async def test_a_denial_while_asleep_reaches_the_agent(api: Any, worker: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [bash("touch b.txt")]}, policy=ask_touch,
                          run_policy={"approvals": {"on_reject": "continue"}})
    approval = await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    await decide(api, approval, "deny", reason="not on a Friday")
    finished = await done(run["id"])
    assert finished.status == "completed"
    said = await sync_to_async(lambda: [a.payload["text"] for a in Activity.objects.filter(run_id=run["id"], event="message")])()
    assert said == ["The request was refused: not on a Friday"]
    assert not (Path(run["workspace"]) / "b.txt").exists()


async def test_a_question_answered_while_asleep(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"question": QUESTION}]}, run_policy={"approvals": {"question": "ask"}})
    question = await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    assert (await decide(api, question, "answer", answers={"color": ["Red"]})).status_code == HTTPStatus.OK
    assert (await done(run["id"])).status == "completed"
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert (step.status, step.answers) == ("answered", {"color": ["Red"]})


async def test_cancelling_a_sleeping_run_ends_it(api: Any, worker: Any, ask_touch: str) -> None:
    run = await start_run(api, {"steps": [bash("touch b.txt")]}, policy=ask_touch)
    approval = await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    assert (await sync_to_async(api.post)(f"/api/v1/runs/{run['id']}/cancel/")).status_code == HTTPStatus.OK
    assert (await done(run["id"])).status == "cancelled"
    late = await decide(api, approval, "approve")
    assert late.json()["code"] == "expired"


async def test_the_deadline_passing_while_asleep_wakes_the_run_for_its_fallback(
    api: Any, worker: Any, ask_touch: str, clock: Any
) -> None:
    run = await start_run(api, {"steps": [bash("touch b.txt")]}, policy=ask_touch,
                          run_policy={"approvals": {"timeout_s": 300, "on_timeout": "abort"}})
    await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    clock.advance(301)
    finished = await done(run["id"])
    assert (finished.status, finished.failure_reason) == ("failed", "approval_timeout")


async def test_without_a_decision_a_sleeping_run_stays_asleep(api: Any, worker: Any, ask_touch: str, settings: Any) -> None:

    run = await start_run(api, {"steps": [bash("touch b.txt")]}, policy=ask_touch)
    await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    await reconcile_rounds(worker, 3)  # the worker looked for runs to wake three times
    assert (await sync_to_async(events_of)(run["id"])).count("run.hibernated") == 1
    assert run["id"] not in worker.tasks or worker.tasks[run["id"]].done()


async def test_hibernation_can_be_switched_off(api: Any, worker: Any, ask_touch: str, settings: Any, monkeypatch: Any) -> None:
    from drivers import runcontext

    settings.GATEHOUSE_HIBERNATE_AFTER_S = 0
    rounds = watch(monkeypatch, runcontext, "_deadline_in")  # each round of the run's wait on the person
    run = await start_run(api, {"steps": [bash("touch b.txt")]}, policy=ask_touch)
    approval = await pending_approval(api, run["id"])

    def past_the_point() -> bool:
        # A round of the wait began HIBERNATE_AFTER_S after its first (so after the wait
        # began): with hibernation on, the run would have gone to sleep there; one round
        # more says it did not (a hibernating run waits no more rounds).
        times = [at for at, _ in rounds.matching(approval["id"])]
        return any(later - times[0] >= HIBERNATE_AFTER_S for later in times[:-1])

    await eventually(past_the_point, timeout=TIMEOUT)
    assert "run.hibernated" not in await sync_to_async(events_of)(run["id"])
    await decide(api, approval, "approve")
    assert (await done(run["id"])).status == "completed"


# --- the real agents ------------------------------------------------------------------------------


@pytest.mark.agents
async def test_a_sleeping_agent_has_no_process_and_wakes_to_run_the_approved_command_once(
    api: Any, worker: Any, agent: Agent, workspace: Path, ask_touch: str  # noqa: F811
) -> None:
    agent.script(agent.command("echo x | tee -a log.txt"), agent.command("touch b.txt"))
    response = await sync_to_async(api.post)("/api/v1/runs/", {
        "driver": agent.driver, "prompt": "Append, then touch.", "workspace": str(workspace), "policy": ask_touch,
        "run_policy": {"approvals": {"timeout_s": 600}}}, format="json")
    run = response.json()
    approval = await pending_approval(api, run["id"], timeout=TIMEOUT)
    assert processes_in(workspace), "the agent runs while the run is awake"
    await asleep(run["id"], worker)
    await eventually(lambda: not processes_in(workspace), timeout=20)

    agent.script(agent.command("touch b.txt"), agent.say("Both done."))  # re-issued after the resume
    assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
    finished = await done(run["id"])
    assert finished.status == "completed", (finished.failure_reason, finished.failure_detail)
    assert (workspace / "log.txt").read_text() == "x\n"
    assert (workspace / "b.txt").exists()
    steps = await sync_to_async(lambda: list(Step.objects.filter(run_id=run["id"]).order_by("seq").values_list("status", flat=True)))()
    assert steps == ["finished", "finished"]
    assert not processes_in(workspace)


@pytest.mark.agents
async def test_a_sleeping_agent_woken_by_a_denial_reads_the_reason(
    api: Any, worker: Any, agent: Agent, workspace: Path, ask_touch: str  # noqa: F811
) -> None:
    agent.script(agent.command("touch b.txt"))
    response = await sync_to_async(api.post)("/api/v1/runs/", {
        "driver": agent.driver, "prompt": "Touch.", "workspace": str(workspace), "policy": ask_touch,
        "run_policy": {"approvals": {"timeout_s": 600, "on_reject": "continue"}}}, format="json")
    run = response.json()
    approval = await pending_approval(api, run["id"], timeout=TIMEOUT)
    await asleep(run["id"], worker)
    await eventually(lambda: not processes_in(workspace), timeout=20)
    agent.script(agent.command("touch b.txt"), agent.say("Understood."))
    await decide(api, approval, "deny", reason="wait for the release branch")
    finished = await done(run["id"])
    assert finished.status == "completed", finished.failure_reason
    assert not (workspace / "b.txt").exists()
    assert agent.was_told("wait for the release branch")


@pytest.mark.agents
async def test_ten_sleeping_claude_runs_hold_no_process_and_all_finish_after_a_bulk_approval(
    api: Any, worker: Any, settings: Any, tmp_path: Path, ask_touch: str
) -> None:
    from tests.drivers.test_agents_e2e import claude_agent
    from tests.fakes import anthropic_server as anthropic

    def touch_then_done(body: dict[str, Any]) -> list[dict[str, Any]]:
        # Ten conversations share one fake model: answer each from its own history.
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content")
        answered = isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        return [anthropic.text("Done.")] if answered else [anthropic.tool_use("Bash", {"command": "touch done.txt", "description": "Touch"})]

    settings.GATEHOUSE_HIBERNATE_AFTER_S = 2
    for claude in claude_agent(settings):
        # Ten runs, each asks once; after the wake each asks again and then finishes.
        claude.script(*[touch_then_done] * 40)
        workspaces = []
        runs = []
        for i in range(10):
            ws = tmp_path / f"ws{i}"
            ws.mkdir()
            workspaces.append(ws)
            response = await sync_to_async(api.post)("/api/v1/runs/", {
                "driver": "claude-code", "prompt": f"Touch {i}.", "workspace": str(ws), "policy": ask_touch,
                "run_policy": {"approvals": {"timeout_s": 600}}}, format="json")
            runs.append(response.json())
        approvals = [await pending_approval(api, r["id"], timeout=TIMEOUT) for r in runs]
        for r in runs:
            await asleep(r["id"], worker)
        await eventually(lambda workspaces=workspaces: not any(processes_in(ws) for ws in workspaces), timeout=30)
        for approval in approvals:
            assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
        for r in runs:
            finished = await eventually(lambda r=r: Run.objects.filter(pk=r["id"], status__in=Run.FINISHED).first(), timeout=120)
            assert finished.status == "completed", (finished.failure_reason, finished.failure_detail)
        assert all((ws / "done.txt").exists() for ws in workspaces)


@pytest.mark.agents
async def test_claude_question_answered_while_asleep(api: Any, worker: Any, settings: Any, workspace: Path) -> None:  # noqa: F811
    from tests.drivers.test_agents_e2e import CLAUDE_QUESTIONS, claude_agent
    from tests.fakes import anthropic_server as anthropic

    for claude in claude_agent(settings):
        claude.script([anthropic.tool_use("AskUserQuestion", CLAUDE_QUESTIONS)])
        response = await sync_to_async(api.post)("/api/v1/runs/", {
            "driver": "claude-code", "prompt": "Ask me.", "workspace": str(workspace),
            "run_policy": {"approvals": {"question": "ask", "timeout_s": 600}}}, format="json")
        run = response.json()
        question = await pending_approval(api, run["id"], timeout=TIMEOUT)
        await asleep(run["id"], worker)
        await eventually(lambda: not processes_in(workspace), timeout=20)
        claude.script([anthropic.tool_use("AskUserQuestion", CLAUDE_QUESTIONS)], claude.say("Thanks for the answers."))
        answers = {"database": ["SQLite"], "features": ["Auth"]}
        assert (await decide(api, question, "answer", answers=answers)).status_code == HTTPStatus.OK
        finished = await done(run["id"])
        assert finished.status == "completed", finished.failure_reason
        assert any('"Which database should we use?"="SQLite"' in r["text"] for r in claude.server.tool_results())
        assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1  # not asked again


@pytest.mark.agents
async def test_a_sleeping_agent_run_is_cancelled(api: Any, worker: Any, agent: Agent, workspace: Path, ask_touch: str) -> None:  # noqa: F811
    agent.script(agent.command("touch b.txt"))
    response = await sync_to_async(api.post)("/api/v1/runs/", {
        "driver": agent.driver, "prompt": "Touch.", "workspace": str(workspace), "policy": ask_touch,
        "run_policy": {"approvals": {"timeout_s": 600}}}, format="json")
    run = response.json()
    await pending_approval(api, run["id"], timeout=TIMEOUT)
    await asleep(run["id"], worker)
    assert (await sync_to_async(api.post)(f"/api/v1/runs/{run['id']}/cancel/")).status_code == HTTPStatus.OK
    assert (await done(run["id"])).status == "cancelled"
    assert not (workspace / "b.txt").exists()
    assert not processes_in(workspace)


@pytest.mark.agents
async def test_a_sleeping_run_survives_its_worker_and_another_worker_wakes_it(
    api: Any, worker: Any, agent: Agent, workspace: Path, ask_touch: str  # noqa: F811
) -> None:
    """The worker that put the run to sleep dies; the decision is made meanwhile; another
    worker wakes the run (a sleeping run holds no lease: there is nothing to take over)."""
    from drivers.worker import Supervisor

    agent.script(agent.command("touch b.txt"))
    response = await sync_to_async(api.post)("/api/v1/runs/", {
        "driver": agent.driver, "prompt": "Touch.", "workspace": str(workspace), "policy": ask_touch,
        "run_policy": {"approvals": {"timeout_s": 600}}}, format="json")
    run = response.json()
    approval = await pending_approval(api, run["id"], timeout=TIMEOUT)
    await asleep(run["id"], worker)
    worker._background.cancel()  # the worker is gone: no reconcile, and its doorbell goes nowhere

    async def gone(run_id: int) -> bool:
        return False

    worker.start_run = gone
    agent.script(agent.command("touch b.txt"), agent.say("Done."))
    await decide(api, approval, "approve")
    other = Supervisor()
    await other.reconcile()
    assert run["id"] in other.tasks  # the other worker woke it
    finished = await done(run["id"])
    assert finished.status == "completed", finished.failure_reason
    assert (workspace / "b.txt").exists()
    import asyncio

    await asyncio.gather(*other.tasks.values(), return_exceptions=True)


async def test_the_console_says_a_run_is_asleep(api: Any, worker: Any, ask_touch: str, client: Any, reviewer: Any) -> None:
    run = await start_run(api, {"steps": [bash("touch b.txt")]}, policy=ask_touch)
    await pending_approval(api, run["id"])
    await asleep(run["id"], worker)
    await sync_to_async(client.force_login)(reviewer)
    page = await sync_to_async(client.get)(f"/runs/{run['id']}/")
    assert "asleep, wakes on your decision" in page.content.decode()
    inbox = await sync_to_async(client.get)("/")
    assert "agent asleep, wakes on your decision" in inbox.content.decode()
