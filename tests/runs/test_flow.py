"""The walking skeleton end to end: API → worker → scripted driver → gate → reviewer."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval
from runs.models import Activity, Run, Step
from tests.flow import events, eventually, pending_approval, start_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("standard_review_default")]

# An awk program that writes a file is asked under the default policy (code it cannot read).
HELLO = """awk 'BEGIN { print "hello" > "hello.txt" }'"""
ECHO = {"steps": [{"tool": "bash", "input": {"command": HELLO}}, {"message": "All done."}]}


async def run_status(run_id: int, *statuses: str) -> Run:
    return await eventually(lambda: Run.objects.filter(pk=run_id, status__in=statuses).first())


async def test_approved_command_runs_and_run_completes(api: Any, worker: Any) -> None:
    run = await start_run(api, ECHO)
    approval = await pending_approval(api, run["id"])
    assert approval["presentation"]["command"] == HELLO

    response = await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["decided_by"] == "alice"

    done = await run_status(run["id"], "completed", "failed")
    assert done.status == "completed", done.failure_reason
    assert (Path(done.workspace) / "hello.txt").read_text() == "hello\n"
    log = await sync_to_async(events)(run["id"])
    assert log == [
        "run.created", "run.started", "turn.started", "tool.requested", "approval.requested",
        "approval.resolved", "tool.finished", "message", "turn.completed", "run.completed",
    ]
    seqs = await sync_to_async(lambda: list(Activity.objects.filter(run_id=run["id"]).values_list("seq", flat=True)))()
    assert seqs == list(range(1, len(log) + 1))
    # the turn's start records the modes it was decided under (issue 30.7)
    turn = await sync_to_async(Activity.objects.get)(run_id=run["id"], event="turn.started")
    assert (turn.payload["runtime_mode"], turn.payload["interaction_mode"]) == ("approval-required", "default")


async def test_denied_step_is_told_and_the_run_goes_on_by_default(api: Any, worker: Any) -> None:
    run = await start_run(api, ECHO)
    approval = await pending_approval(api, run["id"])
    assert approval["deadline"] is not None
    response = await sync_to_async(api.post)(
        f"/api/v1/approvals/{approval['id']}/deny/", {"hash": approval["hash"], "reason": "Not today."}, format="json"
    )
    assert response.status_code == HTTPStatus.OK

    done = await run_status(run["id"], "completed", "failed")
    assert (done.status, done.failure_reason) == ("completed", "")
    assert not (Path(done.workspace) / "hello.txt").exists()
    assert done.run_policy["approvals"]["on_reject"] == "continue" and done.run_policy["approvals"]["timeout_s"] == 3600
    step = await sync_to_async(Step.objects.get)(run_id=run["id"], seq=1)
    assert (step.status, step.told) == ("denied", "Not today.")


async def test_denied_step_is_not_executed_and_run_fails_under_on_reject_abort(api: Any, worker: Any) -> None:
    run = await start_run(api, ECHO, run_policy={"approvals": {"on_reject": "abort"}})
    approval = await pending_approval(api, run["id"])
    response = await sync_to_async(api.post)(
        f"/api/v1/approvals/{approval['id']}/deny/", {"hash": approval["hash"], "reason": "Not today."}, format="json"
    )
    assert response.status_code == HTTPStatus.OK

    done = await run_status(run["id"], "completed", "failed")
    assert (done.status, done.failure_reason) == ("failed", "approval_denied")
    assert not (Path(done.workspace) / "hello.txt").exists()
    resolved = await sync_to_async(Activity.objects.get)(run_id=run["id"], event="approval.resolved")
    assert resolved.payload["decision"] == "denied" and resolved.payload["reason"] == "Not today."
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert step.status == "aborted"


async def test_denial_with_continue_is_reported_to_the_agent(api: Any, worker: Any) -> None:
    run = await start_run(api, ECHO, run_policy={"approvals": {"on_reject": "continue"}})
    approval = await pending_approval(api, run["id"])
    await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/deny/", {"hash": approval["hash"], "reason": "Use a file write."}, format="json")

    done = await run_status(run["id"], "completed", "failed")
    assert done.status == "completed"
    assert not (Path(done.workspace) / "hello.txt").exists()
    messages = await sync_to_async(
        lambda: [a.payload["text"] for a in Activity.objects.filter(run_id=run["id"], event="message")]
    )()
    assert messages[0] == "The request was refused: Use a file write."


async def test_decision_is_found_in_the_database_when_the_doorbell_is_lost(
    api: Any, worker: Any, monkeypatch: Any
) -> None:
    from infra import broadcast

    original = broadcast.send_now
    dropped: list[str] = []

    def drop_wakeups(group: str, message: dict[str, Any], **how: Any) -> None:
        if message.get("type") == "approval.resolved":
            dropped.append(group)
            return
        original(group, message, **how)

    monkeypatch.setattr(broadcast, "send_now", drop_wakeups)
    run = await start_run(api, ECHO)
    approval = await pending_approval(api, run["id"])
    await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")

    done = await run_status(run["id"], "completed", "failed")
    assert done.status == "completed"
    assert dropped == [f"run-{run['id']}"]


async def test_worker_survives_a_failing_command(api: Any, worker: Any) -> None:
    # Read-only under the default policy, so it runs without asking.
    failing = {"steps": [{"tool": "bash", "input": {"command": "echo oops >&2; exit 3"}}]}
    run = await start_run(api, failing)
    done = await run_status(run["id"], "completed", "failed")
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert (step.exit_code, step.output) == (3, "oops\n")
    assert done.status == "completed"

    # The same worker goes on with the next run.
    second = await start_run(api, ECHO)
    approval = await pending_approval(api, second["id"])
    await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    assert (await run_status(second["id"], "completed", "failed")).status == "completed"


async def test_reads_are_allowed_without_asking(api: Any, worker: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n")
    run = await start_run(api, {"steps": [{"tool": "read", "input": {"file_path": "notes.md"}}]}, workspace=str(tmp_path))
    done = await run_status(run["id"], "completed", "failed")
    assert done.status == "completed"
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert (step.verdict, step.output) == ("allow", "# Notes\n")
    assert not await sync_to_async(Approval.objects.filter(run_id=run["id"]).exists)()


async def test_second_decision_is_refused_and_changes_nothing(api: Any, worker: Any) -> None:
    run = await start_run(api, ECHO)
    approval = await pending_approval(api, run["id"])
    first = await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    second = await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/deny/", {"hash": approval["hash"], "reason": "late"}, format="json")
    assert first.status_code == HTTPStatus.OK
    assert second.status_code == HTTPStatus.CONFLICT
    assert second.json()["code"] == "already_resolved"
    row = await sync_to_async(Approval.objects.get)(pk=approval["id"])
    assert (row.status, row.reason) == ("approved", "")
    assert (await run_status(run["id"], "completed", "failed")).status == "completed"
