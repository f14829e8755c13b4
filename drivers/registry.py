"""Drivers by name, imported lazily: a missing optional driver never breaks the others."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers.base import Descriptor, Driver, OptionsError, WorkspaceConfigError

# name -> "module:attribute" of the driver class; the module also exports DESCRIPTOR.
DRIVERS: dict[str, str] = {
    "scripted": "drivers.scripted:ScriptedDriver",
    "claude-code": "drivers.claude_code:ClaudeCodeDriver",
    "codex": "drivers.codex:CodexDriver",
    "acp": "drivers.acp:AcpDriver",
    "opencode": "drivers.opencode:OpenCodeDriver",
    # External: an agent running on a developer's machine, gated through its hooks.
    "claude-code-hook": "integrations.hooks.descriptor:ClaudeCodeHookDriver",
    "codex-hook": "integrations.hooks.codex_descriptor:CodexHookDriver",
}


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
    from runs.services import RunError

    try:
        return _module(name).DESCRIPTOR
    except UnknownDriver:
        known = ", ".join(names())
        raise RunError("unknown_driver", f"unknown driver {name!r} (known: {known})", field="driver") from None


@functools.cache
def external_names() -> frozenset[str]:
    """Drivers whose runs no worker executes (their descriptor says `external`)."""
    return frozenset(name for name in DRIVERS if getattr(_module(name).DESCRIPTOR, "external", False))


def create(name: str) -> Driver:
    module_name, attr = DRIVERS[name].split(":")
    return getattr(importlib.import_module(module_name), attr)()


def validate_options(
    name: str, *, scenario: Mapping[str, Any] | None, options: Mapping[str, Any] | None = None
) -> None:
    """Driver-specific options: the scripted driver needs a scenario, the others refuse one;
    `options` are checked by the driver's module (`validate_options(options, settings)`),
    and refused whole by a driver that takes none."""
    from runs.services import RunError

    if name == "scripted":
        from drivers.scripted import ScenarioError, validate_scenario

        if scenario is None:
            raise RunError("invalid_scenario", "the scripted driver needs a scenario", field="scenario")
        try:
            validate_scenario(scenario)
        except ScenarioError as exc:
            raise RunError("invalid_scenario", str(exc), field=exc.field) from None
    elif scenario is not None:
        raise RunError("invalid_scenario", f"the {name} driver takes no scenario", field="scenario")
    if options is None:
        return
    if not isinstance(options, Mapping):
        raise RunError("invalid_options", "options must be a JSON object", field="options")
    validator = getattr(_module(name), "validate_options", None)
    if validator is None:
        if options:
            raise RunError("invalid_options", f"the {name} driver takes no options", field="options")
        return
    from drivers.worker import driver_settings

    try:
        validator(options, driver_settings(name))
    except OptionsError as exc:
        raise RunError("invalid_options", str(exc), field=exc.field) from None


def check_workspace(name: str, *, workspace: str, options: Mapping[str, Any] | None) -> None:
    """Refuse a workspace whose agent configuration the driver's agent would load and
    Gatehouse cannot switch off (`workspace_agent_config`, naming the file)."""
    from runs.services import RunError

    checker = getattr(_module(name), "check_workspace", None)
    if checker is None:
        return
    from drivers.worker import driver_settings

    try:
        checker(Path(workspace), options or {}, driver_settings(name))
    except WorkspaceConfigError as exc:
        raise RunError("workspace_agent_config", str(exc), field="workspace", files=exc.files) from None
