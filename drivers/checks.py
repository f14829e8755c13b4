"""`manage.py check`: a warning where runs need the sandbox floor and it cannot be built."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning, register

from drivers import runfloor


@register()
def sandbox_floor_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    state, line = runfloor.status()
    if state != "unavailable":
        return []
    return [Warning(line, hint="apt-get install bubblewrap socat (make run and make test do it as root), "
                               "or set GATEHOUSE_SANDBOX=off to run without a floor (docs/sandbox.md).",
                    id="gatehouse.W001")]
