"""A run names a repository: the worker clones it from its mirror onto `gatehouse/run-<id>`,
the scripted driver works there (inside the sandbox floor), and the changes show it."""

from __future__ import annotations

import asyncio
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from repos.models import Repository
from runs.models import Run
from tests.flow import events, finished, start_run
from tests.repos.conftest import sh

pytestmark = [pytest.mark.django_db(transaction=True)]

WRITE = {"steps": [{"tool": "write", "input": {"file_path": "NEW.md", "content": "hello\n"}},
                   {"tool": "bash", "input": {"command": "printf 'x = 2\\n' >> src/app.py"}},
                   {"message": "done"}]}


@pytest.fixture
def repository(db: Any, remote: Path) -> Repository:
    return Repository.objects.create(name="app", url=f"file://{remote}", default_ref="main")


def test_exactly_one_of_workspace_and_repository(api: Any, repository: Repository, tmp_path: Path) -> None:
    body = {"driver": "scripted", "scenario": {"steps": [{"message": "x"}]}}
    both = api.post("/api/v1/runs/", {**body, "repository": "app", "workspace": str(tmp_path)}, format="json")
    assert both.status_code == HTTPStatus.BAD_REQUEST and both.json()["field"] == "repository"
    unknown = api.post("/api/v1/runs/", {**body, "repository": "nope"}, format="json")
    assert unknown.status_code == HTTPStatus.BAD_REQUEST and "no repository named 'nope'" in unknown.json()["message"]
    ref_alone = api.post("/api/v1/runs/", {**body, "ref": "main"}, format="json")
    assert ref_alone.status_code == HTTPStatus.BAD_REQUEST and ref_alone.json()["field"] == "ref"
    bad_ref = api.post("/api/v1/runs/", {**body, "repository": "app", "ref": "--upload-pack=x"}, format="json")
    assert bad_ref.status_code == HTTPStatus.BAD_REQUEST and bad_ref.json()["field"] == "ref"
    ok = api.post("/api/v1/runs/", {**body, "repository": "app", "ref": "dev"}, format="json")
    assert ok.status_code == HTTPStatus.CREATED, ok.content
    assert (ok.json()["repository"], ok.json()["ref"], ok.json()["workspace"]) == ("app", "dev", "")


async def test_a_run_works_in_its_own_clone_and_its_changes_show_it(api: Any, worker: Any, repository: Repository,
                                                                   remote: Path, settings: Any) -> None:
    run = await start_run(api, WRITE, repository="app")
    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    workspace = Path(done.workspace)
    assert workspace == Path(settings.GATEHOUSE_WORKSPACES_DIR) / f"run-{done.pk}"
    assert done.branch == f"gatehouse/run-{done.pk}"
    assert done.base_commit == sh("rev-parse", "main", cwd=remote)
    assert sh("rev-parse", "--abbrev-ref", "HEAD", cwd=workspace) == done.branch
    assert (workspace / "NEW.md").read_text() == "hello\n"
    # git works inside the floor (the clone is standalone), and the command's output says so.
    assert "run.workspace" in await sync_to_async(events)(done.pk)
    # The clone shares nothing with the mirror: no alternates, no hard links.
    assert not (workspace / ".git" / "objects" / "info" / "alternates").exists()
    response = await sync_to_async(api.get)(f"/api/v1/runs/{done.pk}/changes/")
    assert response.status_code == HTTPStatus.OK, response.content
    body = response.json()
    assert body["base"] == done.base_commit
    files = {f["path"]: f for f in body["files"]}
    assert files["NEW.md"] == {"path": "NEW.md", "old_path": "", "status": "added", "additions": 1, "deletions": 0, "binary": False}
    assert files["src/app.py"]["status"] == "modified" and files["src/app.py"]["additions"] == 1
    assert "+x = 2" in body["diff"] and "+hello" in body["diff"]
    # The remote is untouched by the run.
    assert sh("rev-parse", "main", cwd=remote) == done.base_commit
    assert sh("branch", "--list", "gatehouse/*", cwd=remote) == ""


async def test_the_mirror_is_invisible_inside_the_floor(api: Any, worker: Any, repository: Repository, settings: Any,
                                                       floor_available: None) -> None:
    cache = Path(settings.GATEHOUSE_REPOSITORY_CACHE_DIR)
    probe = {"steps": [{"tool": "bash", "input": {"command": f"ls -A {cache} | wc -l > seen.txt; git log --oneline | wc -l >> seen.txt"}}]}
    run = await start_run(api, probe, repository="app")
    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert (cache / "mirrors").is_dir()  # it exists outside
    seen = (Path(done.workspace) / "seen.txt").read_text().split()
    assert seen == ["0", "1"]  # empty inside; the run's own history is there


