"""Edit before approve through the worker (issue 32.3): the scripted driver executes the
edited request, not the agent's, and says so; the step records both."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from runs.models import Run, Step
from tests.flow import decide, finished, messages, pending_approval, start_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("standard_review_default")]

ASKED = """awk 'BEGIN { print "hi" > "out.txt" }'"""
EDITED = """awk 'BEGIN { print "edited" > "edited.txt" }'"""


async def test_the_scripted_driver_executes_the_edited_command(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": ASKED}}, {"message": "done"}]})
    approval = await pending_approval(api, run["id"])
    assert approval["edits_offered"] is True
    response = await decide(api, approval, "approve", edited_input={"command": EDITED})
    assert response.status_code == HTTPStatus.OK, response.content
    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason
    workspace = Path((await sync_to_async(Run.objects.get)(pk=run["id"])).workspace)
    assert (workspace / "edited.txt").read_text() == "edited\n"
    assert not (workspace / "out.txt").exists()  # the agent's own command never ran
    step = await sync_to_async(Step.objects.get)(run_id=run["id"])
    assert (step.status, step.request["input"], step.original_request["input"]) == (
        "finished", {"command": EDITED}, {"command": ASKED})
    said = await sync_to_async(messages)(run["id"])
    assert "A reviewer edited my bash request; I ran the edited version." in said


async def test_an_edited_file_write_writes_the_reviewers_content(api: Any, worker: Any) -> None:
    from approvals.models import Policy
    from approvals.services import policy_save

    await sync_to_async(policy_save)(policy=Policy(name="edits asked", document={"edits": {"default": "ask"}, "default": "ask"}))
    run = await start_run(api, {"steps": [{"tool": "write", "input": {"file_path": "notes.txt", "content": "agent"}}]},
                          policy="edits asked")
    approval = await pending_approval(api, run["id"])
    response = await decide(api, approval, "approve", edited_input={"content": "reviewer"})
    assert response.status_code == HTTPStatus.OK, response.content
    assert (await finished(run["id"])).status == "completed"
    workspace = Path((await sync_to_async(Run.objects.get)(pk=run["id"])).workspace)
    assert (workspace / "notes.txt").read_text() == "reviewer"
