"""Friction scaled to risk in the presets (issue 32.2): under "Standard review" and
"Sandboxed", approving a destructive request takes two different people.

The run policy's `approvals.confirm` names a requirement per side-effect class, so a
preset says it by class: force pushes and `rm -r` are `destructive` (both presets deny
them; an ask rule that lifts one to a person gets two). Network escapes share
`remote-mutation` with every `git push`: a second reviewer there would stop a one-person
install from ever pushing, so the presets leave that class to the administrator.

A run policy that sets nothing but `confirm` leaves the other fields to the server's
default run policy (GATEHOUSE_DEFAULT_RUN_POLICY) and the built-ins, as before. Only a
preset whose run policy is still empty is changed, with a new version; an administrator's
own run policy is kept. Frozen here, as a migration must be.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Max

PRESETS_WITH_CONFIRM = ("Standard review", "Sandboxed")
RUN_POLICY: dict[str, Any] = {"approvals": {"confirm": {"destructive": "second-reviewer"}}}


def add_confirm(apps: Any, schema_editor: Any) -> None:
    """Idempotent (the tests call it after a flush, after the presets are made again)."""
    Policy = apps.get_model("approvals", "Policy")
    PolicyVersion = apps.get_model("approvals", "PolicyVersion")
    for policy in Policy.objects.filter(name__in=PRESETS_WITH_CONFIRM, run_policy__isnull=True):
        number = (PolicyVersion.objects.filter(policy=policy).aggregate(n=Max("number"))["n"] or 0) + 1
        Policy.objects.filter(pk=policy.pk).update(run_policy=RUN_POLICY)
        PolicyVersion.objects.create(
            policy=policy, number=number, document=policy.document, run_policy=RUN_POLICY, version=policy.version,
            comment="Preset: destructive requests take a second reviewer (issue 32).",
        )


class Migration(migrations.Migration):
    dependencies = [("approvals", "0011_approval_confirmation")]

    operations = [migrations.RunPython(add_confirm, migrations.RunPython.noop)]
