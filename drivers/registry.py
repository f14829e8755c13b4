"""Drivers by name, imported lazily: a missing optional driver never breaks the others."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings

from drivers.base import Descriptor, Driver, OptionsError, ScenarioError, WorkspaceConfigError
from runs.errors import RunError

# name -> "module:attribute" of the driver class; the module also exports DESCRIPTOR, whose
# hooks (`validate_scenario`, `validate_options`, `check_workspace`) the checks below call.
# The worker's drivers are listed here; an app above this one adds its own with `register`
# when it is ready (integrations: the hook gateway's external drivers).
DRIVERS: dict[str, str] = {
    "scripted": "drivers.scripted:ScriptedDriver",
    "claude-code": "drivers.claude_code:ClaudeCodeDriver",
    "codex": "drivers.codex:CodexDriver",
    "acp": "drivers.acp:AcpDriver",
    "opencode": "drivers.opencode:OpenCodeDriver",
}


def register(name: str, target: str) -> None:
    """Add a driver by name ("module:attribute" of its class, its module exporting
    DESCRIPTOR), from an app's `ready()`; a name already taken by another target is refused."""
    if DRIVERS.get(name, target) != target:
        raise ValueError(f"driver {name!r} is already registered as {DRIVERS[name]!r}")
    DRIVERS[name] = target
    external_names.cache_clear()


class UnknownDriver(Exception):
    pass


def _module(name: str) -> Any:
    target = DRIVERS.get(name)
    if target is None:
        raise UnknownDriver(name)
    return importlib.import_module(target.split(":")[0])


def names() -> list[str]:
    return sorted(DRIVERS)


def descriptor(name: str) -> Descriptor:
    try:
        return _module(name).DESCRIPTOR
    except UnknownDriver:
        known = ", ".join(names())
        raise RunError("unknown_driver", f"unknown driver {name!r} (known: {known})", field="driver") from None


@functools.cache
def external_names() -> frozenset[str]:
    """Drivers whose runs no worker executes (their descriptor says `external`)."""
    return frozenset(name for name in DRIVERS if descriptor(name).external)


def create(name: str) -> Driver:
    module_name, attr = DRIVERS[name].split(":")
    return getattr(importlib.import_module(module_name), attr)()


def validate_options(
    name: str, *, scenario: Mapping[str, Any] | None, options: Mapping[str, Any] | None = None
) -> None:
    """Driver-specific options: a driver that declares `validate_scenario` (the scripted one)
    needs a scenario, the others refuse one; `options` are checked by the descriptor's
    `validate_options(options, settings)`, and refused whole by a driver that takes none."""
    d = descriptor(name)
    if d.validate_scenario is not None:
        if scenario is None:
            raise RunError("invalid_scenario", f"the {name} driver needs a scenario", field="scenario")
        try:
            d.validate_scenario(scenario)
        except ScenarioError as exc:
            raise RunError("invalid_scenario", str(exc), field=exc.field) from None
    elif scenario is not None:
        raise RunError("invalid_scenario", f"the {name} driver takes no scenario", field="scenario")
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise RunError("invalid_options", "options must be a JSON object", field="options")
    validator = d.validate_options
    if validator is None:
        if options:
            raise RunError("invalid_options", f"the {name} driver takes no options", field="options")
        return
    try:
        validator(options, driver_settings(name))
    except OptionsError as exc:
        raise RunError("invalid_options", str(exc), field=exc.field) from None


def check_workspace(name: str, *, workspace: str, options: Mapping[str, Any] | None) -> None:
    """Refuse a workspace whose agent configuration the driver's agent would load and
    Gatehouse cannot switch off (`workspace_agent_config`, naming the file)."""
    checker = descriptor(name).check_workspace
    if checker is None:
        return
    try:
        checker(Path(workspace), options or {}, driver_settings(name))
    except WorkspaceConfigError as exc:
        raise RunError("workspace_agent_config", str(exc), field="workspace", files=exc.files) from None


def driver_settings(driver: str) -> dict[str, Any]:
    """The driver's typed options, from Django settings (drivers never read settings)."""
    common: dict[str, Any] = {
        "agents_dir": str(settings.GATEHOUSE_AGENTS_DIR),
        "command_timeout_s": settings.GATEHOUSE_COMMAND_TIMEOUT_S,
        "output_limit": settings.GATEHOUSE_OUTPUT_LIMIT,
        # An agent that writes nothing this long while no decision is pending is hung.
        "idle_timeout_s": settings.GATEHOUSE_AGENT_IDLE_TIMEOUT_S,
        # The agent's environment is an allow-list (drivers/agent_env.py): these add to it.
        "env_names": list(settings.GATEHOUSE_AGENT_ENV),
        "env_values": dict(settings.GATEHOUSE_AGENT_ENV_VALUES),
        # git does not look for a repository above these (agent_env.build): a workspace
        # Gatehouse made lies inside its var directory, often inside Gatehouse's own checkout
        "git_ceiling": [str(settings.GATEHOUSE_WORKSPACES_DIR), str(settings.GATEHOUSE_RUNTIME_DIR)],
        # names the run's egress proxy resolves without DNS (drivers/runegress.py)
        "egress_hosts": dict(settings.GATEHOUSE_EGRESS_HOSTS),
    }
    if driver == "claude-code":
        common.update(
            claude_bin=settings.GATEHOUSE_CLAUDE_BIN,
            model=settings.GATEHOUSE_CLAUDE_MODEL,
            allow_bypass_permissions=settings.GATEHOUSE_ALLOW_BYPASS_PERMISSIONS,
            mcp_servers=dict(settings.GATEHOUSE_CLAUDE_MCP_SERVERS),
        )
    elif driver == "codex":
        common.update(
            codex_bin=settings.GATEHOUSE_CODEX_BIN,
            base_url=settings.GATEHOUSE_CODEX_BASE_URL,
            model=settings.GATEHOUSE_CODEX_MODEL,
            env_key=settings.GATEHOUSE_CODEX_ENV_KEY,
            mcp_servers=dict(settings.GATEHOUSE_CODEX_MCP_SERVERS),
        )
    if driver in ("acp", "opencode"):
        common.update(
            opencode_bin=settings.GATEHOUSE_OPENCODE_BIN,
            opencode_base_url=settings.GATEHOUSE_OPENCODE_BASE_URL,
            opencode_model=settings.GATEHOUSE_OPENCODE_MODEL,
            opencode_env_key=settings.GATEHOUSE_OPENCODE_ENV_KEY,
        )
    if driver == "acp":
        common.update(acp_agents=dict(settings.GATEHOUSE_ACP_AGENTS or {}))
    return common
