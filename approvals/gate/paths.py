"""What paths mean for a run: its workspace, the homes `~` stands for, Gatehouse's own files."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from approvals import policy as core
from runs.models import Run


def agent_home(run: Run) -> str:
    """The isolated HOME the run's agent process gets (drivers.runcontext.runtime_dir_of)."""
    return str(settings.GATEHOUSE_RUNTIME_DIR / f"session-{run.session_id}" / "home")


def path_context(run: Run) -> Any:
    """The policy core's PathContext for this run: requests' paths are resolved against the
    workspace; `~` means both the server user's home and the agent's own; Gatehouse's var
    directory (database, secret key, agent homes) is protected."""
    context_type = getattr(core, "PathContext", None)
    if context_type is None:
        return None
    homes = tuple(dict.fromkeys([os.path.expanduser("~"), agent_home(run)]))
    return context_type(workspace=run.workspace, homes=homes, protected_dirs=(str(settings.VAR_DIR),))
