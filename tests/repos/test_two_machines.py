"""Two workers with separate var directories, as two machines would have: two real
`manage.py runworker drivers` processes sharing the database, each with its own
GATEHOUSE_VAR_DIR (so its own mirror cache and workspaces). Each takes one run of the same
repository and prepares its workspace from its own mirror. A process whose cache has no
mirror of the run (the web process of a third machine) answers 409 `workspace_not_here`
for the changes, the patch and the push."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval
from repos.models import Repository
from runs.models import Run
from tests.flow import decide, eventually, start_run
from tests.processes import child_env, database_url_of_test_db, manage
from tests.repos.conftest import sh

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("standard_review_default")]

# Asked under "Standard review": each run holds its worker's only slot until a person decides,
# so the second run can only be taken by the other worker.
ASKS = {"steps": [{"tool": "bash", "input": {"command": """awk 'BEGIN { print "made here" > "out.txt" }'"""}}]}


async def test_two_workers_each_prepare_workspaces_from_their_own_mirror(api: Any, remote: Path, tmp_path: Path,
                                                                      settings: Any) -> None:
    await sync_to_async(Repository.objects.create)(name="app", url=f"file://{remote}", default_ref="main")
    machines = [tmp_path / "machine-a", tmp_path / "machine-b"]
    workers = [manage(["runworker", "drivers"], child_env(DATABASE_URL=database_url_of_test_db(), GATEHOUSE_VAR_DIR=var,
                                                          GATEHOUSE_WORKER_MAX_RUNS=1)) for var in machines]
    try:
        runs = [await start_run(api, ASKS, repository="app") for _ in machines]
        ids = [r["id"] for r in runs]
        # Both wait on a person, one in each worker (one slot each): both workspaces exist.
        await eventually(lambda: Approval.objects.filter(run_id__in=ids, status="pending").count() == 2, timeout=90)
        for approval in await sync_to_async(lambda: list(Approval.objects.filter(run_id__in=ids).values("id", "hash")))():
            assert (await decide(api, approval, "approve")).status_code == HTTPStatus.OK
        done = [await eventually(lambda i=i: Run.objects.filter(pk=i, status__in=["completed", "failed"]).first(), timeout=90)
                for i in ids]
        assert [d.status for d in done] == ["completed", "completed"], [(d.failure_detail, w.lines[-20:]) for d, w in
                                                                        zip(done, workers, strict=True)]
    finally:
        for worker in workers:
            worker.stop()
    owners = {run.pk: next(var for var in machines if Path(run.workspace).is_relative_to(var)) for run in done}
    assert sorted(owners.values()) == sorted(machines), owners  # one run on each machine
    main = sh("rev-parse", "main", cwd=remote)
    for run in done:
        var = owners[run.pk]
        assert Path(run.workspace) == var / "workspaces" / f"run-{run.pk}"
        assert (Path(run.workspace) / "out.txt").read_text() == "made here\n"
        assert run.base_commit == main and sh("rev-parse", "HEAD", cwd=Path(run.workspace)) == main
        # Its own mirror, cloned by that machine, holding that run's base ref (and not the other's).
        mirrors = list((var / "repositories" / "mirrors").glob("*.git"))
        assert len(mirrors) == 1, mirrors
        bases = sh("for-each-ref", "--format=%(refname)", "refs/gatehouse/bases/", cwd=mirrors[0]).split()
        assert bases == [f"refs/gatehouse/bases/run-{run.pk}"]

    # This test process has a cache of its own with no mirror of the repository: a web
    # process on a third machine. The changes, the patch and the push are refused there...
    first = done[0]
    for response in (await sync_to_async(api.get)(f"/api/v1/runs/{first.pk}/changes/"),
                     await sync_to_async(api.get)(f"/api/v1/runs/{first.pk}/changes/?format=patch"),
                     await sync_to_async(api.post)(f"/api/v1/runs/{first.pk}/deliver/", {"action": "push"}, format="json")):
        assert response.status_code == HTTPStatus.CONFLICT, response.content
        assert response.json()["code"] == "workspace_not_here"
    # ...and answered on the machine that has the workspace.
    settings.GATEHOUSE_REPOSITORY_CACHE_DIR = owners[first.pk] / "repositories"
    response = await sync_to_async(api.get)(f"/api/v1/runs/{first.pk}/changes/")
    assert response.status_code == HTTPStatus.OK, response.content
    assert [f["path"] for f in response.json()["files"]] == ["out.txt"]
