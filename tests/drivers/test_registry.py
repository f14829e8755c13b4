"""Drivers by name: the worker's in drivers/registry.py, the hook gateway's registered by the
integrations app when it is ready (drivers does not name a module of a layer above it)."""

from __future__ import annotations

import pytest

from drivers import registry
from integrations.apps import HOOK_DRIVERS


def test_the_hook_gateways_drivers_are_registered_by_the_integrations_app_as_external() -> None:
    assert set(HOOK_DRIVERS) <= set(registry.names())
    assert registry.external_names() == frozenset(HOOK_DRIVERS)
    assert not any(target.startswith("integrations.") for name, target in registry.DRIVERS.items()
                   if name not in HOOK_DRIVERS)


def test_a_name_another_driver_holds_is_refused_and_registering_again_changes_nothing() -> None:
    with pytest.raises(ValueError, match="already registered"):
        registry.register("codex", "integrations.hooks.codex_descriptor:CodexHookDriver")
    registry.register("codex-hook", HOOK_DRIVERS["codex-hook"])
    assert registry.DRIVERS["codex"] == "drivers.codex:CodexDriver"
    assert registry.external_names() == frozenset(HOOK_DRIVERS)
