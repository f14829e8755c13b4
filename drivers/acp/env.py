"""The environment of an ACP or OpenCode agent process: the shared allow-list
(drivers/agent_env.py) plus the run's isolated HOME and XDG directories and the driver's
own switches. Never the server's whole environment."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from drivers import agent_env


def isolated_home(home: Path) -> dict[str, str]:
    """HOME and the XDG base directories beneath it (created)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home)}
    for variable, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                          ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):  # fmt: skip
        path = home / sub
        path.mkdir(parents=True, exist_ok=True)
        env[variable] = str(path)
    return env


def agent_environment(
    settings: Mapping[str, Any],
    *,
    home: Path,
    provider_names: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """`agent_env.build` with the provider variables the driver names, the run's home, and
    `extra` (the driver's isolation switches, the workspace's git overrides), which win."""
    return agent_env.build(settings, names=tuple(provider_names), fixed={**isolated_home(home), **(extra or {})})
