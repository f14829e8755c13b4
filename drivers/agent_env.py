"""The environment of every agent process: an allow-list, never the server's environment.

The server's environment holds Gatehouse's own secrets (`GATEHOUSE_SECRET_KEY`,
`DATABASE_URL`, `REDIS_URL`, `DJANGO_*`) and whatever else the operator exported. An agent
can print its environment with one command (`env`), and every command it runs inherits
it, so each agent process — the CLI a driver starts, and each shell command the scripted
driver runs — gets only:

1. `PATH`, `LANG`, `LC_*`, `TERM`, `TZ` from the server's environment;
2. the names the driver declares: its model provider's variables and its CLI's documented
   switches (Claude Code `ANTHROPIC_*`, `CLAUDE_CODE_*`, `DISABLE_*`, `IS_SANDBOX`; Codex
   the variable named by `GATEHOUSE_CODEX_ENV_KEY`);
3. the names an operator lists in `GATEHOUSE_AGENT_ENV` (driver setting `env_names`), taken
   from the server's environment;
4. the values in `GATEHOUSE_AGENT_ENV_VALUES` (driver setting `env_values`), e.g. a model
   proxy URL;
5. `GIT_CEILING_DIRECTORIES`: the directories holding Gatehouse's workspaces and agent
   homes (driver setting `git_ceiling`), so that git run in a workspace that is no
   repository of its own never finds the repository above it — Gatehouse's own checkout
   when its var directory lies inside it (`git stash` there would stash the server's code);
6. `LESSSECURE=1`: `less` runs no shell (`!`), pipe, editor, log file or input
   preprocessor (`LESSOPEN`), should a program give it a terminal and keys (`script -c`);
   the policy asks before a command changes or drops it (`LESS*` is a risky variable);
7. what the driver itself sets: the run's isolated `HOME` and config directories, its
   isolation switches (these win over everything above).

Steps 1–4 never pass a forbidden name (`GATEHOUSE_*`, `DJANGO_*`, `DATABASE_URL`,
`REDIS_URL`), even when an operator lists or sets it; `refused_notice` says so on the run's
timeline instead. Future drivers (ACP, OpenCode) build their environment here too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from runs.events import Notice

BASE_NAMES = frozenset({"PATH", "LANG", "TERM", "TZ"})
BASE_PREFIXES = ("LC_",)
FORBIDDEN_NAMES = frozenset({"DATABASE_URL", "REDIS_URL"})
FORBIDDEN_PREFIXES = ("GATEHOUSE_", "DJANGO_")


def is_forbidden(name: str) -> bool:
    """A name that never reaches an agent: Gatehouse's own configuration and secrets."""
    upper = name.upper()
    return upper in FORBIDDEN_NAMES or upper.startswith(FORBIDDEN_PREFIXES)


def _wanted(name: str, names: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    return name in names or name.startswith(prefixes)


def build(
    settings: Mapping[str, Any],
    *,
    names: Iterable[str] = (),
    prefixes: Iterable[str] = (),
    fixed: Mapping[str, str] | None = None,
    source: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one agent process (see the module docstring for the steps).

    `names`/`prefixes` are the driver's own pass-through names; `fixed` its own values;
    `source` the server's environment (`os.environ` unless a test passes one)."""
    server = os.environ if source is None else source
    operator = frozenset(str(n) for n in settings.get("env_names") or ())
    allowed = BASE_NAMES | frozenset(names) | operator
    allowed_prefixes = BASE_PREFIXES + tuple(prefixes)
    env = {k: v for k, v in server.items() if _wanted(k, allowed, allowed_prefixes) and not is_forbidden(k)}
    for key, value in (settings.get("env_values") or {}).items():
        if not is_forbidden(str(key)):
            env[str(key)] = str(value)
    ceiling = [str(d) for d in settings.get("git_ceiling") or () if os.path.isabs(str(d))]
    if ceiling:
        env["GIT_CEILING_DIRECTORIES"] = os.pathsep.join(ceiling)
    env["LESSSECURE"] = "1"
    for key, value in (fixed or {}).items():
        env[key] = value
    if "PATH" in env:
        env["PATH"] = absolute_path_entries(env["PATH"])
    return env


def absolute_path_entries(path: str) -> str:
    """PATH without empty or relative entries: with `:/usr/bin` or `.:/usr/bin` a program
    looked up by name (`git`, `bash`) would be taken from the agent's working directory,
    which is the workspace — where anyone can check in an executable called `git`."""
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry))


def refused(settings: Mapping[str, Any]) -> list[str]:
    """Names an operator listed or set for agents that are never passed (sorted)."""
    listed = {str(n) for n in settings.get("env_names") or ()}
    listed |= {str(k) for k in settings.get("env_values") or {}}
    return sorted(name for name in listed if is_forbidden(name))


def refused_notice(settings: Mapping[str, Any], *, driver: str) -> Notice | None:
    """The timeline notice for `refused(settings)`, or None when nothing was refused."""
    names = refused(settings)
    if not names:
        return None
    return {
        "level": "warning",
        "driver": driver,
        "text": (
            f"Not passed to the agent: {', '.join(names)} (listed in GATEHOUSE_AGENT_ENV or "
            "GATEHOUSE_AGENT_ENV_VALUES, but Gatehouse's own settings and secrets never reach an agent)."
        ),
        "refused_env": names,
    }
