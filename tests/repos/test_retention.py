"""Retention removes a repository run's workspace, Gatehouse's state of it and the mirror's
ref on its base, once every turn in that workspace finished before the cut-off."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from repos.models import Repository
from repos.services import cache_dir, run_changes, workspace_prepare
from runs.models import Run
from runs.retention import cleanup
from runs.services import run_create
from tests.repos.conftest import sh

pytestmark = pytest.mark.django_db


def test_old_repository_workspaces_go_with_their_state_and_base_ref(reviewer: Any, remote: Path) -> None:
    Repository.objects.create(name="app", url=f"file://{remote}")
    old = workspace_prepare(run_id=run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app", user=reviewer).pk)
    recent = workspace_prepare(run_id=run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app", user=reviewer).pk)
    for run in (old, recent):
        (Path(run.workspace) / "x.txt").write_text("x\n")
        run_changes(run)  # Gatehouse's own index and objects of the workspace
    mirror = next((cache_dir() / "mirrors").glob("*.git"))
    assert sh("for-each-ref", "--format=%(refname)", "refs/gatehouse/", cwd=mirror).split() == [
        f"refs/gatehouse/bases/run-{old.pk}", f"refs/gatehouse/bases/run-{recent.pk}"]
    Run.objects.filter(pk=old.pk).update(status="completed", finished_at=timezone.now() - timedelta(days=40))
    Run.objects.filter(pk=recent.pk).update(status="completed", finished_at=timezone.now() - timedelta(days=2))
    done = cleanup(days=30)
    assert done.workspaces == [old.workspace]
    assert not Path(old.workspace).exists() and Path(recent.workspace).exists()
    assert not (cache_dir() / "runs" / f"run-{old.pk}").exists() and (cache_dir() / "runs" / f"run-{recent.pk}").exists()
    assert sh("for-each-ref", "--format=%(refname)", "refs/gatehouse/", cwd=mirror).split() == [
        f"refs/gatehouse/bases/run-{recent.pk}"]


def test_a_workspace_a_later_turn_still_uses_stays(reviewer: Any, remote: Path) -> None:
    from runs.services import run_follow_up

    Repository.objects.create(name="app", url=f"file://{remote}")
    first = workspace_prepare(run_id=run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app", user=reviewer).pk)
    Run.objects.filter(pk=first.pk).update(status="completed", finished_at=timezone.now() - timedelta(days=40))
    first.refresh_from_db()
    later = run_follow_up(session=first.session, prompt="more", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    assert later.workspace == first.workspace
    assert cleanup(days=30).workspaces == []
    assert Path(first.workspace).exists()
