"""The environment an agent process starts with: built from an allow-list, never inherited.

One function, `agent_environment`, so it can be swapped for the shared builder when that
lands. What passes: PATH, LANG, LC_*, TERM and TZ from the server's environment; the
provider variables the driver names (their values from the operator's configured agent
env values, else from the server's environment); the configured values themselves; and
the run's isolated HOME and XDG directories. Never GATEHOUSE_*, DJANGO_*, DATABASE_URL or
REDIS_URL, whoever names them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PASSED_FROM_SERVER = frozenset({"PATH", "LANG", "TERM", "TZ"})
FORBIDDEN_NAMES = frozenset({"DATABASE_URL", "REDIS_URL"})
FORBIDDEN_PREFIXES = ("GATEHOUSE_", "DJANGO_")


def is_forbidden(name: str) -> bool:
    return name in FORBIDDEN_NAMES or name.startswith(FORBIDDEN_PREFIXES)


def configured_values(settings: Mapping[str, Any]) -> dict[str, str]:
    """The operator's explicit agent env values (settings "env", from GATEHOUSE_AGENT_ENV)."""
    return {str(k): str(v) for k, v in (settings.get("env") or {}).items()}


def agent_environment(
    settings: Mapping[str, Any],
    *,
    home: Path,
    provider_names: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of one agent process (see the module docstring).

    `home` becomes HOME, with XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_CACHE_HOME and
    XDG_STATE_HOME beneath it (created); `extra` is the driver's own isolation variables.
    """
    values = configured_values(settings)
    env = {k: v for k, v in os.environ.items() if k in PASSED_FROM_SERVER or k.startswith("LC_")}
    env.setdefault("TERM", "dumb")
    for name in provider_names:
        if name in values:
            env[name] = values[name]
        elif name in os.environ:
            env[name] = os.environ[name]
    env.update(values)
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    for variable, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"),
                          ("XDG_CACHE_HOME", ".cache"), ("XDG_STATE_HOME", ".local/state")):  # fmt: skip
        path = home / sub
        path.mkdir(parents=True, exist_ok=True)
        env[variable] = str(path)
    env.update(extra or {})
    return {k: v for k, v in env.items() if not is_forbidden(k)}
