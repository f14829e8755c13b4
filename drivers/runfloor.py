"""The floor of one run, from Django settings and the run (the worker's side of drivers/sandbox/).

What a run's processes must never see is all of Gatehouse's own: its var directory
(database, secret key), every run's workspace and agent home (this run's are shown
again), the workspace roots (other people's workspaces), its checkout (but the pinned
agent CLIs, read-only), the server user's home, and a SQLite database file wherever it
lies (and /etc/shadow for a server running as root). The run policy's `sandbox` picks the mode: `read-only`, `workspace-write` (also
what "inherit" means when the floor is available), `unrestricted` (no floor).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from drivers import sandbox


def enabled() -> bool:
    """False only where the administrator turned the floor off (GATEHOUSE_SANDBOX=off)."""
    return str(settings.GATEHOUSE_SANDBOX) != "off"


def mode_for(run_policy: Mapping[str, Any] | None) -> sandbox.Mode | None:
    """The floor's mode for a run policy, or None when the run has no floor (`unrestricted`,
    or the floor is off)."""
    value = str((run_policy or {}).get("sandbox") or "inherit")
    if not enabled() or value == "unrestricted":
        return None
    return "read-only" if value == "read-only" else "workspace-write"


def _homes() -> list[str]:
    homes = [os.path.expanduser("~")]
    try:
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    return [h for h in dict.fromkeys(homes) if h and h != "/"]


# Root-owned system secrets a server running as root could still read inside the floor
# (its uid maps to root's, which owns them): replaced by an empty file. Files of other
# users stay unreadable there (no capability overrides their modes): docs/sandbox.md.
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow")
# The host's runtime state, where its services' Unix sockets live (/var/run is a link to it).
RUNTIME_STATE = ("/run",)


def _database_files() -> list[str]:
    db = settings.DATABASES["default"]
    if not str(db.get("ENGINE", "")).endswith("sqlite3"):
        return []
    name = str(db.get("NAME") or "")
    if not name or name.startswith(":memory:") or name.startswith("file:"):
        return []
    return [name + suffix for suffix in ("", "-wal", "-shm", "-journal")]


def host_unix_sockets(*, own: tuple[str, ...] = ()) -> list[str]:
    """The host's Unix sockets bound in the file system (PostgreSQL's, Redis', MariaDB's, a
    container engine's…), from /proc/net/unix: the network namespace does not cover them,
    so each is replaced inside the floor (and /run, where most live, is hidden whole).
    Read at each run's start: a service started later is covered from the next run on."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(None, 7)
        path = fields[7] if len(fields) == 8 else ""
        if path.startswith("/") and not path.startswith(("/tmp/", "/proc/")) and not any(
                path.startswith(tree.rstrip("/") + "/") for tree in own):
            found.append(path)  # (not the run's own: its workspace and runtime directory)
    return list(dict.fromkeys(found))


def hidden_trees() -> list[str]:
    # (the repositories' mirrors too: a run's clone is standalone, so none of it is needed inside)
    trees: list[str] = [str(t) for t in (settings.VAR_DIR, settings.GATEHOUSE_WORKSPACES_DIR, settings.GATEHOUSE_RUNTIME_DIR,
                                         settings.GATEHOUSE_REPOSITORY_CACHE_DIR, *settings.GATEHOUSE_WORKSPACE_ROOTS,
                                         settings.BASE_DIR)]
    return list(dict.fromkeys([*trees, *_homes(), *RUNTIME_STATE]))


def readable_trees() -> list[str]:
    """The pinned agent CLIs (as configured, and through the checkout's `.agents` link if
    that is how it reaches them) and the administrator's extra read-only paths."""
    trees = [str(settings.GATEHOUSE_AGENTS_DIR), str(Path(settings.BASE_DIR) / ".agents"),
             *settings.GATEHOUSE_SANDBOX_READ_PATHS]
    return list(dict.fromkeys(trees))


def run_floor(*, workspace: str | Path, runtime_dir: str | Path, run_policy: Mapping[str, Any] | None) -> sandbox.Floor | None:
    """The floor of a run (None: the run has none, see `mode_for`)."""
    mode = mode_for(run_policy)
    if mode is None:
        return None
    return sandbox.Floor(
        mode=mode,
        workspace=str(workspace),
        writable=(str(runtime_dir),),
        readable=tuple(readable_trees()),
        hidden=tuple(hidden_trees()),
        hidden_files=(*_database_files(), *(SYSTEM_SECRETS if os.getuid() == 0 else ()), *host_unix_sockets(own=(str(workspace), str(runtime_dir)))),
        bridge_dir=str(runtime_dir),
    )


def unavailable_reason(run_policy: Mapping[str, Any] | None) -> str:
    """Why a run with this run policy cannot start ("" when it can): it needs a floor and
    this machine cannot build one (the cached probe)."""
    if mode_for(run_policy) is None:
        return ""
    availability = sandbox.availability()
    return "" if availability.available else availability.reason


def status() -> tuple[str, str]:
    """(state, sentence) for start-up lines, the console banner and `manage.py check`:
    state is "on", "off" (the administrator's opt-out) or "unavailable"."""
    if not enabled():
        return "off", "Sandbox floor: off (GATEHOUSE_SANDBOX=off): runs start without an OS sandbox."
    availability = sandbox.availability()
    if availability.available:
        return "on", "Sandbox floor: on (bubblewrap): every run's processes start inside it."
    return "unavailable", (f"Sandbox floor: UNAVAILABLE ({availability.reason}); runs that need it are refused "
                           "(sandbox_unavailable) until it is installed, or turned off with GATEHOUSE_SANDBOX=off.")
