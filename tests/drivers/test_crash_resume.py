"""`make run` killed with SIGKILL and started again: nothing runs twice, nothing is lost.

The embedded `serve` process runs the worker against this test's database. A run's first
step (`echo x | tee -a log.txt`, allowed by the policy) finishes, its second waits for a
person; `serve` is SIGKILLed and started again; the reviewer approves through the API.
`log.txt` must hold one line: the finished step is answered from the record, never re-run.
The same holds for a question answered and a plan approved before the crash, and for the
real Claude Code and Codex CLIs (which resume their own conversations).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval, Policy
from runs.models import Activity, Run, Step
from tests.drivers.test_claude_code import CLAUDE_BIN, processes_in
from tests.drivers.test_codex import _codex_bin
from tests.fakes import anthropic_server as anthropic
from tests.fakes import responses_server as responses
from tests.flow import decide, eventually, pending_approval
from tests.processes import ManagedProcess, child_env, database_url_of_test_db, free_port, manage

pytestmark = [pytest.mark.django_db(transaction=True)]

APPEND = "echo x | tee -a log.txt"
ASK_TOUCH = {"commands": {"ask": ["touch"]}, "default": "allow"}
QUESTION = {"questions": [{"id": "color", "header": "Color", "question": "Which color?",
                           "options": [{"label": "Red"}, {"label": "Blue"}], "multi_select": False, "allow_other": False}]}
TIMEOUT = 60


class EmbeddedServer:
    """`manage.py serve` on this test's database, killed and restarted at will."""

    def __init__(self, tmp_path: Path, **env: Any) -> None:
        self.env = child_env(DATABASE_URL=database_url_of_test_db(), GATEHOUSE_VAR_DIR=tmp_path / "var", **env)
        self.proc: ManagedProcess | None = None

    def start(self) -> None:
        self.proc = manage(["serve", "--no-demo", "--host", "127.0.0.1", "--port", str(free_port())], self.env)
        self.proc.wait_for_line("Login link: ")

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.proc.pid, signal.SIGKILL)
        self.proc.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Any]:
    servers: list[EmbeddedServer] = []

    def make(**env: Any) -> EmbeddedServer:
        servers.append(EmbeddedServer(tmp_path, **env))
        return servers[-1]

    yield make
    for embedded in servers:
        embedded.stop()


@pytest.fixture
def ask_touch(db: Any) -> str:
    Policy.objects.create(name="ask-touch", document=ASK_TOUCH)
    return "ask-touch"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


async def start_run(api: Any, **body: Any) -> dict[str, Any]:
    response = await sync_to_async(api.post)("/api/v1/runs/", body, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    return response.json()


async def pending_permission(run_id: int) -> dict[str, Any]:
    return await eventually(
        lambda: Approval.objects.filter(run_id=run_id, status="pending", kind="permission").values("id", "hash").first(),
        timeout=TIMEOUT,
    )


async def finished(run_id: int) -> Run:
    return await eventually(
        lambda: Run.objects.filter(pk=run_id, status__in=["completed", "failed", "cancelled"]).first(), timeout=TIMEOUT
    )


def wait_gone(workspace: Path, timeout: float = 30) -> None:
    """The dead server's agent process (stdin closed) has exited."""
    deadline = time.monotonic() + timeout
    while processes_in(workspace) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_in(workspace), "the agent of the killed server is still running"


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "input": {"command": command}}


BEFORE_THE_CRASH = {
    "command": [],
    "question": [{"question": QUESTION}],
    "plan": [{"plan": "# Plan\n1. Append, then touch."}],
}


