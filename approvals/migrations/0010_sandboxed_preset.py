"""The "Sandboxed" preset (issue 28): the default of a fresh install.

Without the OS sandbox floor it decides exactly as "Standard review" (the hook gateway's
runs on a developer's machine, `unrestricted` runs). When the floor holds the run, its
`in_floor` section applies: what stays in the workspace runs unasked — commands the
policy does not know, code it cannot read (tests, builds, the workspace's own scripts) —
because the floor bounds what they can do; what leaves the floor asks (remote mutations by
their class, the network through the egress proxy: the package registries are listed),
protected paths stay denied and destructive commands too (the floor does not give back a
wiped workspace).

It becomes the default where "Standard review" is still the default as the preset made
it (or no policy is the default); an administrator's own choice of default is kept. The
document is frozen here, as a migration must be; the README and docs/sandbox.md describe it.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.db import migrations

from approvals.policy import policy_version

_BEFORE = importlib.import_module("approvals.migrations.0005_policy_presets")
STANDARD = next(p for p in _BEFORE.PRESETS if p["name"] == "Standard review")

SANDBOXED: dict[str, Any] = {
    "name": "Sandboxed",
    "description": "For runs inside Gatehouse's OS sandbox floor (the default): work that stays in the workspace "
    "runs unasked, programs the policy does not know and code it cannot read included; remote mutations and "
    "network hosts beyond the package registries are asked; destructive commands and protected paths are denied. "
    "Without a floor it decides as Standard review.",
    "document": {
        **STANDARD["document"],
        "network": {
            "allow": ["pypi.org:443", "files.pythonhosted.org:443", "registry.npmjs.org:443"],
            "default": "ask",
        },
        "in_floor": {"default": "allow", "code": "allow"},
    },
}


def create_sandboxed(apps: Any, schema_editor: Any) -> None:
    """Idempotent, as `create_presets` (the tests call it after a flush)."""
    Policy = apps.get_model("approvals", "Policy")
    PolicyVersion = apps.get_model("approvals", "PolicyVersion")
    if Policy.objects.filter(name=SANDBOXED["name"]).exists():
        return
    digest = policy_version(SANDBOXED["document"])
    current = Policy.objects.filter(is_default=True).first()
    takes_over = current is None or (
        current.name == STANDARD["name"] and current.version == policy_version(STANDARD["document"])
        and current.run_policy is None)
    if takes_over and current is not None:
        Policy.objects.filter(pk=current.pk).update(is_default=False)
    policy = Policy.objects.create(
        name=SANDBOXED["name"], description=SANDBOXED["description"], document=SANDBOXED["document"],
        run_policy=None, version=digest, is_default=takes_over,
    )
    PolicyVersion.objects.create(
        policy=policy, number=1, document=SANDBOXED["document"], run_policy=None, version=digest,
        comment="Preset, created by the migration.",
    )


class Migration(migrations.Migration):
    dependencies = [("approvals", "0009_secret_answer")]

    operations = [migrations.RunPython(create_sandboxed, migrations.RunPython.noop)]