async def test_two_runs_on_one_repository_at_once(api: Any, worker: Any, repository: Repository) -> None:
    first, second = await asyncio.gather(start_run(api, WRITE, repository="app"), start_run(api, WRITE, repository="app", ref="dev"))
    one, two = await finished(first["id"]), await finished(second["id"])
    assert (one.status, two.status) == ("completed", "completed"), (one.failure_detail, two.failure_detail)
    assert one.workspace != two.workspace and one.branch != two.branch
    assert (Path(two.workspace) / "DEV.md").exists() and not (Path(one.workspace) / "DEV.md").exists()
    assert len(list((Path(one.workspace).parent.parent / "repo-cache" / "mirrors").glob("*.git"))) == 1


async def test_a_follow_up_turn_keeps_the_workspace(api: Any, worker: Any, repository: Repository) -> None:
    run = await start_run(api, WRITE, repository="app")
    first = await finished(run["id"])
    again = {"steps": [{"tool": "bash", "input": {"command": "cat NEW.md > seen.txt"}}]}
    from runs.services import run_follow_up

    session = await sync_to_async(lambda: Run.objects.select_related("session").get(pk=first.pk).session)()
    follow = await sync_to_async(run_follow_up)(session=session, prompt="more", scenario=again)
    second = await finished(follow.pk)
    assert second.status == "completed", (second.failure_reason, second.failure_detail)
    assert (second.workspace, second.branch, second.base_commit) == (first.workspace, first.branch, first.base_commit)
    assert (Path(second.workspace) / "seen.txt").read_text() == "hello\n"


async def test_a_fetch_failure_fails_the_run_with_the_reason_and_no_credential(api: Any, worker: Any, tmp_path: Path) -> None:
    from repos.services import repository_create

    token = "tok_" + "Zq9" * 10
    await sync_to_async(repository_create)(name="gone", url=f"https://127.0.0.1:9/{tmp_path.name}/nothing.git",
                                           credential_kind="token", secret=token)
    run = await start_run(api, WRITE, repository="gone")
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "repository_unavailable")
    assert "could not be fetched" in done.failure_detail and "127.0.0.1" in done.failure_detail
    everything = str(await sync_to_async(lambda: list(Run.objects.get(pk=done.pk).activities.values("payload")))())
    assert token not in done.failure_detail and token not in everything


def test_messages_are_scrubbed_of_userinfo_and_secrets() -> None:
    from repos.git import scrub

    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    text = "fatal: unable to access 'https://bob:hunter2@host/x.git/': token ghp_abc123 b3BlbnNzaC1rZXktdjEAAAAA"
    cleaned = scrub(text, ["ghp_abc123", key])
    assert "hunter2" not in cleaned and "bob" not in cleaned and "ghp_abc123" not in cleaned
    assert "b3BlbnNzaC1rZXktdjEAAAAA" not in cleaned and "https://***@host/x.git/" in cleaned


async def test_a_missing_ref_fails_the_run(api: Any, worker: Any, repository: Repository) -> None:
    run = await start_run(api, WRITE, repository="app", ref="no-such-branch")
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "repository_unavailable")
    assert "no-such-branch" in done.failure_detail


def test_the_console_new_run_form_starts_a_run_on_a_repository(reviewer: Any, repository: Repository) -> None:
    from django.test import Client

    client = Client()
    client.force_login(reviewer)
    page = client.get("/runs/new/").content.decode()
    assert '<option value="app">app</option>' in page
    response = client.post("/runs/new/", {"driver": "scripted", "scenario": '{"steps": [{"message": "x"}]}',
                                          "repository": "app", "ref": "dev"})
    assert response.status_code == HTTPStatus.FOUND, response.content.decode()[-1500:]
    run = Run.objects.get()
    assert (run.repository_id, run.ref, run.workspace) == (repository.pk, "dev", "")
    both = client.post("/runs/new/", {"driver": "scripted", "scenario": '{"steps": [{"message": "x"}]}',
                                      "repository": "app", "workspace": "/tmp"})
    assert "name either a workspace or a repository, not both" in both.content.decode()
