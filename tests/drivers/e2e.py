"""What the end-to-end tests of real agent programs share: starting a run through the
API, waiting for it, and reading what it recorded (tests/drivers/test_agents_e2e.py for
Claude Code and Codex, test_acp_e2e.py for the ACP agents and OpenCode)."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async

from approvals.models import Approval
from runs.models import Run, Step
from tests.flow import eventually, pending_approval

# A real CLI on 2 busy cores can take a while to start, answer, and stop.
RUN_TIMEOUT = 90
# A rule policy that asks a person about every tool call, so each scenario meets a person
# (the `review_all` fixture, tests/drivers/conftest.py).
REVIEW_ALL = "review-all"


async def start(api: Any, agent: Any, workspace: Path, **extra: Any) -> dict[str, Any]:
    """POST /api/v1/runs/ for the agent under test (its driver, and its options if any)."""
    body: dict[str, Any] = {"driver": agent.driver, "prompt": "Do the scripted task.", "workspace": str(workspace), **extra}
    if getattr(agent, "options", None):
        body["options"] = agent.options
    response = await sync_to_async(api.post)("/api/v1/runs/", body, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    return response.json()


async def finished(run_id: int, timeout: float = RUN_TIMEOUT) -> Run:
    return await eventually(
        lambda: Run.objects.filter(pk=run_id, status__in=Run.FINISHED).first(), timeout=timeout, interval=0.1
    )


async def approval_for(api: Any, run_id: int) -> dict[str, Any]:
    return await pending_approval(api, run_id, timeout=RUN_TIMEOUT)


async def timeline(api: Any, run_id: int) -> list[dict[str, Any]]:
    """Every activity of the run, through the API (all pages)."""
    found: list[dict[str, Any]] = []
    url: str | None = f"/api/v1/runs/{run_id}/activities/"
    while url:
        response = await sync_to_async(api.get)(url)
        assert response.status_code == HTTPStatus.OK, response.content
        body = response.json()
        found += body["results"]
        url = body["next"]
    return found


async def approval_status(api: Any, approval_id: int) -> str:
    response = await sync_to_async(api.get)(f"/api/v1/approvals/{approval_id}/")
    return str(response.json()["status"])


def steps_of(run_id: int) -> list[Step]:
    return list(Step.objects.filter(run_id=run_id).order_by("seq"))


def approvals_of(run_id: int) -> list[Approval]:
    return list(Approval.objects.filter(run_id=run_id).order_by("id"))
