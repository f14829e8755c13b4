"""The worker's side of the floor: a run never starts without the floor it needs, and the
control files the floor could not hold (they did not exist yet) are named on the timeline."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from drivers.sandbox import Availability, probe
from runs.models import Activity
from tests.flow import finished, start_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("floor_available")]

ALLOW = {"approvals": {"permission": "auto-approve"}}


@pytest.fixture
def allow_all(db: Any) -> str:
    from approvals.models import Policy
    from approvals.services import policy_save

    policy_save(policy=Policy(name="allow-all", document={"default": "allow"}))
    return "allow-all"


def notices(run_id: int) -> list[dict[str, Any]]:
    return [a.payload for a in Activity.objects.filter(run_id=run_id, kind="notice").order_by("seq")]


async def test_control_files_that_appear_during_a_run_are_named(api: Any, worker: Any, allow_all: str, tmp_path: Any) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scenario = {"steps": [{"tool": "bash", "input": {"command": "git init -q . && touch notes.txt"}}]}
    run = await start_run(api, scenario, policy=allow_all, workspace=str(workspace), run_policy=ALLOW)
    assert (await finished(run["id"], timeout=60)).status == "completed"
    [notice] = [n for n in await sync_to_async(notices)(run["id"]) if n.get("control_files")]
    assert {".git/hooks", ".git/config"} <= set(notice["control_files"])
    assert "Review them" in notice["text"]


async def test_a_run_whose_floor_cannot_be_built_fails_rather_than_run_bare(
    api: Any, worker: Any, allow_all: str, tmp_path: Any
) -> None:
    """Accepted while the floor was there; by the time a worker starts it, it is gone."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scenario = {"steps": [{"tool": "bash", "input": {"command": "touch ran.txt"}}]}
    saved = probe._cached
    probe._cached = Availability(False, "bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    try:
        with pytest.MonkeyPatch.context() as patch:  # accepted as if the floor were still there
            patch.setattr("drivers.runfloor.unavailable_reason", lambda run_policy: "")
            run = await start_run(api, scenario, policy=allow_all, workspace=str(workspace), run_policy=ALLOW)
        done = await finished(run["id"], timeout=60)
    finally:
        probe._cached = saved
    assert (done.status, done.failure_reason) == ("failed", "sandbox_unavailable")
    assert not (workspace / "ran.txt").exists()
