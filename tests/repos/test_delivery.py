"""Delivering a run's result: a `delivery` approval; approved, Gatehouse pushes the run's
branch itself (the remote then has exactly the run's commit); denied, nothing is pushed."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from rest_framework.test import APIClient

from approvals.models import Approval
from repos.models import Delivery, Repository
from repos.services import deliveries_perform, workspace_prepare
from runs.models import Activity, Run
from runs.services import run_create
from tests.flow import eventually
from tests.repos.conftest import sh

pytestmark = pytest.mark.django_db(transaction=True)


def finished_run(user: Any, remote: Path) -> Run:
    Repository.objects.get_or_create(name="app", defaults={"url": f"file://{remote}", "default_ref": "main"})
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app", user=user, prompt="Add notes")
    run = workspace_prepare(run_id=run.pk)
    (Path(run.workspace) / "NOTES.md").write_text("notes\n")
    (Path(run.workspace) / "README.md").write_text("# App, changed\n")
    Run.objects.filter(pk=run.pk).update(status="completed", finished_at=timezone.now())
    run.refresh_from_db()
    return run


@pytest.fixture
def bob(make_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(make_user("bob"))
    return client


def remote_branches(remote: Path) -> str:
    return sh("for-each-ref", "--format=%(refname)", "refs/heads/", cwd=remote)


def test_a_denied_push_pushes_nothing(api: Any, bob: APIClient, reviewer: Any, remote: Path, settings: Any) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    run = finished_run(reviewer, remote)
    before = remote_branches(remote)
    asked = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    assert asked.status_code == HTTPStatus.CREATED, asked.content
    again = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    assert again.status_code == HTTPStatus.CONFLICT and again.json()["code"] == "delivery_pending"
    approval = bob.get(f"/api/v1/approvals/{asked.json()['approval']}/").json()
    assert approval["kind"] == "delivery" and approval["status"] == "pending"
    from django.test import Client

    console = Client()
    console.force_login(reviewer)
    inbox = console.get("/")
    assert inbox.status_code == HTTPStatus.OK and f"Push branch gatehouse/run-{run.pk} to app" in inbox.content.decode()
    # Four eyes: the run's starter does not approve its own delivery.
    own = api.post(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    assert own.status_code != HTTPStatus.OK and own.json()["code"] == "own_run", own.content
    denied = bob.post(f"/api/v1/approvals/{approval['id']}/deny/", {"hash": approval["hash"], "reason": "not yet"}, format="json")
    assert denied.status_code == HTTPStatus.OK, denied.content
    assert deliveries_perform() == [asked.json()["id"]]
    assert remote_branches(remote) == before
    assert Delivery.objects.get().status == "denied"
    assert Activity.objects.filter(run=run, event="run.delivery_refused").exists()
    assert not Activity.objects.filter(run=run, event="run.delivered").exists()


async def test_an_approved_push_leaves_exactly_the_runs_commit_on_the_remote(api: Any, bob: APIClient, reviewer: Any,
                                                                            remote: Path, worker: Any) -> None:
    run = await sync_to_async(finished_run)(reviewer, remote)
    asked = await sync_to_async(api.post)(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    assert asked.status_code == HTTPStatus.CREATED, asked.content
    approval = (await sync_to_async(bob.get)(f"/api/v1/approvals/{asked.json()['approval']}/")).json()
    approved = await sync_to_async(bob.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]},
                                             format="json")
    assert approved.status_code == HTTPStatus.OK, approved.content
    # The worker's maintenance loop pushes it.
    delivery = await eventually(lambda: Delivery.objects.filter(status__in=["pushed", "failed"]).first())
    assert delivery.status == "pushed", delivery.error
    branch = f"refs/heads/gatehouse/run-{run.pk}"
    pushed = sh("rev-parse", branch, cwd=remote)
    assert pushed == delivery.commit == asked.json()["commit"]
    assert sh("rev-list", f"{run.base_commit}..{branch}", cwd=remote).split() == [pushed]
    assert sh("rev-parse", f"{pushed}^", cwd=remote) == run.base_commit
    assert sh("show", f"{branch}:NOTES.md", cwd=remote) == "notes"
    assert sh("rev-parse", "refs/heads/main", cwd=remote) == run.base_commit  # nothing else moved
    done = await sync_to_async(lambda: Activity.objects.get(run=run, event="run.delivered").payload)()
    assert done["commit"] == pushed and done["by"] == "bob"


def test_nothing_to_deliver_and_unfinished_runs_are_refused(api: Any, reviewer: Any, remote: Path) -> None:
    run = finished_run(reviewer, remote)
    sh("checkout", "-q", "--", ".", cwd=Path(run.workspace))
    (Path(run.workspace) / "NOTES.md").unlink()
    nothing = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    assert nothing.status_code == HTTPStatus.CONFLICT and nothing.json()["code"] == "no_changes"
    Run.objects.filter(pk=run.pk).update(status="running", finished_at=None)
    running = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    assert running.status_code == HTTPStatus.CONFLICT and running.json()["code"] == "run_not_finished"
    wrong = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "merge"}, format="json")
    assert wrong.status_code == HTTPStatus.BAD_REQUEST
    assert not Approval.objects.filter(kind="delivery").exists()


def test_a_failed_push_says_why_without_the_credential(api: Any, bob: APIClient, reviewer: Any, remote: Path) -> None:
    from repos import crypto

    run = finished_run(reviewer, remote)
    token = "tok_" + "Pq7" * 10
    Repository.objects.filter(name="app").update(credential_kind="token", credential_encrypted=crypto.encrypt(token))
    asked = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json").json()
    approval = bob.get(f"/api/v1/approvals/{asked['approval']}/").json()
    bob.post(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    # The remote refuses the push (a hook of the remote's own), after the approval.
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\necho 'refused by the remote ({token[:3]})' >&2\nexit 1\n")
    hook.chmod(0o755)
    deliveries_perform()
    delivery = Delivery.objects.get()
    assert delivery.status == "failed" and "refused by the remote" in delivery.error
    assert token not in delivery.error
    assert "gatehouse/" not in remote_branches(remote)


def test_a_push_under_a_run_policy_that_wants_two_reviewers_for_remote_mutations_takes_two(
        api: Any, bob: APIClient, reviewer: Any, remote: Path, make_user: Any, settings: Any) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    run = finished_run(reviewer, remote)
    Run.objects.filter(pk=run.pk).update(run_policy={**run.run_policy, "approvals": {
        **run.run_policy.get("approvals", {}), "confirm": {"remote-mutation": "second-reviewer"}}})
    asked = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    approval = bob.get(f"/api/v1/approvals/{asked.json()['approval']}/").json()
    assert approval["confirmation"] == "second-reviewer"
    first = bob.post(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    assert first.status_code == HTTPStatus.ACCEPTED and first.json()["approvals_given"] == 1, first.content
    assert deliveries_perform() == []  # nothing pushed on one approval
    carol = APIClient()
    carol.force_authenticate(make_user("carol"))
    second = carol.post(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
    assert second.status_code == HTTPStatus.OK, second.content
    assert deliveries_perform() == [asked.json()["id"]]
    assert f"refs/heads/gatehouse/run-{run.pk}" in remote_branches(remote)


def test_a_push_under_typed_confirmation_asks_for_the_branch(api: Any, bob: APIClient, reviewer: Any, remote: Path,
                                                              settings: Any) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    run = finished_run(reviewer, remote)
    Run.objects.filter(pk=run.pk).update(run_policy={**run.run_policy, "approvals": {
        **run.run_policy.get("approvals", {}), "confirm": {"remote-mutation": "typed"}}})
    asked = api.post(f"/api/v1/runs/{run.pk}/deliver/", {"action": "push"}, format="json")
    approval = bob.get(f"/api/v1/approvals/{asked.json()['approval']}/").json()
    assert approval["confirmation_word"] == f"gatehouse/run-{run.pk}"
    wrong = bob.post(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"], "confirmation": "main"}, format="json")
    assert wrong.status_code == HTTPStatus.BAD_REQUEST and wrong.json()["code"] == "confirmation_required"
    right = bob.post(f"/api/v1/approvals/{approval['id']}/approve/",
                     {"hash": approval["hash"], "confirmation": f"gatehouse/run-{run.pk}"}, format="json")
    assert right.status_code == HTTPStatus.OK, right.content
