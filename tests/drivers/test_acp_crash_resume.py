"""The ACP agents and OpenCode after a SIGKILL, as Claude Code and Codex (test_crash_resume.py).

`manage.py serve` runs the worker against this test's database with a real agent
(claude-code-acp, `opencode acp`, or `opencode serve`) and its fake model server (which
lives in the test, so it outlives the killed server). The server is SIGKILLed at the two
moments that matter, a second one takes the run over (its lease), and the run must end
as if nothing had happened:

* while a request waits on a person: the agent's own session is continued (`session/load`,
  OpenCode's kept session), the decision taken after the crash lets the re-issued request
  run once, and the command that finished before the crash is not run again;
* after an approved command was handed out and before its result was recorded: the step
  is `executing` in the record, so the re-issued request becomes the
  `interrupted_side_effect` question instead of running again unasked; approved, the
  command runs once.
"""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval
from runs.models import Activity, Step
from tests.drivers.e2e import start
from tests.drivers.test_acp_e2e import Agent, agent  # noqa: F401  (fixtures)
from tests.drivers.test_claude_code import processes_in
from tests.drivers.test_crash_resume import APPEND, ask_touch, finished, pending_permission, server  # noqa: F401  (fixtures)
from tests.flow import decide, eventually, pending_approval

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agents]

TIMEOUT = 90
# Approved, it runs until the test lets it go on: the worker is killed in between.
HELD = "touch started.txt && until [ -e go ]; do sleep 0.1; done && echo x | tee -a log.txt"


def server_env(under_test: Agent) -> dict[str, str]:
    """What `serve` needs in its environment to reach the agent's fake model (the tests in
    this process pass the same as Django settings, tests/drivers/test_acp_e2e.py)."""
    values = under_test.settings()
    env = dict(values["env_values"])
    if not under_test.claude:
        env.update(
            {
                "GATEHOUSE_OPENCODE_BIN": values["opencode_bin"],
                "GATEHOUSE_OPENCODE_BASE_URL": values["opencode_base_url"],
                "GATEHOUSE_OPENCODE_MODEL": values["opencode_model"],
                "GATEHOUSE_OPENCODE_ENV_KEY": values["opencode_env_key"],
            }
        )
    return env


async def killed(embedded: Any, workspace: Path) -> None:
    """SIGKILL the server; its agent (and whatever the agent ran) dies with it."""
    embedded.kill()
    await eventually(lambda: not processes_in(workspace), timeout=30)


def steps_of(run_id: int) -> list[tuple[str, str]]:
    return [(s.request["input"].get("command", ""), s.status) for s in Step.objects.filter(run_id=run_id).order_by("seq")]


def approval_kinds(run_id: int) -> list[tuple[str, str]]:
    return list(Approval.objects.filter(run_id=run_id).order_by("id").values_list("kind", "status"))


def events(run_id: int) -> list[str]:
    return list(Activity.objects.filter(run_id=run_id).values_list("event", flat=True))


async def test_killed_while_a_request_waits_on_a_person(
    api: Any,
    server: Any,  # noqa: F811
    agent: Agent,  # noqa: F811
    workspace: Path,
    ask_touch: str,  # noqa: F811
) -> None:
    agent.script(agent.command(APPEND), agent.command("touch second.txt"))
    env = server_env(agent)
    embedded = server(**env)
    embedded.start()
    run = await start(api, agent, workspace, policy=ask_touch, run_policy={"approvals": {"timeout_s": 600}})
    touch = await pending_permission(run["id"])
    assert (workspace / "log.txt").read_text() == "x\n"

    await killed(embedded, workspace)
    # The continued session's model asks for the call that was waiting again.
    agent.script(agent.command("touch second.txt"), agent.say("Both done."))
    server(**env).start()
    assert (await decide(api, touch, "approve")).status_code == HTTPStatus.OK
    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert (workspace / "log.txt").read_text() == "x\n"  # the finished step did not run again
    assert (workspace / "second.txt").exists()
    assert await sync_to_async(steps_of)(run["id"]) == [(APPEND, "finished"), ("touch second.txt", "finished")]
    assert await sync_to_async(approval_kinds)(run["id"]) == [("permission", "approved")]
    assert agent.was_told("Gatehouse restarted while you were working")  # its own session, continued
    assert "run.resumed" in await sync_to_async(events)(run["id"])


async def test_killed_while_an_approved_command_runs(
    api: Any,
    server: Any,  # noqa: F811
    agent: Agent,  # noqa: F811
    workspace: Path,
    ask_touch: str,  # noqa: F811
) -> None:
    agent.script(agent.command(HELD))
    env = server_env(agent)
    embedded = server(**env)
    embedded.start()
    run = await start(api, agent, workspace, policy=ask_touch, run_policy={"approvals": {"timeout_s": 600}})
    held = await pending_permission(run["id"])
    assert (await decide(api, held, "approve")).status_code == HTTPStatus.OK
    await eventually(lambda: (workspace / "started.txt").exists(), timeout=TIMEOUT)
    assert await sync_to_async(steps_of)(run["id"]) == [(HELD, "executing")]  # handed out, no result yet

    await killed(embedded, workspace)
    assert not (workspace / "log.txt").exists()
    # The continued session's model asks for the interrupted call again.
    agent.script(agent.command(HELD), agent.say("Done."))
    server(**env).start()
    interrupted = await pending_approval(api, run["id"], timeout=TIMEOUT)
    assert interrupted["kind"] == "interrupted_side_effect"  # asked, not run again on its own
    assert not (workspace / "log.txt").exists()
    (workspace / "go").touch()
    assert (await decide(api, interrupted, "approve")).status_code == HTTPStatus.OK
    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert (workspace / "log.txt").read_text() == "x\n"  # ran once, after the person said so
    assert await sync_to_async(steps_of)(run["id"]) == [(HELD, "finished")]
    assert await sync_to_async(approval_kinds)(run["id"]) == [("permission", "approved"), ("interrupted_side_effect", "approved")]
    assert agent.was_told("Gatehouse restarted while you were working")
