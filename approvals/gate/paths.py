"""What paths mean for a run: its workspace, the homes `~` stands for, Gatehouse's own files."""

from __future__ import annotations

import os

from django.conf import settings

from approvals import policy as core
from drivers import registry, runfloor
from runs.models import Run


def floor_holds(run: Run) -> bool:
    """Whether the OS sandbox floor holds the run's processes (the policy's `unverified`
    setting then decides what a program model does not recognise): every run a worker
    starts, but an `unrestricted` one or with the floor off (GATEHOUSE_SANDBOX=off); never
    an external one (the hook gateway's agent runs on its own machine)."""
    return run.driver not in registry.external_names() and runfloor.mode_for(run.run_policy) is not None


def agent_home(run: Run) -> str:
    """The isolated HOME the run's agent process gets (drivers.runcontext.runtime_dir_of)."""
    return str(settings.GATEHOUSE_RUNTIME_DIR / f"session-{run.session_id}" / "home")


def _protected_dirs() -> tuple[str, ...]:
    # Gatehouse's own files: the database and secret key (var), every agent home (runtime),
    # every other run's default workspace. The run's own workspace is carved out by the core.
    protected = (settings.VAR_DIR, settings.GATEHOUSE_RUNTIME_DIR, settings.GATEHOUSE_WORKSPACES_DIR)
    return tuple(dict.fromkeys(str(p) for p in protected))


def path_context(run: Run) -> core.PathContext:
    """The policy core's PathContext for this run: requests' paths are resolved against the
    workspace; `~` means both the server user's home and the agent's own; Gatehouse's own
    directories are protected."""
    homes = tuple(dict.fromkeys([os.path.expanduser("~"), agent_home(run)]))
    return core.PathContext(workspace=run.workspace, homes=homes, protected_dirs=_protected_dirs())


def offline_path_context(workspace: str) -> core.PathContext:
    """The PathContext to reproduce a decision outside a run (`policy_check`, the evaluate
    endpoint): the given workspace, the server user's home, Gatehouse's directories."""
    return core.PathContext(workspace=workspace, homes=(os.path.expanduser("~"),), protected_dirs=_protected_dirs())
