"""Drivers by name, imported lazily: a missing optional driver never breaks the others."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from typing import Any

from drivers.base import Descriptor, Driver

# name -> "module:attribute" of the driver class; the module also exports DESCRIPTOR.
DRIVERS: dict[str, str] = {
    "scripted": "drivers.scripted:ScriptedDriver",
    "claude-code": "drivers.claude_code:ClaudeCodeDriver",
    "codex": "drivers.codex:CodexDriver",
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


def validate_options(name: str, *, scenario: Mapping[str, Any] | None) -> None:
    """Driver-specific options: the scripted driver needs a scenario, the others refuse one."""
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
