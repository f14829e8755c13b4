"""The external decision point end to end (issue 30.9): a policy that names one, a scripted
run through the API and the real worker, its deny in the run's activity log; the default
policy's point is part of the administrator's ceiling; the dry-run API replays it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient

from approvals.models import Policy
from approvals.policy_versions import PolicyInvalid, policy_save
from approvals.selectors import policy_for_run
from runs.models import Activity, Step
from tests.flow import finished, start_run

# Denies pushes and says why; allows everything else. JSON on stdin, the answer on stdout.
DECIDE = """\
import json, sys
given = json.load(sys.stdin)["input"]
words = given["input"].get("command", "").split() if given["tool"] == "bash" else []
if words[:2] == ["git", "push"]:
    answer = {"decision": "deny", "reason": "Pushes go through CI (decided by the company's policy service)."}
else:
    answer = {"decision": "allow", "reason": "fine"}
print(json.dumps({"result": answer}))
"""


def point(tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "decide.py"
    script.write_text(DECIDE)
    return {"command": [sys.executable, str(script)], "timeout_ms": 5000}


@pytest.mark.django_db(transaction=True)
async def test_an_external_deny_reaches_the_runs_activity_log(
    api: Any, worker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from django.db import connection

    from approvals.gate import external

    where: list[tuple[str, bool]] = []
    real = external.consult

    def consult(*args: Any, **kwargs: Any) -> Any:
        where.append((threading.current_thread().name, connection.in_atomic_block))
        return real(*args, **kwargs)

    monkeypatch.setattr(external, "consult", consult)
    default = await sync_to_async(lambda: policy_for_run("")[1])()
    await sync_to_async(policy_save)(policy=Policy(name="with decision point",
                                                   document={**default, "external": point(tmp_path)}))
    scenario = {"steps": [
        {"tool": "bash", "input": {"command": "git push origin main"}},
        {"tool": "bash", "input": {"command": "ls"}},
        {"message": "done"},
    ]}
    run = await start_run(api, scenario, policy="with decision point")
    done = await finished(run["id"])
    assert done.status == "completed", done.failure_reason

    def recorded() -> tuple[list[tuple[str, str, str]], list[dict[str, Any]]]:
        steps = [(s.status, s.decided_by, s.told) for s in Step.objects.filter(run_id=run["id"]).order_by("seq")]
        logged = [a.payload for a in Activity.objects.filter(run_id=run["id"], event="tool.requested").order_by("seq")]
        return steps, logged

    steps, logged = await sync_to_async(recorded)()
    why = "Pushes go through CI (decided by the company's policy service)."
    assert steps == [("denied", "external", why), ("finished", "policy", "")]
    assert (logged[0]["decision"], logged[0]["decided_by"], logged[0]["rule"], logged[0]["reason"]) == (
        "deny", "external", "external", why)
    assert logged[0]["external"]["verdict"]["decision"] == "ask"  # the policy alone would have asked
    assert logged[1]["external"]["effect"] == "agreed"
    # The worker asked it off the database thread, outside any transaction: a slow point
    # holds neither SQLite's write lock nor the worker's other runs.
    assert len(where) == 2 and all(name.startswith("asyncio") and not atomic for name, atomic in where), where


@pytest.fixture
def starter(make_user: Callable[..., Any]) -> Any:
    return make_user("bob", superuser=False, perms=("runs.add_run",))


@pytest.mark.django_db
def test_a_starter_cannot_name_a_policy_without_the_defaults_decision_point(starter: Any, tmp_path: Path) -> None:
    default_row, default = policy_for_run("")
    assert default_row is not None
    default_row.document = {**default, "external": point(tmp_path)}
    policy_save(policy=default_row)
    policy_save(policy=Policy(name="no decision point", document=default))
    client = APIClient()
    client.force_authenticate(starter)
    body = {"driver": "scripted", "scenario": {"steps": [{"message": "x"}]}}
    refused = client.post("/api/v1/runs/", {**body, "policy": "no decision point"}, format="json")
    assert refused.status_code == HTTPStatus.FORBIDDEN, refused.content
    assert refused.json()["code"] == "policy_override_forbidden"
    assert refused.json()["loosenings"] == [
        f"external: the default policy's decision point ({sys.executable}) is not consulted by this one"]
    # The default itself, and a policy that keeps its point, may be named.
    assert client.post("/api/v1/runs/", body, format="json").status_code == HTTPStatus.CREATED
    policy_save(policy=Policy(name="keeps it", document={**default_row.document, "commands": {"deny": ["git push"]}}))
    assert client.post("/api/v1/runs/", {**body, "policy": "keeps it"}, format="json").status_code == HTTPStatus.CREATED


@pytest.mark.django_db
def test_saving_a_policy_refuses_a_bad_decision_point_naming_the_field() -> None:
    with pytest.raises(PolicyInvalid) as refused:
        policy_save(policy=Policy(name="bad", document={"default": "ask", "external": {"command": "/usr/local/bin/decide -s"}}))
    assert refused.value.field == "external.command"
    assert refused.value.message.startswith("external.command: must be a list of words") and not Policy.objects.filter(name="bad")


@pytest.mark.django_db
def test_the_dry_run_api_says_how_many_requests_no_point_answered(api: Any, reviewer: Any, tmp_path: Path) -> None:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    gate_request(run_id=run.pk, tool="bash", input={"command": "ls"}, cwd=run.workspace)
    live = policy_for_run("")[0]
    assert live is not None
    draft = {**live.document, "external": point(tmp_path)}
    body = api.post(f"/api/v1/policies/{live.pk}/dry-run/", {"document": draft}, format="json").json()
    assert (body["compared"], body["external_unrecorded"]) == (1, 1)


@pytest.mark.django_db(transaction=True)
async def test_the_hook_gateway_consults_it_too(reviewer: Any, tmp_path: Path) -> None:
    """The gateway gates inside its own transaction (`gate_request_in`): the point is asked there."""
    from django.test import AsyncClient

    from integrations.tokens import token_create

    token = await sync_to_async(lambda: token_create(user=reviewer, scopes=["hooks"])[1])()
    default = await sync_to_async(lambda: policy_for_run("")[1])()
    await sync_to_async(policy_save)(policy=Policy(name="hooked", document={**default, "external": point(tmp_path)}))
    body = {"session_id": "s1", "transcript_path": "/home/dev/.claude/projects/x/s1.jsonl", "cwd": "/work/app",
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "git push origin main"}, "tool_use_id": "toolu_1"}
    response = await AsyncClient().post("/api/v1/hooks/claude-code/pre-tool-use/?policy=hooked", body,
                                        content_type="application/json", headers={"Authorization": f"Token {token}"})
    assert response.status_code == HTTPStatus.OK, response.content
    output = response.json()["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny" and "Pushes go through CI" in output["permissionDecisionReason"]
    step = await sync_to_async(Step.objects.get)()
    assert (step.status, step.decided_by, step.rule) == ("denied", "external", "external")
