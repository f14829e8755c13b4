"""Retention: default workspaces and agent homes of long-finished runs are deleted, nothing else."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from runs.models import Run
from runs.retention import cleanup
from runs.services import run_create

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "x"}]}


def finished_days_ago(run: Run, days: float) -> None:
    Run.objects.filter(pk=run.pk).update(status="completed", finished_at=timezone.now() - timedelta(days=days))


def home_of(run: Run, settings: Any) -> Path:
    home = Path(settings.GATEHOUSE_RUNTIME_DIR) / f"session-{run.session_id}"
    (home / "home").mkdir(parents=True, exist_ok=True)
    return home


def test_old_default_workspaces_and_homes_go_recent_ones_stay(reviewer: Any, settings: Any) -> None:
    old = run_create(driver="scripted", scenario=SCENARIO, user=reviewer)
    recent = run_create(driver="scripted", scenario=SCENARIO, user=reviewer)
    old_home, recent_home = home_of(old, settings), home_of(recent, settings)
    finished_days_ago(old, 40)
    finished_days_ago(recent, 2)
    done = cleanup(days=30)
    assert done.workspaces == [old.workspace] and done.homes == [str(old_home)]
    assert not Path(old.workspace).exists() and not old_home.exists()
    assert Path(recent.workspace).exists() and recent_home.exists()
    assert Run.objects.filter(pk=old.pk).exists()  # the audit log stays


def test_a_workspace_someone_named_is_never_deleted(reviewer: Any, settings: Any, tmp_path: Path) -> None:
    mine = tmp_path / "my-repo"
    mine.mkdir()
    (mine / "precious.txt").write_text("keep")
    run = run_create(driver="scripted", scenario=SCENARIO, workspace=str(mine), user=reviewer)
    finished_days_ago(run, 400)
    assert cleanup(days=30).workspaces == []
    assert (mine / "precious.txt").read_text() == "keep"


def test_a_session_with_an_unfinished_run_keeps_its_home(reviewer: Any, settings: Any) -> None:
    old = run_create(driver="scripted", scenario=SCENARIO, user=reviewer)
    home = home_of(old, settings)
    finished_days_ago(old, 40)
    run_create(driver="scripted", scenario=SCENARIO, user=reviewer, session=old.session)  # queued, same session
    assert cleanup(days=30).homes == []
    assert home.exists()


def test_the_command_can_only_show_what_it_would_delete(reviewer: Any, settings: Any) -> None:
    old = run_create(driver="scripted", scenario=SCENARIO, user=reviewer)
    finished_days_ago(old, 40)
    out = StringIO()
    call_command("cleanup_retention", "--days", "30", "--dry-run", stdout=out)
    assert f"would delete {old.workspace}" in out.getvalue()
    assert Path(old.workspace).exists()
    call_command("cleanup_retention", "--days", "30", stdout=StringIO())
    assert not Path(old.workspace).exists()
