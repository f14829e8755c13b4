"""Retention: what Gatehouse made for runs long finished is deleted (workspaces, agent homes).

Only what Gatehouse itself created is ever removed: a default workspace under
GATEHOUSE_WORKSPACES_DIR (never a workspace a user named), and a session's agent home under
GATEHOUSE_RUNTIME_DIR once every run of the session finished before the cut-off. The rows
(runs, steps, activities, approvals) stay: they are the audit log.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Max, Q
from django.utils import timezone

from repos.services import workspace_forget
from runs.models import AgentSession, Run


@dataclass
class Cleaned:
    workspaces: list[str] = field(default_factory=list)
    homes: list[str] = field(default_factory=list)


def _inside(path: Path, root: Path) -> bool:
    try:
        resolved, base = path.resolve(), root.resolve()
    except OSError:
        return False
    return resolved != base and base in resolved.parents


def _remove(path: Path, root: Path) -> bool:
    if not path.exists() or path.is_symlink() or not _inside(path, root):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return not path.exists()


def cleanup(*, days: float | None = None, dry_run: bool = False) -> Cleaned:
    """Delete the default workspaces and agent homes of runs finished more than `days` ago."""
    days = settings.GATEHOUSE_RETENTION_DAYS if days is None else days
    cutoff = timezone.now() - timedelta(days=days)
    workspaces_root = Path(settings.GATEHOUSE_WORKSPACES_DIR)
    runtime_root = Path(settings.GATEHOUSE_RUNTIME_DIR)
    done = Cleaned()
    old_runs = Run.objects.filter(status__in=Run.FINISHED, finished_at__lt=cutoff).select_related("repository")
    for run in old_runs.only("id", "workspace", "repository").iterator():
        run_id, path = run.pk, Path(run.workspace)
        # A default workspace is exactly <workspaces dir>/run-<id>; a named one is never touched.
        if path.name != f"run-{run_id}" or path.parent.resolve() != workspaces_root.resolve():
            continue
        if run.repository_id is not None and Run.objects.filter(workspace=run.workspace).exclude(
                status__in=Run.FINISHED, finished_at__lt=cutoff).exists():
            continue  # a later turn of the session still works in this repository workspace
        if dry_run or _remove(path, workspaces_root):
            done.workspaces.append(str(path))
            if run.repository_id is not None and not dry_run:
                # Gatehouse's own index and objects of it, and the mirror's ref on its base.
                workspace_forget(workspace=run.workspace, repository=run.repository)
    sessions = (
        AgentSession.objects.annotate(last=Max("runs__finished_at"))
        .exclude(runs__status__in=[s for s in Run.Status.values if s not in Run.FINISHED])
        .filter(Q(last__lt=cutoff))
    )
    for session_id in sessions.values_list("id", flat=True).iterator():
        home = runtime_root / f"session-{session_id}"
        if home.exists() and (dry_run or _remove(home, runtime_root)):
            done.homes.append(str(home))
    return done