@pytest.mark.parametrize("before", sorted(BEFORE_THE_CRASH))
async def test_scripted_run_after_sigkill_repeats_nothing(api: Any, server: Any, ask_touch: str, workspace: Path, before: str) -> None:
    embedded = server()
    embedded.start()
    scenario = {"steps": [*BEFORE_THE_CRASH[before], bash(APPEND), bash("touch second.txt"), {"message": "done"}]}
    run = await start_run(api, driver="scripted", prompt="crash", scenario=scenario, policy=ask_touch,
                          workspace=str(workspace), run_policy={"approvals": {"question": "ask", "timeout_s": 600}})
    if before == "question":
        question = await pending_approval(api, run["id"], timeout=TIMEOUT)
        assert (await decide(api, question, "answer", answers={"color": ["Blue"]})).status_code == HTTPStatus.OK
    elif before == "plan":
        plan = await pending_approval(api, run["id"], timeout=TIMEOUT)
        assert (await decide(api, plan, "approve", mode="accept-edits")).status_code == HTTPStatus.OK
    touch = await pending_permission(run["id"])
    assert (workspace / "log.txt").read_text() == "x\n"

    embedded.kill()
    server().start()
    assert (await decide(api, touch, "approve")).status_code == HTTPStatus.OK
    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert (workspace / "log.txt").read_text() == "x\n"  # the finished step did not run again
    assert (workspace / "second.txt").exists()
    approvals = await sync_to_async(lambda: list(Approval.objects.filter(run_id=run["id"]).values_list("kind", flat=True)))()
    assert sorted(approvals) == sorted({"command": [], "question": ["question"], "plan": ["plan_review"]}[before] + ["permission"])
    said = await sync_to_async(lambda: [a.payload["text"] for a in Activity.objects.filter(run_id=run["id"], event="message")])()
    assert said == {
        "command": ["done"],
        "question": ["Thanks, I got the answers: {'color': ['Blue']}", "done"],  # answered once, from the record after
        "plan": ["The plan was approved; continuing in accept-edits mode.", "done"],
    }[before]
    events = await sync_to_async(lambda: list(Activity.objects.filter(run_id=run["id"]).values_list("event", flat=True)))()
    assert "run.resumed" in events


def _agent_steps(run_id: int) -> list[tuple[str, str]]:
    return [(s.request["input"].get("command", ""), s.status) for s in Step.objects.filter(run_id=run_id).order_by("seq")]


