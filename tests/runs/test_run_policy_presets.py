"""The adaptor design's named run policies (issue 30, item 10): `{"preset": "all-deny"}` and
`{"preset": "sandbox-only"}` stand for whole run policies, fields beside them override, and
they fall under the same ceiling and permission as any run policy."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient

from approvals.models import Approval
from approvals.policy import PolicyError, materialise, parse_run_policy
from tests.flow import finished, messages, start_run

STEPS = {"steps": [{"tool": "bash", "input": {"command": "git push --force origin main"}},
                   {"tool": "bash", "input": {"command": "curl -s https://example.com"}}, {"message": "done"}]}


def test_a_preset_stands_for_a_whole_run_policy_and_fields_beside_it_override():
    denied = materialise(parse_run_policy({"preset": "all-deny"}))
    assert denied["sandbox"] == "read-only"
    assert {k: denied[k] for k in ("permission", "plan_review", "question")} == {
        "permission": "auto-deny", "plan_review": "auto-deny", "question": "auto-deny"}
    only = materialise(parse_run_policy({"preset": "sandbox-only", "approvals": {"timeout_s": 60}}))
    assert (only["sandbox"], only["permission"], only["question"]) == ("workspace-write", "auto-approve", "auto-deny")
    assert only["timeout_s"] == 60  # beside the preset, field by field
    with pytest.raises(PolicyError, match="preset must be one of all-deny, sandbox-only"):
        parse_run_policy({"preset": "yolo"})


@pytest.mark.django_db(transaction=True)
async def test_under_all_deny_what_the_policy_would_ask_is_refused_and_nobody_is_asked(api: Any, worker: Any) -> None:
    run = await start_run(api, STEPS, run_policy={"preset": "all-deny"})
    done = await finished(run["id"])
    assert done.status == "completed"
    said = await sync_to_async(messages)(run["id"])
    assert said[0].startswith("The request was refused")  # the push the policy would ask about
    # ...and the connection curl tried (the egress proxy would ask): refused too, no card
    assert not await sync_to_async(Approval.objects.filter(run_id=run["id"]).exists)()


@pytest.mark.django_db
def test_sandbox_only_loosens_so_it_needs_the_override_permission(make_user: Callable[..., Any]) -> None:
    starter = make_user("sam", superuser=False, perms=("runs.add_run",))
    client = APIClient()
    client.force_authenticate(starter)
    response = client.post("/api/v1/runs/", {"driver": "scripted", "scenario": STEPS, "run_policy": {"preset": "sandbox-only"}},
                           format="json")
    assert (response.status_code, response.json()["code"]) == (HTTPStatus.FORBIDDEN, "policy_override_forbidden")
    # tightening needs nothing
    response = client.post("/api/v1/runs/", {"driver": "scripted", "scenario": STEPS, "run_policy": {"preset": "all-deny"}},
                           format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert response.json()["run_policy"]["approvals"]["permission"] == "auto-deny"