@pytest.mark.agents
async def test_claude_code_after_sigkill_resumes_its_conversation_and_repeats_nothing(
    api: Any, server: Any, ask_touch: str, workspace: Path
) -> None:
    if not CLAUDE_BIN.is_file():
        pytest.fail("Claude Code is not installed (make agents)") if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1" else pytest.skip("no Claude Code")
    with anthropic.FakeAnthropicServer() as model:
        model.add_turns(
            [anthropic.tool_use("Bash", {"command": APPEND, "description": "Append to the log"})],
            [anthropic.tool_use("Bash", {"command": "touch second.txt", "description": "Create the second file"})],
        )
        agent_env = {"GATEHOUSE_CLAUDE_BIN": str(CLAUDE_BIN), "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "dummy"}
        embedded = server(**agent_env)
        embedded.start()
        run = await start_run(api, driver="claude-code", prompt="Append, then touch.", policy=ask_touch,
                              workspace=str(workspace), run_policy={"approvals": {"timeout_s": 600}})
        touch = await pending_permission(run["id"])
        assert (workspace / "log.txt").read_text() == "x\n"

        embedded.kill()
        await sync_to_async(wait_gone)(workspace)
        # After `--resume` the model sees the history and asks for the pending call again
        # (its description reworded: the same request all the same).
        model.add_turns(
            [anthropic.tool_use("Bash", {"command": "touch second.txt", "description": "Now create the second file"})],
            [anthropic.text("Both done.")],
        )
        server(**agent_env).start()
        assert (await decide(api, touch, "approve")).status_code == HTTPStatus.OK
        done = await finished(run["id"])
        assert done.status == "completed", (done.failure_reason, done.failure_detail)
        assert (workspace / "log.txt").read_text() == "x\n"
        assert (workspace / "second.txt").exists()
        assert await sync_to_async(_agent_steps)(run["id"]) == [(APPEND, "finished"), ("touch second.txt", "finished")]
        assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1
        resumed_with = model.message_requests[-2]["messages"]
        assert any("Gatehouse restarted" in str(m.get("content")) for m in resumed_with)
        assert any("x" in r["text"] for r in model.tool_results())  # the history came back with the agent


@pytest.mark.agents
async def test_codex_after_sigkill_resumes_its_thread_and_repeats_nothing(
    api: Any, server: Any, ask_touch: str, workspace: Path
) -> None:
    binary = _codex_bin()
    if binary is None:
        pytest.fail("Codex is not installed (make agents)") if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1" else pytest.skip("no Codex")
    with responses.FakeResponsesServer() as model:
        model.add_turns([responses.exec_command(APPEND)], [responses.exec_command("touch second.txt")])
        agent_env = {
            "GATEHOUSE_CODEX_BIN": binary, "GATEHOUSE_CODEX_BASE_URL": model.base_url, "GATEHOUSE_CODEX_MODEL": "fake-model",
            "GATEHOUSE_CODEX_ENV_KEY": "FAKE_CODEX_KEY", "FAKE_CODEX_KEY": "dummy-key",
        }
        embedded = server(**agent_env)
        embedded.start()
        run = await start_run(api, driver="codex", prompt="Append, then touch.", policy=ask_touch,
                              workspace=str(workspace), run_policy={"approvals": {"timeout_s": 600}})
        touch = await pending_permission(run["id"])
        assert (workspace / "log.txt").read_text() == "x\n"

        embedded.kill()
        await sync_to_async(wait_gone)(workspace)
        model.add_turns([responses.exec_command("touch second.txt")], [responses.message("Both done.")])
        server(**agent_env).start()
        assert (await decide(api, touch, "approve")).status_code == HTTPStatus.OK
        done = await finished(run["id"])
        assert done.status == "completed", (done.failure_reason, done.failure_detail)
        assert (workspace / "log.txt").read_text() == "x\n"
        assert (workspace / "second.txt").exists()
        assert await sync_to_async(_agent_steps)(run["id"]) == [(APPEND, "finished"), ("touch second.txt", "finished")]
        assert await sync_to_async(Approval.objects.filter(run_id=run["id"]).count)() == 1
        notices = await sync_to_async(
            lambda: [a.payload.get("text", "") for a in Activity.objects.filter(run_id=run["id"], kind="notice")]
        )()
        assert any(text.startswith("Resumed Codex thread") for text in notices)


@pytest.mark.agents
async def test_claude_code_without_a_transcript_starts_again_and_finished_steps_are_answered_from_the_record(
    api: Any, settings: Any, ask_touch: str, workspace: Path
) -> None:
    """A SIGKILL during the first turn leaves no transcript to resume: the CLI starts from
    the prompt again, and when the model asks for the step that already ran, the gate
    tells it so (with its recorded output) instead of running it a second time."""
    import asyncio

    from drivers.worker import Supervisor

    if not CLAUDE_BIN.is_file():
        pytest.fail("Claude Code is not installed (make agents)") if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1" else pytest.skip("no Claude Code")
    with anthropic.FakeAnthropicServer() as model:
        settings.GATEHOUSE_CLAUDE_BIN = str(CLAUDE_BIN)
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "dummy"}
        model.add_turns(
            [anthropic.tool_use("Bash", {"command": APPEND, "description": "Append"})],
            [anthropic.tool_use("Bash", {"command": "touch second.txt", "description": "Touch"})],
        )
        run = await start_run(api, driver="claude-code", prompt="Append, then touch.", policy=ask_touch,
                              workspace=str(workspace), run_policy={"approvals": {"timeout_s": 600}})
        first = Supervisor()
        assert await first.start_run(run["id"])
        touch = await pending_permission(run["id"])
        first.tasks[run["id"]].cancel()
        await asyncio.gather(*first.tasks.values(), return_exceptions=True)
        await sync_to_async(Run.objects.filter(pk=run["id"]).update)(owner="gone:0:dead", heartbeat_at=None)
        for transcript in (settings.GATEHOUSE_RUNTIME_DIR / f"session-{run['session']}").rglob("projects/*/*.jsonl"):
            transcript.unlink()  # as after a SIGKILL in the first turn

        model.add_turns(
            [anthropic.tool_use("Bash", {"command": APPEND, "description": "Append (again)"})],
            [anthropic.tool_use("Bash", {"command": "touch second.txt", "description": "Touch"})],
            [anthropic.text("Done.")],
        )
        second = Supervisor()
        assert await second.start_run(run["id"])
        assert (await decide(api, touch, "approve")).status_code == HTTPStatus.OK
        done = await finished(run["id"])
        assert done.status == "completed", (done.failure_reason, done.failure_detail)
        assert (workspace / "log.txt").read_text() == "x\n"
        assert (workspace / "second.txt").exists()
        told = [r["text"] for r in model.tool_results()]
        assert any(text.startswith("Already done: this step ran before Gatehouse restarted") and "x" in text for text in told)
        assert await sync_to_async(_agent_steps)(run["id"]) == [(APPEND, "finished"), ("touch second.txt", "finished")]
        await asyncio.gather(*second.tasks.values(), return_exceptions=True)


# --- agent processes never outlive their run (issue 16) ---------------------------------------


@pytest.mark.agents
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
async def test_stopping_the_server_stops_the_agent_process_of_a_waiting_run(
    api: Any, server: Any, ask_touch: str, workspace: Path, how: str
) -> None:
    """The server stops (cleanly, or killed): the Claude Code CLI of a waiting run does not
    live on (a clean stop stops it; after a SIGKILL its parent-death signal does)."""
    if not CLAUDE_BIN.is_file():
        pytest.fail("Claude Code is not installed (make agents)") if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1" else pytest.skip("no Claude Code")
    with anthropic.FakeAnthropicServer() as model:
        model.add_turns([anthropic.tool_use("Bash", {"command": "touch second.txt", "description": "Touch"})])
        embedded = server(GATEHOUSE_CLAUDE_BIN=str(CLAUDE_BIN), ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="dummy")
        embedded.start()
        run = await start_run(api, driver="claude-code", prompt="Touch.", policy=ask_touch, workspace=str(workspace),
                              run_policy={"approvals": {"timeout_s": 600}})
        await pending_permission(run["id"])
        assert processes_in(workspace), "the agent should be running while the run waits"
        if how == "SIGTERM":
            assert embedded.proc is not None
            os.killpg(embedded.proc.proc.pid, signal.SIGTERM)
            embedded.proc.proc.wait(timeout=30)
        else:
            embedded.kill()
        await sync_to_async(wait_gone)(workspace, 15)
        row = await sync_to_async(Run.objects.get)(pk=run["id"])
        assert row.status == "waiting"  # stopped, not ended: the next worker resumes it
        if how == "SIGTERM":
            assert row.owner == ""  # a clean stop frees the run at once


async def test_the_next_worker_stops_what_a_killed_worker_left_running(
    api: Any, server: Any, workspace: Path, db: Any
) -> None:
    """Without a floor (GATEHOUSE_SANDBOX=off: the processes are the server's own), a
    scripted command's child (`sleep`) outlives its shell when the server is SIGKILLed; the
    next server finds the recorded process group and stops it before resuming the run,
    which then asks about the interrupted step instead of running it again."""
    await sync_to_async(Policy.objects.create)(name="allow-all", document={"default": "allow"})
    embedded = server(GATEHOUSE_SANDBOX="off")
    embedded.start()
    run = await start_run(api, driver="scripted", prompt="sleep", policy="allow-all", workspace=str(workspace),
                          scenario={"steps": [bash("sleep 300 & sleep 301; touch late.txt")]})
    await eventually(lambda: Step.objects.filter(run_id=run["id"], status="executing").exists(), timeout=TIMEOUT)
    await eventually(lambda: Run.objects.filter(pk=run["id"]).exclude(agent_processes=[]).exists(), timeout=TIMEOUT)
    await sync_to_async(eventually_sync)(lambda: len(processes_in(workspace)) >= 2)
    embedded.kill()
    time.sleep(0.5)
    assert processes_in(workspace), "the sleeps outlive their killed shell"

    server(GATEHOUSE_SANDBOX="off").start()
    interrupted = await pending_approval(api, run["id"], timeout=TIMEOUT)
    assert interrupted["kind"] == "interrupted_side_effect"
    await sync_to_async(wait_gone)(workspace, 15)
    notices = await sync_to_async(
        lambda: [a.payload.get("text", "") for a in Activity.objects.filter(run_id=run["id"], kind="notice")]
    )()
    assert any("left running by the previous worker" in text for text in notices)
    assert not (workspace / "late.txt").exists()


async def test_inside_the_floor_nothing_a_killed_worker_started_survives_it(
    api: Any, server: Any, workspace: Path, db: Any
) -> None:
    """With the floor (the default), the same `sleep`s die with the SIGKILLed server: the
    floor's bubblewrap dies with its parent and takes its whole pid namespace along. The
    next server then asks about the interrupted step."""
    await sync_to_async(Policy.objects.create)(name="allow-all", document={"default": "allow"})
    embedded = server()
    embedded.start()
    run = await start_run(api, driver="scripted", prompt="sleep", policy="allow-all", workspace=str(workspace),
                          scenario={"steps": [bash("sleep 300 & sleep 301; touch late.txt")]})
    await eventually(lambda: Step.objects.filter(run_id=run["id"], status="executing").exists(), timeout=TIMEOUT)
    await sync_to_async(eventually_sync)(lambda: len(processes_in(workspace)) >= 2)
    embedded.kill()
    await sync_to_async(wait_gone)(workspace, 5)
    server().start()
    interrupted = await pending_approval(api, run["id"], timeout=TIMEOUT)
    assert interrupted["kind"] == "interrupted_side_effect"
    assert not (workspace / "late.txt").exists()


def eventually_sync(check: Any, timeout: float = 20) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    raise AssertionError("condition not met")
